"""A vertical update that one node cannot take (Infeasible mid-rollout): Report stops with a
condition naming the pod; Rollback resizes every updated pod back (must show 2)."""

from __future__ import annotations

from typing import Any

from inplace.core.bus.producer import EventProducer
from schemas import events as ev
from schemas.envelope import Envelope
from schemas.quantity import Quantity
from tests.integration.conftest import read_log
from tests.integration.workload.conftest import (
    Cluster,
    clone_set,
    cpu_of,
    cpu_patch,
    eventually,
    running,
)

FAILED = "VerticalUpdateFailed"


async def shrink_node(cluster: Cluster, producer: EventProducer, name: str, cpu: str) -> None:
    """A hotplug unplug of CPUs on one simulated node (KEP-3953 NodeCapacityChanged)."""
    node = await cluster.call(cluster.core.read_node, name)
    old_cap = {k: Quantity(v) for k, v in node.status.capacity.items()}
    old_alloc = {k: Quantity(v) for k, v in node.status.allocatable.items()}
    payload = ev.NodeCapacityChanged(
        name=name,
        old_capacity=old_cap,
        new_capacity={**old_cap, "cpu": Quantity(cpu)},
        old_allocatable=old_alloc,
        new_allocatable={**old_alloc, "cpu": Quantity(cpu)},
    )
    await producer.publish(Envelope.wrap(payload, producer="test"))

    async def shrunk() -> bool:
        node = await cluster.call(cluster.core.read_node, name)
        return Quantity(node.status.allocatable["cpu"]) == Quantity(cpu)

    await eventually(shrunk)


def condition(cs: dict[str, Any]) -> dict[str, Any] | None:
    return next(
        (c for c in cs.get("status", {}).get("conditions") or [] if c["type"] == FAILED), None
    )


async def start_rollout(
    cluster: Cluster, producer: EventProducer, on_infeasible: str
) -> tuple[list[Any], Any]:
    """4 pods over two nodes; the node without the first pod (by name) shrinks to 1 CPU, then
    the template asks 1500m: pods there are Infeasible, the others fit."""
    await cluster.create(
        clone_set("api", 4, "100m", maxConcurrentResizes=1, onInfeasible=on_infeasible)
    )

    async def up() -> list[Any] | None:
        pods = await cluster.pods("api")
        return pods if running(pods, 4) else None

    pods = await eventually(up)
    nodes = {p.spec.node_name for p in pods}
    assert len(nodes) == 2, "LeastAllocated spreads the pods over both nodes"
    small = next(n for n in nodes if n != pods[0].spec.node_name)
    await shrink_node(cluster, producer, small, "1")
    await cluster.patch("api", cpu_patch("1500m"))
    failing = next(p for p in pods if p.spec.node_name == small)
    return pods, failing


async def test_report_stops_and_names_the_pod(cluster: Cluster, producer: EventProducer) -> None:
    pods, failing = await start_rollout(cluster, producer, "Report")

    async def reported() -> dict[str, Any] | None:
        cs = await cluster.get("api")
        c = condition(cs)
        return cs if c and c["status"] == "True" and c["reason"] == "Infeasible" else None

    cs = await reported_or_fail(cluster, reported)
    assert failing.metadata.name in condition(cs)["message"]
    assert cs["status"]["failedRevision"] == cs["status"]["updateRevision"]
    now = {p.metadata.name: p for p in await cluster.pods("api")}
    order = [p.metadata.name for p in pods]
    before = order[: order.index(failing.metadata.name)]
    after = order[order.index(failing.metadata.name) + 1 :]
    assert before and all(cpu_of(now[n]) == "1500m" for n in before), "successes are kept"
    assert now[failing.metadata.name].status.resize == "Infeasible"
    assert all(cpu_of(now[n]) == "100m" for n in after), "the rollout stopped"
    events = await cluster.call(cluster.core.list_namespaced_event, "default")
    assert any(e.reason == "Infeasible" and e.type == "Warning" for e in events.items)


async def test_rollback_returns_updated_pods_to_old_resources(
    cluster: Cluster, producer: EventProducer
) -> None:
    pods, failing = await start_rollout(cluster, producer, "Rollback")

    async def rolled_back() -> dict[str, Any] | None:
        cs = await cluster.get("api")
        c = condition(cs)
        return cs if c and c["reason"] == "RolledBack" else None

    cs = await reported_or_fail(cluster, rolled_back)
    assert failing.metadata.name in condition(cs)["message"]
    now = await cluster.pods("api")
    assert {p.metadata.uid for p in now} == {p.metadata.uid for p in pods}
    for pod in now:
        assert cpu_of(pod) == "100m"
        assert str(pod.status.container_statuses[0].resources.requests["cpu"]) == "100m"
        assert pod.status.resize is None
        assert pod.metadata.labels["controller-revision-hash"] == cs["status"]["currentRevision"]
    log = await read_log(cluster.settings, ev.PODS)
    resized_up = {
        e.payload.name
        for e in log
        if isinstance(e.payload, ev.ResizeProposed)
        and str(e.payload.containers[0].resources.requests["cpu"]) == "1500m"
    }
    assert pods[0].metadata.name in resized_up, "the first pod had been updated"
    events = await cluster.call(cluster.core.list_namespaced_event, "default")
    assert {"RollingBack", "RolledBack"} <= {e.reason for e in events.items}


async def reported_or_fail(cluster: Cluster, check: Any) -> dict[str, Any]:
    try:
        result: dict[str, Any] = await eventually(check, within=120)
    except AssertionError:
        raise AssertionError(
            f"{await cluster.get('api')}\n{cluster.controller.log.read_text()[-3000:]}"
        ) from None
    return result
