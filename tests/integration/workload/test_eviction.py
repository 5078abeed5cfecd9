"""A hot unplug evicts a CloneSet's pod as Kubernetes evicts (KEP-3953 with 1.35's eviction
shape): the pod ends Failed / Evicted on its node with a message naming the resource, and the
CloneSet controller replaces it (a Failed pod no longer counts toward replicas)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from tests.integration.conftest import RoleProcess, inplace
from tests.integration.workload.conftest import Cluster, clone_set, eventually, running


async def test_unplug_evicts_a_pod_and_the_clone_set_replaces_it(
    cluster: Cluster, tmp_path: Path
) -> None:
    hotplug = RoleProcess("hotplug", cluster.settings, tmp_path / "hotplug.log")
    hotplug.start()
    try:
        await hotplug.ready()
        await cluster.create(clone_set("web", 3, "1"))

        async def placed() -> list[Any] | None:
            pods = await cluster.pods("web")
            return pods if running(pods, 3) else None

        pods = await eventually(placed)
        # Three pods on two 4-CPU nodes: one node runs k >= 2 of them; unplug one of its CPUs
        # below what they request, so exactly one must go.
        node, k = Counter(p.spec.node_name for p in pods).most_common(1)[0]
        resized = inplace(
            cluster.settings, "node", "resize", node, "--cpu", str(k - 1), "--server", hotplug.url
        )
        assert resized.returncode == 0, resized.stderr

        async def replaced() -> list[Any] | None:
            pods = await cluster.pods("web")
            failed = [p for p in pods if p.status.phase == "Failed"]
            alive = [p for p in pods if p.status.phase == "Running"]
            return pods if len(failed) == 1 and len(alive) == 3 else None

        now = await eventually(replaced)
        evicted = next(p for p in now if p.status.phase == "Failed")
        assert evicted.status.reason == "Evicted"
        assert evicted.spec.node_name == node, "nodeName is immutable: the pod stays on it"
        assert evicted.status.message.startswith("The node was low on resource: cpu.")
        assert evicted.metadata.uid in {p.metadata.uid for p in pods}
        conditions = {c.type: c.status for c in evicted.status.conditions or []}
        assert conditions["DisruptionTarget"] == "True" and conditions["Ready"] == "False"
        replacement = [p for p in now if p.metadata.uid not in {q.metadata.uid for q in pods}]
        assert len(replacement) == 1 and replacement[0].status.phase == "Running"

        async def counted() -> dict[str, Any] | None:
            cs = await cluster.get("web")
            return cs if cs.get("status", {}).get("replicas") == 3 else None

        await eventually(counted)
        events = await cluster.call(
            cluster.core.list_namespaced_event,
            "default",
            field_selector=f"involvedObject.name={evicted.metadata.name}",
        )
        assert any(e.reason == "Evicted" and e.type == "Warning" for e in events.items)
    finally:
        hotplug.stop()
