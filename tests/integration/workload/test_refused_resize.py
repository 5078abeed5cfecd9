"""The apiserver refuses a pod's resize (422: the template change would alter the pods' QoS
class): the controller does not crash-loop; the revision fails like an Infeasible one, with
the pod and the apiserver's message in the condition and a Warning event; Report stops,
Rollback returns; a restart does not send the refused request again."""

from __future__ import annotations

from typing import Any

import pytest

from schemas import events as ev
from tests.integration.workload.conftest import (
    Cluster,
    clone_set,
    cpu_of,
    eventually,
    read_log,
    running,
)

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
