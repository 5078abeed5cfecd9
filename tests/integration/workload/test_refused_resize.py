"""The apiserver refuses a pod's resize (422: the template change would alter the pods' QoS
class; 403: a ResourceQuota would be exceeded): the controller does not crash-loop; the
revision fails like an Infeasible one, with the pod and the apiserver's message in the
condition and a Warning event; Report stops, Rollback returns; a restart does not send the
refused request again."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from inplace.core.settings import Settings
from schemas import events as ev
from tests.integration.conftest import RoleProcess, read_log
from tests.integration.workload.conftest import (
    Cluster,
    clone_set,
    cpu_of,
    cpu_patch,
    eventually,
    running,
)


@pytest.fixture
async def apiserver(settings: Settings, tmp_path: Path) -> AsyncIterator[RoleProcess]:
    """The cluster's apiserver with ResourceQuota admission (the quota process) on."""
    quota = RoleProcess("quota", settings, tmp_path / "quota.log")
    quota.start()
    await quota.ready()
    proc = RoleProcess(
        "apiserver", settings, tmp_path / "apiserver.log", INPLACE_QUOTA_URL=quota.url
    )
    proc.start()
    try:
        await proc.ready()
        yield proc
    finally:
        proc.stop()
        quota.stop()


FAILED = "VerticalUpdateFailed"
QOS_MESSAGE = "Pod QOS Class may not change as a result of resizing"


def burstable_patch() -> dict[str, Any]:
    """Requests below limits: Guaranteed pods would become Burstable, which resize refuses."""
    container = {
        "name": "app",
        "image": "nginx:1.27",
        "resources": {
            "requests": {"cpu": "150m", "memory": "64Mi"},
            "limits": {"cpu": "300m", "memory": "64Mi"},
        },
    }
    return {"spec": {"template": {"spec": {"containers": [container]}}}}


def condition(cs: dict[str, Any]) -> dict[str, Any] | None:
    return next(
        (c for c in cs.get("status", {}).get("conditions") or [] if c["type"] == FAILED), None
    )


@pytest.mark.parametrize(
    ("strategy", "reason"), [("Report", "Infeasible"), ("Rollback", "RolledBack")]
)
async def test_a_refused_resize_fails_the_revision_without_crashing(
    cluster: Cluster, strategy: str, reason: str
) -> None:
    await cluster.create(clone_set("api", 2, "100m", maxConcurrentResizes=1, onInfeasible=strategy))

    async def up() -> list[Any] | None:
        pods = await cluster.pods("api")
        return pods if running(pods, 2) else None

    pods = await eventually(up)
    await cluster.patch("api", burstable_patch())

    async def failed() -> dict[str, Any] | None:
        cs = await cluster.get("api")
        c = condition(cs)
        return cs if c and c["status"] == "True" and c["reason"] == reason else None

    cs = await eventually(failed)
    events = await cluster.call(cluster.core.list_namespaced_event, "default")
    warnings = [e for e in events.items if e.type == "Warning" and QOS_MESSAGE in (e.message or "")]
    assert warnings and any(p.metadata.name in warnings[0].message for p in pods)
    assert cs["status"]["failedRevision"] == cs["status"]["updateRevision"]
    assert cluster.controller.alive() and await cluster.controller.healthz() == 200
    now = await cluster.pods("api")
    assert {p.metadata.uid for p in now} == {p.metadata.uid for p in pods}
    assert all(cpu_of(p) == "100m" for p in now), "nothing was resized"

    # A restart reads the failure from the log: no new request for the refused revision.
    before = len(await read_log(cluster.settings, ev.PODS))
    cluster.controller.kill9()
    cluster.controller.start()
    await cluster.controller.ready()
    await eventually(failed)
    log = await read_log(cluster.settings, ev.PODS)
    assert not any(isinstance(e.payload, ev.ResizeProposed) for e in log), "never proposed"
    assert len(log) >= before


