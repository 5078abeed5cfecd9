"""The projector against the real broker and database: exactly-once under SIGKILL, rebuild
equals live, malformed records dead-lettered."""

from __future__ import annotations

import asyncio
import json
import logging
import random

import asyncpg
import pytest

from inplace.core.bus.consumer import LogReader
from inplace.core.bus.deadletters import read_dead_letters
from inplace.core.bus.producer import EventProducer
from inplace.core.projection.podstore import pod_json
from inplace.core.projection.replay import rebuild
from inplace.core.projection.state import ClusterState
from inplace.core.projection.store import ProjectionStore
from inplace.core.settings import Settings
from inplace.core.store.migrations import migrate
from schemas import events as ev
from schemas.demand import demand_json, priced_row
from schemas.envelope import Envelope
from schemas.podview import RESIZE_OPEN_SQL, resize_open
from tests import factories
from tests.integration.conftest import RoleProcess, projected_offsets, wait_caught_up


async def _fold_log(settings: Settings) -> ClusterState:
    """The expected state: the whole log folded in memory, independent of Postgres."""
    state = ClusterState()
    async with LogReader(settings.kafka_bootstrap) as reader:
        tps = await reader.partitions(settings.event_topics())
        async for batch in reader.read({}, await reader.end_offsets(tps)):
            for record in batch.records:
                state.apply(record)
    return state


async def _allocations(conn: asyncpg.Connection, schema: str) -> dict[tuple[str, str], object]:
    rows = await conn.fetch(f"SELECT namespace, name, payload FROM {schema}.allocations")
    return {(r["namespace"], r["name"]): json.loads(r["payload"]) for r in rows}


_JSON_COLUMNS = [
    ("pods", "object"),
    ("pods", "demand"),
    ("allocations", "payload"),
    ("nodes", "object"),
]


async def _column_types(conn: asyncpg.Connection, schema: str) -> dict[tuple[str, str], str]:
    rows = await conn.fetch(
        "SELECT table_name, column_name, data_type FROM information_schema.columns"
        " WHERE table_schema = $1",
        schema,
    )
    types = {(r["table_name"], r["column_name"]): r["data_type"] for r in rows}
    return {c: types[c] for c in _JSON_COLUMNS}


async def _progress(conn: asyncpg.Connection, schema: str) -> dict[tuple[str, str], tuple]:
    rows = await conn.fetch(
        f"SELECT namespace, name, generation, observed_generation, resize_status FROM {schema}.pods"
    )
    return {(r["namespace"], r["name"]): tuple(r.values())[2:] for r in rows}


async def _demands(conn: asyncpg.Connection, schema: str) -> dict[tuple[str, str], object]:
    rows = await conn.fetch(
        f"SELECT namespace, name, demand FROM {schema}.pods WHERE demand IS NOT NULL"
    )
    return {(r["namespace"], r["name"]): priced_row(r["demand"]) for r in rows}


