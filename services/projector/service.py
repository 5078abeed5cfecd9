"""The projector role: consumes every event topic into Postgres projections, exactly once."""

from __future__ import annotations

import logging

import asyncpg
from aiokafka import TopicPartition

from inplace.core.bus.consumer import Batch, DeadLetters, EventConsumer
from inplace.core.bus.producer import EventProducer
from inplace.core.observability.metrics import BATCH_SECONDS
from inplace.core.projection.store import ProjectionStore, StaleBatch
from inplace.core.service import RoleServer
from inplace.core.settings import Settings
from inplace.core.store.database import create_pool
from inplace.core.store.migrations import migrate

ROLE = "projector"
# Nothing waits on Postgres to answer a user (the apiserver answers from its read model), so
# the projector trades up to this much lag for fuller batches: one transaction per batch was
# its main cost at low rates (5 ms of CPU per resize at 50 resizes/s, 0.9 ms at 300/s).
LINGER_MS = 100
log = logging.getLogger(__name__)


class Projector:
    def __init__(self, settings: Settings, *, consumer_name: str = ROLE) -> None:
        self.settings = settings
        self.store = ProjectionStore(settings.projection_schema, consumer_name)
        self.pool: asyncpg.Pool | None = None
        self.ready = False

    async def _positions(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        assert self.pool is not None
        async with self.pool.acquire() as conn:
            stored = await self.store.offsets(conn)
        return {tp: stored.get(tp, 0) for tp in tps}

    async def run(self) -> None:
        self.pool = await create_pool(self.settings.postgres_dsn, max_size=4)
        async with self.pool.acquire() as conn:
            await migrate(conn, self.settings.projection_schema)
            if filled := await self.store.fill_demands(conn):
                log.info("filled in the demand of %d pods projected before it was kept", filled)
        producer = EventProducer(
            self.settings.kafka_bootstrap,
            client_id=ROLE,
            topic_prefix=self.settings.topic_prefix,
        )
        await producer.start()
        consumer = EventConsumer(
            self.settings.kafka_bootstrap,
            role=ROLE,
            topics=self.settings.event_topics(),
            group_id=f"{self.settings.topic_prefix}{ROLE}-{self.store.schema}",
            seek=self._positions,
            dead_letters=DeadLetters(producer, ROLE),
            linger_ms=LINGER_MS,
        )
        await consumer.start()
        self.ready = True
        try:
            async for batch in consumer.batches():
                if batch:
                    await self.apply(batch, consumer)
        finally:
            self.ready = False
            await consumer.stop()
            await producer.stop()
            await self.pool.close()

    async def apply(self, batch: Batch, consumer: EventConsumer) -> None:
        assert self.pool is not None
        with BATCH_SECONDS.labels(ROLE).time():
            try:
                async with self.pool.acquire() as conn, conn.transaction():
                    await self.store.apply(conn, batch)
            except StaleBatch as stale:
                # Applied before (a restart or rebalance re-delivered it): skip to the stored
                # position instead of applying it twice.
                log.info("skipping an already applied batch: %s", stale)
                consumer.seek(await self._positions(list(batch.next_offsets)))


async def run(settings: Settings, *, host: str, port: int) -> None:
    projector = Projector(settings)
    server = RoleServer(ROLE, settings, host=host, port=port, ready=lambda: projector.ready)
    await server.run({"project": projector.run})
