"""A CloneSet template change rolled out in place: paced, partitioned, and the recreate path
for changes that are not resources (issue 9, "must show" 1)."""

from __future__ import annotations

from typing import Any

from schemas.events import PODS
from tests.integration.conftest import read_log
from tests.integration.workload.conftest import (
    Cluster,
    clone_set,
    cpu_of,
    cpu_patch,
    eventually,
    running,
)
from tests.integration.workload.logcheck import max_concurrent_resizes, proposals_per_pod_and_target

REVISION = "controller-revision-hash"


def actual_cpu(pod: Any) -> str | None:
    statuses = pod.status.container_statuses or []
    if not statuses or not statuses[0].resources:
        return None
    return str(statuses[0].resources.requests["cpu"])


async def test_template_resize_rolls_in_place_in_paced_batches(cluster: Cluster) -> None:
    await cluster.create(clone_set("web", 10, "100m", maxConcurrentResizes=3, partition=2))
    before = await eventually(lambda: _running(cluster, "web", 10))
    uids = {p.metadata.name: p.metadata.uid for p in before}
    first_revision = before[0].metadata.labels[REVISION]

    await cluster.patch("web", cpu_patch("200m"))

    async def partitioned() -> list[Any] | None:
        pods = await cluster.pods("web")
        resized = [p for p in pods if actual_cpu(p) == "200m" and p.status.resize is None]
        return pods if len(resized) == 8 else None

    pods = await eventually(partitioned)
    old = [p for p in pods if p.metadata.labels[REVISION] == first_revision]
    assert len(old) == 2 and all(cpu_of(p) == "100m" for p in old), "partition keeps 2 old"
    # Update order is by name among ready pods: the last two names stay behind.
    assert sorted(p.metadata.name for p in old) == sorted(uids)[-2:]

    await cluster.patch("web", {"spec": {"updateStrategy": {"partition": 0}}})

    async def converged() -> dict[str, Any] | None:
        cs = await cluster.get("web")
        st = cs.get("status", {})
        done = (
            st.get("updatedReplicas") == 10
            and st.get("updatedResizedReplicas") == 10
            and st.get("currentRevision") == st.get("updateRevision")
            and st.get("observedGeneration") == cs["metadata"]["generation"]
        )
        return cs if done else None

    cs = await eventually(converged)
    assert cs["status"]["replicas"] == 10 and cs["status"]["readyReplicas"] == 10
    pods = await cluster.pods("web")
    assert {p.metadata.name: p.metadata.uid for p in pods} == uids, "resized in place"
    assert all(cpu_of(p) == "200m" and actual_cpu(p) == "200m" for p in pods)
    assert all(p.status.container_statuses[0].restart_count == 0 for p in pods)
    assert all(p.metadata.labels[REVISION] == cs["status"]["updateRevision"] for p in pods)
    assert all(p.metadata.labels["lifecycle.apps.inplace.dev/state"] == "Normal" for p in pods)

    log = await read_log(cluster.settings, PODS)
    assert 1 <= max_concurrent_resizes(log) <= 3
    proposals = proposals_per_pod_and_target(log)
    assert {uid for uid, _ in proposals} == set(uids.values())
    assert all(n == 1 for n in proposals.values()), "each pod resized once per revision"

    async def rollout_events() -> set[str] | None:
        # The controller posts RolloutCompleted after the status that says so: wait for it.
        events = await cluster.call(cluster.core.list_namespaced_event, "default")
        reasons = {e.reason for e in events.items if e.involved_object.kind == "CloneSet"}
        return reasons if "RolloutCompleted" in reasons else None

    reasons = await eventually(rollout_events)
    assert {"RolloutStarted", "BatchStarted", "RolloutCompleted"} <= reasons

    # An image change is not a vertical update: every pod is recreated.
    patch = cpu_patch("200m")
    patch["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.28"
    await cluster.patch("web", patch)

    async def recreated() -> list[Any] | None:
        pods = await cluster.pods("web")
        fresh = [
            p
            for p in pods
            if p.metadata.uid not in uids.values()
            and p.spec.containers[0].image == "nginx:1.28"
            and p.status.phase == "Running"
        ]
        return pods if len(fresh) == 10 and len(pods) == 10 else None

    await eventually(recreated, within=180)


async def _running(cluster: Cluster, name: str, n: int) -> list[Any] | None:
    pods = await cluster.pods(name)
    return pods if running(pods, n) else None