async def test_sigkill_mid_stream_applies_every_event_exactly_once(
    settings: Settings, producer: EventProducer, projector: RoleProcess
) -> None:
    stream = list(factories.cluster_stream(pods=400, resizes_per_pod=5, nodes=20))
    assert len(stream) >= 10_000
    pod_events = sum(isinstance(e.payload, ev.PodEvent) for e in stream)

    projector.start()
    # Produce in slices while the projector runs, and SIGKILL it at random moments.
    rng = random.Random(11)
    kills = 0
    for start in range(0, len(stream), 2500):
        await producer.publish_many(stream[start : start + 2500])
        await asyncio.sleep(rng.uniform(0.2, 1.5))
        projector.kill9()
        kills += 1
        progressed = await projected_offsets(settings)
        projector.start()
    assert kills >= 4
    assert sum(progressed.values()) < len(stream), "a kill should land before the end"

    await wait_caught_up(settings, projector, within=180)
    conn = await asyncpg.connect(settings.postgres_dsn)
    try:
        schema = settings.projection_schema
        history = await conn.fetchval(f"SELECT count(*) FROM {schema}.pod_history")
        distinct = await conn.fetchval(f"SELECT count(DISTINCT event_id) FROM {schema}.pod_history")
        assert await conn.fetchval(f"SELECT count(*) FROM {schema}.dead_letters") == 0
        assert history == distinct == pod_events, "each pod event recorded exactly once"

        expected = await _fold_log(settings)
        rows = await conn.fetch(f"SELECT namespace, name, object FROM {schema}.pods")
        live = {(r["namespace"], r["name"]): json.loads(r["object"]) for r in rows}
        assert live == {k: p.to_k8s() for k, p in expected.pods.items()}
        # json, not jsonb (0006): each row is the text the projector wrote, which is the fold's
        # own serialization, a projector restarted mid-stream included.
        texts = {(r["namespace"], r["name"]): r["object"] for r in rows}
        assert texts == {k: pod_json(p).decode() for k, p in expected.pods.items()}
        nodes = await conn.fetch(f"SELECT name, object FROM {schema}.nodes")
        assert {r["name"]: json.loads(r["object"]) for r in nodes} == {
            k: n.to_k8s() for k, n in expected.nodes.items()
        }
        # Deleted pods are gone with their containers; every other pod has its container row.
        assert ("team-a", "web-0") not in live
        containers = await conn.fetchval(f"SELECT count(*) FROM {schema}.containers")
        assert containers == len(live)
        # The kubelet's checkpoint: each live pod's latest Allocated, requests and limits.
        checkpoint = await _allocations(conn, schema)
        assert checkpoint == {k: json.loads(a) for k, a in (expected.allocations or {}).items()}
        assert len(checkpoint) == len(live)
        # A projection made before the table existed gets the same rows from its history.
        await conn.execute(f"DROP TABLE {schema}.allocations")
        await conn.execute(f"DELETE FROM {schema}.schema_migrations WHERE version = 3")
        assert await migrate(conn, schema) == [3]
        assert await _allocations(conn, schema) == checkpoint
        # Each pod's demand on its node as the scheduler prices it (what a scheduler starts
        # from); a projection made before the column gets it filled in by the projector.
        demands = await _demands(conn, schema)
        assert demands == {k: priced_row(demand_json(p)) for k, p in expected.pods.items()}
        await conn.execute(f"ALTER TABLE {schema}.pods DROP COLUMN demand")
        await conn.execute(f"DELETE FROM {schema}.schema_migrations WHERE version = 4")
        assert await migrate(conn, schema) == [4]
        assert await _demands(conn, schema) == {}
        store = ProjectionStore(schema)
        assert await store.fill_demands(conn, chunk=7) == len(live)
        assert await _demands(conn, schema) == demands
        assert await store.fill_demands(conn) == 0
        # How far each pod's resize has come (what a kubelet starts from); a projection made
        # before the columns gets them from its objects.
        progress = await _progress(conn, schema)
        assert progress == {
            k: (p.metadata.generation, p.status.observed_generation, p.status.resize)
            for k, p in expected.pods.items()
        }
        assert any(generation and generation > 1 for generation, _, _ in progress.values())
        # The kubelet's rule over the rows (RESIZE_OPEN_SQL) is its rule over the objects.
        cases = [
            (generation, observed, resize)
            for generation in (None, 1, 2, 3)
            for observed in (None, 1, 2, 3)
            for resize in (None, "Proposed", "InProgress")
        ]
        opened = await conn.fetch(
            f"SELECT {RESIZE_OPEN_SQL} AS open"
            " FROM unnest($1::bigint[], $2::bigint[], $3::text[]) WITH ORDINALITY"
            " AS t(generation, observed_generation, resize_status, n) ORDER BY n",
            *(list(column) for column in zip(*cases, strict=True)),
        )
        assert [r["open"] for r in opened] == [resize_open(*case) for case in cases]
        assert any(resize_open(*case) for case in cases) and not all(resize_open(*c) for c in cases)
        await conn.execute(
            f"ALTER TABLE {schema}.pods DROP COLUMN generation, DROP COLUMN observed_generation"
        )
        await conn.execute(f"DELETE FROM {schema}.schema_migrations WHERE version = 7")
        assert await migrate(conn, schema) == [7]
        assert await _progress(conn, schema) == progress
        live_checksum = await ProjectionStore(schema).checksum(conn)
        # A projection from before 0006 (its object columns jsonb) checksums the same, and so
        # it does once 0006 has made them json, each row kept as jsonb printed it.
        for table, column in _JSON_COLUMNS:
            await conn.execute(
                f"ALTER TABLE {schema}.{table} ALTER COLUMN {column} TYPE jsonb"
                f" USING {column}::jsonb"
            )
        assert await ProjectionStore(schema).checksum(conn) == live_checksum
        await conn.execute(f"DELETE FROM {schema}.schema_migrations WHERE version = 6")
        assert await migrate(conn, schema) == [6]
        assert await _column_types(conn, schema) == {c: "json" for c in _JSON_COLUMNS}
        assert await ProjectionStore(schema).checksum(conn) == live_checksum
    finally:
        await conn.close()

    report = await rebuild(
        settings.postgres_dsn,
        settings.kafka_bootstrap,
        live_schema=settings.projection_schema,
        shadow_schema="projection_rebuild",
        topic_prefix=settings.topic_prefix,
    )
    assert report.events == len(stream)
    assert report.live_checksum == live_checksum
    assert report.rebuilt_checksum == live_checksum


