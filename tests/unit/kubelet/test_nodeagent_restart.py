"""KEP-1287 Kubelet Restart Tolerance, one node agent in memory (no Kafka): a new agent on a
node puts every running pod back from its allocated checkpoint without deciding or writing
anything about it, then reconciles only what moved while no agent served the node (a resize
proposed meanwhile, a pod created meanwhile, one that ended meanwhile)."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from inplace.core.logwriter import LogWriter
from inplace.core.readmodel import ReadModel
from schemas import events as ev
from schemas.nodeswap import planning_capacity
from services.kubelet.admission import NodeAllocation
from services.kubelet.nodeagent import NodeAgent
from services.kubelet.runtime_fake import FakeRuntime
from tests import factories
from tests.unit.kubelet.agentworld import (
    NEVER,
    NODE,
    NS,
    Cluster,
    Fault,
    agent_on_node,
    resize,
    start,
    until,
)


def _newcomer_agent(cluster: Cluster, runtime: FakeRuntime) -> NodeAgent:
    """A new agent for the node, its pods held as a snapshot holds them (JSON, undecoded)."""
    pods = cluster.pods
    for key in list(pods):
        pods.put_json(key, pods.json(key) or b"", rv=pods.resource_version(key) or 0, node=NODE)
    node = cluster.get("nodes", NODE)
    return NodeAgent(
        NODE,
        NodeAllocation.from_node(node),
        runtime=cast(Any, runtime),
        model=cast(ReadModel, cluster),
        writer=cast(LogWriter, cluster),
        causes={},
        capacity=planning_capacity(node.status),
        deferred_retry=(NEVER, NEVER),
    )


def _written_about(cluster: Cluster, name: str, since: int) -> list[str]:
    return [
        type(p).__name__
        for p in cluster.written[since:]
        if isinstance(p, ev.PodEvent) and p.name == name
    ]


async def test_a_restarted_agent_puts_pods_back_and_reconciles_only_what_moved() -> None:
    async with agent_on_node() as (cluster, first):
        for name in ("settled", "resizing", "ending"):
            await start(cluster, name, "500m")
    # No agent serves the node now (the first is stopped): what happens meanwhile waits.
    cluster.agent = None
    cluster.apply(resize("resizing", "1"))
    cluster.apply(
        ev.PodPhaseChanged(namespace=NS, name="ending", uid=f"uid-{NS}-ending", phase="Succeeded"),
        producer="kubelet",
    )
    newcomer = factories.pod(NS, "newcomer", cpu="250m")
    newcomer.spec.node_name = NODE
    cluster.apply(ev.PodCreated(namespace=NS, name="newcomer", uid="uid-newcomer", pod=newcomer))
    agent = _newcomer_agent(cluster, FakeRuntime())
    before = len(cluster.written)
    agent.restart_with(list(cluster.pods))
    cluster.agent = agent
    cluster.state.claimed = lambda key: agent.readmitted  # as the kubelet's read model has it
    assert cluster.state.allocations and (NS, "settled") in cluster.state.allocations
    worker = asyncio.create_task(agent.run())
    try:
        await asyncio.wait_for(agent.restore_turn(), timeout=10)
        await until(lambda: cluster.pod("newcomer").status.phase == "Running", "newcomer runs")
        await until(lambda: cluster.pod("resizing").status.resize is None, "resize done")
    finally:
        worker.cancel()
        await asyncio.gather(worker, return_exceptions=True)
    # The checkpoint holds the allocations now, those written since too: the model none.
    assert cluster.state.allocations == {}

    # Put back as it was, nothing written about it, running again in the (new) runtime.
    assert _written_about(cluster, "settled", before) == []
    settled = agent.checkpoint.allocated(f"{NS}/settled")
    assert settled is not None
    assert str(settled.spec.containers[0].resources.requests["cpu"]) == "500m"  # type: ignore[index]
    assert f"{NS}/settled" in agent.pods
    # The resize proposed meanwhile decided against a node that holds its running pods.
    assert "Allocated" in _written_about(cluster, "resizing", before)
    resized = agent.checkpoint.allocated(f"{NS}/resizing")
    assert resized is not None
    assert str(resized.spec.containers[0].resources.requests["cpu"]) == "1"  # type: ignore[index]
    # Created meanwhile: admitted once; ended meanwhile: not put back.
    assert _written_about(cluster, "newcomer", before).count("Allocated") == 1
    assert agent.checkpoint.allocated(f"{NS}/ending") is None
    assert f"{NS}/ending" not in agent.pods
    assert len(agent.checkpoint.pods) == 3
    assert first.checkpoint.allocated(f"{NS}/ending") is not None  # the old agent held it


async def test_a_resize_asked_during_a_restore_is_decided_before_the_pods_are_back() -> None:
    """Handing a node over does no work; the checkpoint counts every handed-over pod from its
    first read, so a resize queued before the node's restore turn is decided against all of
    them (Deferred: they leave no room) before they are back in the runtime, not after."""
    async with agent_on_node() as (cluster, _):  # 4 CPUs
        for i in range(30):
            await start(cluster, f"p{i}", "100m")
    cluster.agent = None
    runtime = FakeRuntime()
    agent = _newcomer_agent(cluster, runtime)
    agent.restart_with(list(cluster.pods))
    assert (agent.restoring, runtime.journal()) == (30, [])
    sandboxes_when: dict[str, int] = {}
    write = cluster.write

    async def noting(payload: ev.EventPayload, *, cause: Any = None) -> None:
        if isinstance(payload, ev.ResizeStatusChanged) and payload.resize is not None:
            sandboxes_when[payload.resize] = len(runtime.journal("run_pod_sandbox"))
        await write(payload, cause=cause)

    cluster.write = noting  # type: ignore[method-assign]
    cluster.agent = agent
    cluster.apply(resize("p0", "2"))  # 2.9 CPUs of the others + 2 > 4
    worker = asyncio.create_task(agent.run())
    try:
        await asyncio.wait_for(agent.restore_turn(), timeout=10)
    finally:
        worker.cancel()
        await asyncio.gather(worker, return_exceptions=True)
    assert cluster.pod("p0").status.resize == "Deferred"
    assert sandboxes_when == {"Deferred": 0}
    assert len(runtime.journal("run_pod_sandbox")) == 30
    assert agent.restoring == 0
    assert len(agent.pods) == 30


async def test_a_pod_admitted_but_not_yet_running_is_started_after_a_restart() -> None:
    """The kubelet stopped between a pod's Allocated and its Running: the next agent on the
    node starts it from the checkpoint, without admitting it again."""
    async with agent_on_node() as (cluster, _):
        # Stopped as it was about to write Running (a stop cancels the agent's task).
        cluster.faults.append(Fault(ev.PodPhaseChanged, asyncio.CancelledError(), landed=False))
        pod = factories.pod(NS, "web", cpu="500m")
        pod.spec.node_name = NODE
        cluster.apply(ev.PodCreated(namespace=NS, name="web", uid="uid-web", pod=pod))
        await until(lambda: not cluster.faults, "the Running write failed")
    cluster.agent = None
    assert cluster.pod("web").status.phase == "Pending"
    runtime = FakeRuntime()
    agent = _newcomer_agent(cluster, runtime)
    before = len(cluster.written)
    agent.restart_with(list(cluster.pods))
    cluster.agent = agent
    cluster.state.claimed = lambda key: agent.readmitted
    worker = asyncio.create_task(agent.run())
    try:
        await asyncio.wait_for(agent.restore_turn(), timeout=10)
        await until(lambda: cluster.pod("web").status.phase == "Running", "web runs")
    finally:
        worker.cancel()
        await asyncio.gather(worker, return_exceptions=True)
    assert "Allocated" not in _written_about(cluster, "web", before)
    assert len(await runtime.list_pod_sandboxes()) == 1
