"""The projector reuses the objects its last batches wrote only while their rows still hold
them (`inplace/core/projection/warm.py`), against the real database."""

from __future__ import annotations

import json

import asyncpg

from inplace.core.bus.consumer import Record
from inplace.core.projection.store import ProjectionStore
from inplace.core.settings import Settings
from inplace.core.store.migrations import migrate
from schemas import events as ev
from tests import factories


async def test_a_remembered_pod_gives_way_to_the_row_another_member_wrote(
    settings: Settings,
) -> None:
    pod = factories.pod("ns", "web")
    payloads = [
        ev.PodCreated(namespace="ns", name="web", uid=pod.metadata.uid or "", pod=pod),
        *factories.resize_flow("ns", "web", "n1", "2", "1Gi"),
    ]
    records = factories.fold_records(*payloads)
    expected = factories.fold(*payloads).pods[("ns", "web")].to_k8s()
    schema = settings.projection_schema
    conn = await asyncpg.connect(settings.postgres_dsn)
    try:
        await migrate(conn, schema)
        a, b = ProjectionStore(schema), ProjectionStore(schema)  # two members of one group

        async def apply(store: ProjectionStore, part: list[Record]) -> None:
            async with conn.transaction():
                await store.apply(conn, factories.batch_of(part))

        await apply(a, records[0:2])  # a remembers the pod as created and proposed
        await apply(b, records[2:4])  # a rebalance: b folds the allocation and InProgress
        await apply(a, records[4:5])  # back to a: its pod is older than the row
        await apply(a, records[5:6])  # and a's own last write, reused
        row = await conn.fetchval(f"SELECT object FROM {schema}.pods")
    finally:
        await conn.close()
    assert json.loads(row) == expected
    assert json.loads(row)["status"]["containerStatuses"][0]["allocatedResources"]["cpu"] == "2"
