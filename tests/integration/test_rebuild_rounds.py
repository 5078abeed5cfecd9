"""`rebuild --replace` while the live projection moves: the catch-up round rewrites objects the
first round already wrote (updates and deletions) and the swapped-in schema equals live."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest
from aiokafka import TopicPartition

from inplace.core.bus.consumer import LogReader
from inplace.core.bus.producer import EventProducer
from inplace.core.projection import replay
from inplace.core.projection.store import ProjectionStore
from inplace.core.settings import Settings
from inplace.core.store.migrations import migrate
from tests import factories


async def _project(
    settings: Settings, start: dict[TopicPartition, int], end: dict[TopicPartition, int]
) -> None:
    """The live projector's own path (`ProjectionStore.apply`), in process, up to `end`."""
    store = ProjectionStore(settings.projection_schema)
    conn = await asyncpg.connect(settings.postgres_dsn)
    try:
        await migrate(conn, settings.projection_schema)
        async with LogReader(settings.kafka_bootstrap) as reader:
            async for batch in reader.read(start, end):
                async with conn.transaction():
                    await store.apply(conn, batch)
    finally:
        await conn.close()


async def test_catch_up_round_rewrites_objects_and_the_swap_equals_live(
    settings: Settings, producer: EventProducer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every 10th pod is deleted at the end of the stream: after the cut, so the catch-up
    # round deletes pods (and their containers) the first round wrote.
    await producer.publish_many(list(factories.cluster_stream(pods=60, resizes_per_pod=3)))
    async with LogReader(settings.kafka_bootstrap) as reader:
        end = await reader.end_offsets(await reader.partitions(settings.event_topics()))
    cut = {tp: offset * 2 // 3 for tp, offset in end.items()}
    await _project(settings, {}, cut)

    real_swap = replay._swap
    swaps: list[bool] = []

    async def swap_after_live_moved(*args: Any) -> bool:
        if not swaps:  # the live projector catches up between the first round and the swap
            await _project(settings, cut, end)
        swaps.append(await real_swap(*args))
        return swaps[-1]

    monkeypatch.setattr(replay, "_swap", swap_after_live_moved)
    report = await replay.rebuild(
        settings.postgres_dsn,
        settings.kafka_bootstrap,
        live_schema=settings.projection_schema,
        replace=True,
        topic_prefix=settings.topic_prefix,
    )
    assert swaps == [False, True]
    assert report.replaced and report.offsets == end
    assert report.events == sum(end.values())
    assert report.rebuilt_checksum == report.live_checksum

    conn = await asyncpg.connect(settings.postgres_dsn)
    try:
        store = ProjectionStore(settings.projection_schema)
        assert await store.checksum(conn) == report.live_checksum
        assert await store.offsets(conn) == {tp: o for tp, o in end.items() if o}
        schema = settings.projection_schema
        pods = await conn.fetchval(f"SELECT count(*) FROM {schema}.pods")
        assert pods == 54  # 60 created, 6 deleted
        assert await conn.fetchval(f"SELECT count(*) FROM {schema}.containers") == pods
    finally:
        await conn.close()