async def test_a_resize_over_quota_403_fails_the_revision_without_crashing(
    cluster: Cluster,
) -> None:
    quota = {"metadata": {"name": "cpu-cap"}, "spec": {"hard": {"requests.cpu": "250m"}}}
    await cluster.call(cluster.core.create_namespaced_resource_quota, "default", quota)
    await cluster.create(clone_set("capped", 2, "100m", maxConcurrentResizes=1))

    async def up() -> list[Any] | None:
        pods = await cluster.pods("capped")
        return pods if running(pods, 2) else None

    pods = await eventually(up)
    await cluster.patch("capped", cpu_patch("200m"))  # 200m + 100m > 250m: the first is refused

    async def failed() -> dict[str, Any] | None:
        cs = await cluster.get("capped")
        c = condition(cs)
        return cs if c and c["status"] == "True" and c["reason"] == "Infeasible" else None

    cs = await eventually(failed)
    assert "exceeded quota: cpu-cap" in condition(cs)["message"]  # type: ignore[index]
    events = await cluster.call(cluster.core.list_namespaced_event, "default")
    warnings = [
        e for e in events.items if e.type == "Warning" and "exceeded quota" in (e.message or "")
    ]
    assert warnings and any(p.metadata.name in warnings[0].message for p in pods)
    assert cluster.controller.alive() and await cluster.controller.healthz() == 200
    now = await cluster.pods("capped")
    assert {p.metadata.uid for p in now} == {p.metadata.uid for p in pods}
    assert all(cpu_of(p) == "100m" for p in now), "nothing was resized"


async def test_a_403_mid_rollout_rolls_back_the_pods_already_resized(cluster: Cluster) -> None:
    """The quota has room for one pod's resize, not two: the first pod is resized, the second
    is refused (403), and Rollback returns the first to the old resources, in place."""
    quota = {"metadata": {"name": "cpu-cap"}, "spec": {"hard": {"requests.cpu": "450m"}}}
    await cluster.call(cluster.core.create_namespaced_resource_quota, "default", quota)
    await cluster.create(
        clone_set("capped", 3, "100m", maxConcurrentResizes=1, onInfeasible="Rollback")
    )

    async def up() -> list[Any] | None:
        pods = await cluster.pods("capped")
        return pods if running(pods, 3) else None

    pods = await eventually(up)
    await cluster.patch("capped", cpu_patch("200m"))  # 300m + 100m fits, + 100m more does not

    async def rolled_back() -> dict[str, Any] | None:
        cs = await cluster.get("capped")
        c = condition(cs)
        return cs if c and c["status"] == "True" and c["reason"] == "RolledBack" else None

    cs = await eventually(rolled_back)
    assert "exceeded quota: cpu-cap" in condition(cs)["message"]  # type: ignore[index]

    async def back() -> list[Any] | None:
        now = await cluster.pods("capped")
        done = all(
            cpu_of(p) == "100m"
            and p.status.resize is None
            and str(p.status.container_statuses[0].resources.requests["cpu"]) == "100m"
            for p in now
        )
        return now if done else None

    now = await eventually(back)
    assert {p.metadata.uid for p in now} == {p.metadata.uid for p in pods}, "in place"
    assert all(
        p.metadata.labels["controller-revision-hash"] == cs["status"]["currentRevision"]
        for p in now
    )
    log = await read_log(cluster.settings, ev.PODS)
    proposals = [
        (e.payload.name, str(e.payload.containers[0].resources.requests["cpu"]))
        for e in log
        if isinstance(e.payload, ev.ResizeProposed)
    ]
    first = pods[0].metadata.name
    assert proposals == [(first, "200m"), (first, "100m")], "resized, then rolled back"
    refusals = [e.payload for e in log if isinstance(e.payload, ev.ResizeRefused)]
    assert [(r.name, r.code) for r in refusals] == [(pods[1].metadata.name, 403)]
    events = await cluster.call(cluster.core.list_namespaced_event, "default")
    assert {"RollingBack", "RolledBack"} <= {e.reason for e in events.items}
    assert cluster.controller.alive() and await cluster.controller.healthz() == 200
