"""Events read from the projection at a start (`load_events_snapshot`) come in the spelling
PostgreSQL prints jsonb in, which `jsonpack` spells exactly and packs with its own dictionary;
they come back as written. Against the real database."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import asyncpg

from inplace.core.projection.jsonpack import JSONB, jsonb_text, spelling
from inplace.core.projection.snapshot import load_events_snapshot
from inplace.core.projection.store import ProjectionStore
from inplace.core.settings import Settings
from inplace.core.store.migrations import migrate
from schemas import events as ev
from tests import factories

AT = datetime(2026, 11, 29, 6, 0, tzinfo=UTC)


async def test_projected_events_come_back_as_they_were_written(settings: Settings) -> None:
    events = [
        factories.kubelet_event(
            f"web-{i}",
            AT + timedelta(seconds=i),
            namespace="team-a",
            message=f"Started container app ({'ü' * i})",  # not only ASCII
            now=AT + timedelta(seconds=i),
        )
        for i in range(3)
    ]
    records = factories.fold_records(*(ev.KubeEventRecorded(event=e) for e in events))
    schema = settings.projection_schema
    conn = await asyncpg.connect(settings.postgres_dsn)
    try:
        await migrate(conn, schema)
        async with conn.transaction():
            await ProjectionStore(schema).apply(conn, factories.batch_of(records))
        texts = [r["object"] for r in await conn.fetch(f"SELECT object FROM {schema}.events")]
    finally:
        await conn.close()

    assert len(texts) == 3
    for text in texts:  # the dictionary's spelling is PostgreSQL's own
        assert jsonb_text(json.loads(text)) == text
        assert spelling(text.encode()) == JSONB

    found = await load_events_snapshot(settings.postgres_dsn, schema, ev.K8S_EVENTS)
    assert not isinstance(found, str), found
    assert len(found.events) == 3
    for event in events:
        key = ("team-a", event.metadata.name or "")
        held = json.loads(found.events.json(key))
        written = event.to_k8s()
        written["metadata"].pop("resourceVersion", None)  # the fold's, from the log
        assert held["metadata"].pop("resourceVersion").isdigit()
        assert held == written
        assert found.events.keys_of("team-a", involved=event.involved_object.name) == [key]