async def test_malformed_records_are_dead_lettered_and_the_projector_goes_on(
    settings: Settings, producer: EventProducer, projector: RoleProcess
) -> None:
    good = Envelope.wrap(
        ev.PodCreated(
            namespace="default", name="ok", uid="uid-default-ok", pod=factories.pod("default", "ok")
        ),
        producer="test",
    )
    bad_quantity = good.encode().replace(b'"100m"', b'"1.2.3"')
    unknown_type = json.dumps({**json.loads(good.encode()), "type": "PodTeleported"}).encode()
    cases = [
        (settings.topic(ev.PODS), b"not json at all"),
        (settings.topic(ev.PODS), bad_quantity),
        (settings.topic(ev.NODES), unknown_type),
        (settings.topic(ev.POLICY), b'{"type": "NamespaceCreated"}'),
        (settings.topic(ev.K8S_EVENTS), b"\x00\xff\xfe"),
    ]
    for topic, value in cases:
        await producer.send_raw(topic, value, key=b"default/ok")
    projector.start()
    await producer.publish(good)
    await wait_caught_up(settings, projector)

    assert await projector.healthz() == 200
    parked = await read_dead_letters(settings.kafka_bootstrap, 50, settings.topic_prefix)
    assert sorted(p.value for p in parked) == sorted(v for _, v in cases)
    by_value = {p.value: p for p in parked}
    assert "validation error" in by_value[bad_quantity].reason
    assert "1.2.3" in by_value[bad_quantity].reason or "quantit" in by_value[bad_quantity].reason
    assert "PodTeleported" in by_value[unknown_type].reason
    assert all(p.consumer == "projector" for p in parked)

    conn = await asyncpg.connect(settings.postgres_dsn)
    try:
        schema = settings.projection_schema
        assert await conn.fetchval(f"SELECT count(*) FROM {schema}.dead_letters") == len(cases)
        row = await conn.fetchrow(f"SELECT phase FROM {schema}.pods WHERE name = 'ok'")
        assert row is not None and row["phase"] == "Pending"
    finally:
        await conn.close()


async def test_filling_demands_leaves_a_row_this_build_cannot_decode_and_fills_the_rest(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    pods = [factories.pod("ns", name) for name in ("a", "b", "c")]
    records = factories.fold_records(
        *(
            ev.PodCreated(
                namespace="ns", name=p.metadata.name or "", uid=p.metadata.uid or "", pod=p
            )
            for p in pods
        )
    )
    schema = settings.projection_schema
    store = ProjectionStore(schema)
    conn = await asyncpg.connect(settings.postgres_dsn)
    try:
        await migrate(conn, schema)
        async with conn.transaction():
            await store.apply(conn, factories.batch_of(records))
        priced = await _demands(conn, schema)
        assert set(priced) == {("ns", "a"), ("ns", "b"), ("ns", "c")}
        # Rows from before the column, one of which no longer decodes (a field's type changed).
        await conn.execute(f"UPDATE {schema}.pods SET demand = NULL")
        await conn.execute(
            f"UPDATE {schema}.pods SET object = $1 WHERE name = 'b'",
            json.dumps({"metadata": {"name": "b"}, "spec": {"containers": 7}}),
        )
        with caplog.at_level(logging.WARNING, logger="inplace.core.projection.store"):
            assert await store.fill_demands(conn, chunk=2) == 2
        assert await _demands(conn, schema) == {k: priced[k] for k in (("ns", "a"), ("ns", "c"))}
        assert await conn.fetchval(f"SELECT demand FROM {schema}.pods WHERE name = 'b'") is None
    finally:
        await conn.close()
    assert "pods row ns/b does not decode (spec.containers: " in caplog.text
