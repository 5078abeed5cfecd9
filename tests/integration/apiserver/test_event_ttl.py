"""Events expire after the apiserver's event TTL (kube-apiserver's --event-ttl), through a
KubeEventDeleted on the log; one written since stays."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from inplace.core.settings import Settings
from schemas.events import K8S_EVENTS
from tests.factories import event_manifest
from tests.integration.conftest import RoleProcess, read_log, until

pytestmark = pytest.mark.integration


async def test_events_expire_after_the_ttl(settings: Settings, tmp_path: Path) -> None:
    proc = RoleProcess(
        "apiserver",
        settings,
        tmp_path / "apiserver.log",
        INPLACE_QUOTA_URL="",
        INPLACE_APISERVER_EVENT_TTL_S="60",
        INPLACE_APISERVER_EVENT_SWEEP_S="0.2",
    )
    proc.start()
    await proc.ready()
    try:
        now = datetime.now(UTC)
        versions = {}
        async with proc.client() as http:
            for name, last in (("old.1", now - timedelta(minutes=5)), ("new.1", now)):
                created = await http.post(
                    f"{proc.url}/api/v1/namespaces/default/events", json=event_manifest(name, last)
                )
                assert created.status_code == 201, created.text
                versions[name] = created.json()["metadata"]["resourceVersion"]

            async def names() -> list[str]:
                async with proc.client() as http:
                    listed = await http.get(f"{proc.url}/api/v1/namespaces/default/events")
                return [e["metadata"]["name"] for e in listed.json()["items"]]

            await until(names, lambda got: got == ["new.1"], "the old Event expired", 30)
    finally:
        proc.stop()
    deleted = [e for e in await read_log(settings, K8S_EVENTS) if e.type == "KubeEventDeleted"]
    # The expiry names the version it expired (a replica's late one leaves a newer Event).
    assert [(d.payload.event.metadata.name, d.payload.expires_version) for d in deleted] == [
        ("old.1", versions["old.1"])
    ]
    assert "expired 1 Events" in proc.log.read_text()
