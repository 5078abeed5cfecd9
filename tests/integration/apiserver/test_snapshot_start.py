"""The apiserver starts from the projection in PostgreSQL and reads only the log after it
(issue 16); without a projection it reads the whole log, and says so."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from inplace.core.bus.producer import EventProducer
from inplace.core.settings import Settings
from schemas import events as ev
from schemas.envelope import Envelope
from tests import factories
from tests.integration.conftest import (
    RoleProcess,
    end_offsets,
    project_log,
    projected_offsets,
)

pytestmark = pytest.mark.integration


def _consumed(metrics: str) -> int:
    found = re.findall(
        r'^inplace_events_consumed_total\{role="apiserver",[^}]*\} (\S+)$', metrics, re.M
    )
    return int(sum(float(v) for v in found))


async def _served(api: RoleProcess) -> tuple[dict[tuple[str, str], object], str]:
    async with api.client(base_url=api.url) as client:
        pods = (await client.get("/api/v1/pods")).json()["items"]
        metrics = (await client.get("/metrics")).text
    served = {
        (p["metadata"]["namespace"], p["metadata"]["name"]): p["spec"]["containers"][0]["resources"]
        for p in pods
    }
    return served, metrics


async def test_restart_reads_only_the_log_after_the_projection(
    settings: Settings, producer: EventProducer, projector: RoleProcess, tmp_path: Path
) -> None:
    history = list(factories.cluster_stream(pods=120, resizes_per_pod=4, nodes=6))
    await project_log(settings, producer, projector, history)
    snapshot_at = sum((await projected_offsets(settings)).values())
    tail = [
        Envelope.wrap(
            ev.PodCreated(
                namespace="team-a",
                name=f"late-{i}",
                uid=f"late-{i}",
                pod=factories.pod("team-a", f"late-{i}"),
            ),
            producer="apiserver",
        )
        for i in range(25)
    ]
    # An Event after the snapshot: read from the log once the projection's Events are in.
    late_event = factories.kube_event("team-a", "late-3")
    tail.append(Envelope.wrap(ev.KubeEventRecorded(event=late_event), producer="kubelet"))
    await producer.publish_many(tail)
    expected = factories.fold(*(e.payload for e in [*history, *tail]))
    want = {k: p.spec.containers[0].resources.to_k8s() for k, p in expected.pods.items()}

    api = RoleProcess("apiserver", settings, tmp_path / "apiserver.log", INPLACE_QUOTA_URL="")
    api.start()
    try:
        await api.ready()
        async with api.client(base_url=api.url) as client:
            # The Events come after the rest (their own snapshot, then their log): a LIST
            # waits for them, and finds each by the object it is about.
            assert len(expected.events) > 1, "the history records Events"
            for (namespace, name), event in expected.events.items():
                about = event.involved_object.name
                listed = await client.get(
                    f"/api/v1/namespaces/{namespace}/events",
                    params={"fieldSelector": f"involvedObject.name={about}"},
                )
                assert [e["metadata"]["name"] for e in listed.json()["items"]] == [name]
        assert "Events loaded from the projection" in api.log.read_text()
        ends = sum((await end_offsets(settings)).values())
        served, metrics = await _served(api)
        assert served == want, "the snapshot plus the tail is the fold of the whole log"
        assert _consumed(metrics) == ends - snapshot_at, "only the records after the snapshot"
        assert 'inplace_read_model_start_source{role="apiserver",source="snapshot"} 1.0' in metrics
        async with api.client(base_url=api.url) as client:
            assert (await client.get("/api/v1/namespaces/team-a/pods/web-0")).status_code == 404
            late = await client.get("/api/v1/namespaces/team-a/pods/late-3")
            assert late.status_code == 200
            # Writes after a snapshot start are read back (read-your-writes from its offsets).
            body = factories.pod("team-a", "after").to_k8s()
            body["metadata"].pop("uid")
            created = await client.post("/api/v1/namespaces/team-a/pods", json=body)
            assert created.status_code == 201, created.text
            r = await client.patch(
                "/api/v1/namespaces/team-a/pods/after/resize",
                json={
                    "spec": {
                        "containers": [
                            {
                                "name": "app",
                                "resources": {
                                    "requests": {"cpu": "150m"},
                                    "limits": {"cpu": "150m"},
                                },
                            }
                        ]
                    }
                },
                headers={"Content-Type": "application/strategic-merge-patch+json"},
            )
            assert r.status_code == 200, r.text
            got = await client.get("/api/v1/namespaces/team-a/pods/after")
            assert got.json()["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "150m"
    finally:
        api.stop()

    # Without a projection (another schema), the whole log is read, and the log says why.
    full = RoleProcess(
        "apiserver",
        settings,
        tmp_path / "full.log",
        INPLACE_QUOTA_URL="",
        INPLACE_PROJECTION_SCHEMA="nothing_here",
    )
    full.start()
    try:
        await full.ready()
        ends = sum((await end_offsets(settings)).values())
        served, metrics = await _served(full)
        assert set(served) == {*want, ("team-a", "after")}
        assert _consumed(metrics) == ends
        assert 'inplace_read_model_start_source{role="apiserver",source="log"} 1.0' in metrics
        assert "no snapshot (no projection schema 'nothing_here')" in full.log.read_text()
    finally:
        full.stop()
