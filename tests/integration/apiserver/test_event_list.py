"""Event LISTs as kubectl asks for them: one pod's Events by `involvedObject.name` (what `kubectl
describe pod` lists), in a namespace or across all, and pages of every Event in key order."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from inplace.core.settings import Settings
from tests.factories import event_manifest
from tests.integration.conftest import RoleProcess, kubectl

pytestmark = pytest.mark.integration

# (namespace, Event name, the pod it is about)
EVENTS = [
    ("default", "web-0.1", "web-0"),
    ("default", "web-0.2", "web-0"),
    ("default", "web-1.1", "web-1"),
    ("default", "renamed.1", "web-0"),  # its name does not say which pod it is about
    ("other", "web-0.1", "web-0"),
    ("other", "db-0.1", "db-0"),
]


async def test_events_listed_by_involved_object_and_in_pages(
    settings: Settings, tmp_path: Path
) -> None:
    proc = RoleProcess("apiserver", settings, tmp_path / "apiserver.log", INPLACE_QUOTA_URL="")
    proc.start()
    await proc.ready()
    try:
        now = datetime.now(UTC)
        async with proc.client() as http:
            made = await http.post(
                f"{proc.url}/api/v1/namespaces", json={"metadata": {"name": "other"}}
            )
            assert made.status_code == 201, made.text
            for namespace, name, pod in EVENTS:
                created = await http.post(
                    f"{proc.url}/api/v1/namespaces/{namespace}/events",
                    json=event_manifest(name, now, namespace, involved=pod),
                )
                assert created.status_code == 201, created.text

            async def names(path: str, **params: str) -> list[str]:
                listed = await http.get(f"{proc.url}{path}", params=params)
                assert listed.status_code == 200, listed.text
                return [
                    f"{e['metadata']['namespace']}/{e['metadata']['name']}"
                    for e in listed.json()["items"]
                ]

            about_web0 = "involvedObject.name=web-0"
            in_default = await names("/api/v1/namespaces/default/events", fieldSelector=about_web0)
            assert in_default == ["default/renamed.1", "default/web-0.1", "default/web-0.2"]
            everywhere = await names("/api/v1/events", fieldSelector=about_web0)
            assert everywhere == [*in_default, "other/web-0.1"]
            # The other terms still hold: kubectl describe sends the namespace and uid too.
            both = f"{about_web0},involvedObject.namespace=other"
            assert await names("/api/v1/events", fieldSelector=both) == ["other/web-0.1"]
            assert await names("/api/v1/events", fieldSelector="involvedObject.name=none") == []
            not_web0 = await names("/api/v1/events", fieldSelector="involvedObject.name!=web-0")
            assert not_web0 == ["default/web-1.1", "other/db-0.1"]

            every = sorted(f"{ns}/{name}" for ns, name, _ in EVENTS)
            paged, token = [], None
            while True:
                params = {"limit": "2", **({"continue": token} if token else {})}
                page = await http.get(f"{proc.url}/api/v1/events", params=params)
                body = page.json()
                paged += [
                    f"{e['metadata']['namespace']}/{e['metadata']['name']}" for e in body["items"]
                ]
                token = body["metadata"].get("continue")
                if not token:
                    break
            assert paged == every
        paged_out = await kubectl(proc, "get", "events", "-n", "other", "--chunk-size", "1")
        rows = paged_out.stdout.splitlines()[1:]  # LAST SEEN  TYPE  REASON  OBJECT  MESSAGE
        assert sorted(row.split()[3] for row in rows) == ["pod/db-0", "pod/web-0"]
        listed = await kubectl(
            proc, "get", "events", "-A", "--field-selector", about_web0, "-o", "name"
        )
        assert listed.stdout.split() == [
            "event/renamed.1",
            "event/web-0.1",
            "event/web-0.2",
            "event/web-0.1",
        ]
    finally:
        proc.stop()
