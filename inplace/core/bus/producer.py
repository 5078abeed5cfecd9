"""Idempotent event producer: every write to the log goes through here."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial

from aiokafka import AIOKafkaProducer

from inplace.core.bus.auth import aiokafka_options
from inplace.core.bus.headers import TYPE_HEADER
from inplace.core.bus.partitioning import partitioner
from schemas.envelope import Envelope

# One partition's records queued while its last batch is in flight (idempotence: one per
# partition) go in one batch of at most this; once it is full, every further writer to
# that partition waits for the send (aiokafka's `wait_drain`, an asyncio.wait each) and
# all of them retry when it ends. At aiokafka's 16 KiB a kubelet's 1,000 node workers
# spent ~11% of its CPU in that wait under the default-shape load; a batch stays under
# the broker's 1 MiB message.max.bytes.
EVENT_BATCH_BYTES = 256 * 1024


@dataclass(frozen=True)
class Position:
    """Where an event landed: the log's coordinates, source of resourceVersion."""

    topic: str
    partition: int
    offset: int

    def __str__(self) -> str:
        return f"{self.topic}:{self.partition}:{self.offset}"


class EventProducer:
    """aiokafka producer with idempotence on and acks=all, so a retry never duplicates.

    `linger_ms` is 0: every writer waits for its write (read-your-writes), so a linger is
    pure latency on each hop of a resize (proposal, allocation, actuation: 5 ms each with the
    old default). Batching does not need it: aiokafka keeps one produce request in flight per
    broker, and what is queued meanwhile goes in the next request (`publish_many` and busy
    roles still send full batches)."""

    def __init__(
        self,
        bootstrap: str,
        *,
        client_id: str = "inplace",
        linger_ms: int = 0,
        topic_prefix: str = "",
        max_batch_size: int = EVENT_BATCH_BYTES,
    ) -> None:
        """`max_batch_size`: see EVENT_BATCH_BYTES; a bulk writer (telemetry) raises it."""
        self.topic_prefix = topic_prefix
        self._producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap,
            **aiokafka_options(),
            client_id=client_id,
            enable_idempotence=True,
            acks="all",
            linger_ms=linger_ms,
            max_request_size=1_048_576,
            max_batch_size=max_batch_size,
            partitioner=partitioner,
        )

    async def start(self) -> None:
        await self._producer.start()

    async def stop(self) -> None:
        await self._producer.stop()

    async def __aenter__(self) -> EventProducer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def topic(self, logical: str) -> str:
        return f"{self.topic_prefix}{logical}"

    async def publish(
        self, envelope: Envelope, *, headers: Mapping[str, str] | None = None
    ) -> Position:
        """Write one event and wait until the broker has it."""
        return await (await self.send(envelope, headers=headers))

    async def send(
        self,
        envelope: Envelope,
        *,
        headers: Mapping[str, str] | None = None,
        encoded: bytes | None = None,
    ) -> asyncio.Future[Position]:
        """Queue one event (batched by linger_ms); await the result for its position. `headers`:
        beside `type`, what lets readers skip the record unparsed (podheaders.py); `encoded`:
        the envelope's bytes, when the caller has them already."""
        extra = [(name, value.encode()) for name, value in (headers or {}).items()]
        future = await self._producer.send(
            self.topic(envelope.topic),
            value=envelope.encode() if encoded is None else encoded,
            key=envelope.key.encode(),
            headers=[(TYPE_HEADER, envelope.type.encode()), *extra],
        )
        # A plain future resolved by a callback: a Task per event (a coroutine and its loop
        # steps) cost more than the conversion it waited to do.
        position: asyncio.Future[Position] = asyncio.get_running_loop().create_future()
        future.add_done_callback(partial(_resolve, position))
        return position

    async def publish_many(self, envelopes: list[Envelope]) -> list[Position]:
        """Batch many events: queue all, then wait for all (MACHINE.md: far faster)."""
        futures = [await self.send(e) for e in envelopes]
        return list(await asyncio.gather(*futures))

    async def send_raw_many(self, topic: str, records: list[tuple[bytes, bytes]]) -> None:
        """Write raw (key, value) records: queue all, then wait for all (telemetry: the
        kubelet's usage samples, one per node, go in a few produce requests, not one each)."""
        futures = [await self._producer.send(topic, value=v, key=k) for k, v in records]
        await asyncio.gather(*futures)

    async def send_raw(
        self,
        topic: str,
        value: bytes | None,
        *,
        key: bytes | None = None,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> Position:
        """Write bytes as they are (dead letters, and tests that need malformed records)."""
        meta = await self._producer.send_and_wait(topic, value=value, key=key, headers=headers)
        return Position(meta.topic, meta.partition, meta.offset)


def _resolve(position: asyncio.Future[Position], sent: asyncio.Future) -> None:  # type: ignore[type-arg]
    """Carry aiokafka's outcome (RecordMetadata, an error or a cancel) over as a Position."""
    if position.done():  # its waiter gave up
        return
    if sent.cancelled():
        position.cancel()
    elif (error := sent.exception()) is not None:
        position.set_exception(error)
    else:
        meta = sent.result()
        position.set_result(Position(meta.topic, meta.partition, meta.offset))
