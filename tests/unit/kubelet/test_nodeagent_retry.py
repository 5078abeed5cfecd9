"""What retries a Deferred resize, with one node agent in memory (no Kafka): the pod
terminated (Succeeded / Failed, not deleted), another resize shrinking, and the timer alone.

Every change that frees room on a node here (a pod deleted, terminated or evicted, an
accepted resize that shrinks, the node's allocatable moving) is itself a retry trigger, so
no log event can free room behind the agent's back. The timer test therefore frees room in
the agent's checkpoint directly, with no event at all, and the timer alone must find it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest
from prometheus_client import REGISTRY

from inplace.core.bus.consumer import Record
from inplace.core.bus.producer import Position
from inplace.core.logwriter import LogWriter
from inplace.core.projection.podstore import PodStore
from inplace.core.projection.state import ClusterState
from inplace.core.readmodel import ReadModel
from schemas import events as ev
from schemas.envelope import Envelope, EventPayload
from schemas.k8s import Pod
from schemas.nodeswap import planning_capacity
from schemas.quantity import Quantity
from services.kubelet.admission import NodeAllocation
from services.kubelet.nodeagent import NODE_KEY, NodeAgent
from services.kubelet.runtime_fake import FakeRuntime
from tests import factories

NS, NODE = "ns", "n1"
T0 = datetime(2024, 1, 1, tzinfo=UTC)
NEVER = 3600.0  # a timer that does not fire within a test


class Cluster:
    """The agent's world: a ClusterState for its read model, and a writer that folds what it
    writes and, like the kubelet's router, hands every pod event back to the agent."""

    def __init__(self) -> None:
        self.pods = PodStore()  # as a read model holds them
        self.state = ClusterState(pods=self.pods)
        self.agent: NodeAgent | None = None
        self.written: list[EventPayload] = []
        self._offset = 0

    def get(self, collection: str, key: Any) -> Any:
        objects: dict[Any, Any] = getattr(self.state, collection)
        return objects.get(key)

    async def write(self, payload: EventPayload, *, cause: Envelope | None = None) -> None:
        self.written.append(payload)
        self.apply(payload, producer="kubelet")

    async def write_all(
        self, payloads: list[EventPayload], *, cause: Envelope | None = None
    ) -> None:
        for payload in payloads:
            await self.write(payload, cause=cause)

    def apply(self, payload: EventPayload, producer: str = "apiserver") -> None:
        env = Envelope.wrap(payload, producer=producer, time=T0 + timedelta(seconds=self._offset))
        self.state.apply(Record(Position(payload.TOPIC, 0, self._offset), env))
        self._offset += 1
        if self.agent is None:
            return
        if isinstance(payload, ev.PodEvent):
            self.agent.enqueue(f"{payload.namespace}/{payload.name}")
        elif isinstance(payload, ev.NodeEvent):
            self.agent.enqueue(NODE_KEY)

    def pod(self, name: str) -> Pod:
        pod: Pod = self.state.pods[(NS, name)]
        return pod


async def until(check: Callable[[], bool], what: str) -> None:
    """Wait (bounded) for the agent to get somewhere; the bound is a hang guard only."""
    for _ in range(2000):
        if check():
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"never: {what}")


def accepted(trigger: str) -> float:
    value = REGISTRY.get_sample_value(
        "kubelet_pod_deferred_accepted_resizes_total", {"retry_trigger": trigger}
    )
    return value or 0.0


TRIGGERS = ("pod_resized", "pod_deleted", "node_resized", "periodic_retry")


def accepted_by() -> dict[str, float]:
    return {t: accepted(t) for t in TRIGGERS}


def resize(name: str, cpu: str, memory: str = "128Mi") -> ev.ResizeProposed:
    return ev.ResizeProposed(
        namespace=NS,
        name=name,
        uid=f"uid-{NS}-{name}",
        containers=[ev.ContainerResources(name="app", resources=factories.resources(cpu, memory))],
    )


@contextlib.asynccontextmanager
async def agent_on_node(
    timer: tuple[float, float] = (NEVER, NEVER), runtime: FakeRuntime | None = None
) -> AsyncIterator[tuple[Cluster, NodeAgent]]:
    """A running node agent for a 4-CPU node `n1`; `timer` is the Deferred retry timer's
    (first, period)."""
    cluster = Cluster()
    node = factories.node(NODE, cpu="4", memory="8Gi")
    cluster.apply(ev.NodeRegistered(name=NODE, node=node))
    assert node.status is not None
    agent = NodeAgent(
        NODE,
        NodeAllocation.from_node(node),
        runtime=cast(Any, runtime or FakeRuntime()),
        model=cast(ReadModel, cluster),
        writer=cast(LogWriter, cluster),
        causes={},
        capacity=planning_capacity(node.status),
        deferred_retry=timer,
    )
    cluster.agent = agent
    worker = asyncio.create_task(agent.run())
    try:
        yield cluster, agent
    finally:
        worker.cancel()
        await asyncio.gather(worker, return_exceptions=True)
        if agent._retry_timer is not None:
            agent._retry_timer.cancel()


async def start(cluster: Cluster, name: str, cpu: str, memory: str = "128Mi") -> None:
    pod = factories.pod(NS, name, cpu=cpu, memory=memory)
    pod.spec.node_name = NODE
    cluster.apply(ev.PodCreated(namespace=NS, name=name, uid=pod.metadata.uid or "", pod=pod))
    await until(lambda: cluster.pod(name).status.phase == "Running", f"{name} runs")


@contextlib.asynccontextmanager
async def deferred_node(
    timer: tuple[float, float] = (NEVER, NEVER),
) -> AsyncIterator[tuple[Cluster, NodeAgent]]:
    """`hog` holds 2500m of the 4 CPUs, `web` (1 CPU) asked for 2 and waits, Deferred."""
    async with agent_on_node(timer) as (cluster, agent):
        await start(cluster, "hog", "2500m")
        await start(cluster, "web", "1")
        cluster.apply(resize("web", "2"))
        await until(lambda: cluster.pod("web").status.resize == "Deferred", "web Deferred")
        yield cluster, agent


def web_cpu(cluster: Cluster) -> tuple[str | None, str, str]:
    """web's (status.resize, allocated cpu, actual cpu limit)."""
    pod = cluster.pod("web")
    status = pod.status.container_statuses or []
    allocated = status[0].allocated_resources or {}
    actual = status[0].resources.limits if status[0].resources else {}
    return pod.status.resize, str(allocated.get("cpu")), str((actual or {}).get("cpu"))


def only_grew(before: dict[str, float], trigger: str) -> dict[str, float]:
    after = accepted_by()
    return {t: after[t] - before[t] for t in TRIGGERS if after[t] != before[t]} | {
        trigger: after[trigger] - before[trigger]
    }


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
async def test_a_terminated_pod_retries_deferred_resizes(phase: str) -> None:
    async with deferred_node() as (cluster, agent):
        before = accepted_by()
        # The pod ran to completion (or failed): still in the API, but it holds nothing any more.
        cluster.apply(
            ev.PodPhaseChanged(namespace=NS, name="hog", uid=f"uid-{NS}-hog", phase=phase),
            producer="kubelet",
        )
        await until(lambda: cluster.pod("web").status.resize is None, "web resized")
        assert web_cpu(cluster) == (None, "2", "2")
        assert (NS, "hog") in cluster.state.pods and agent.checkpoint.allocated(f"{NS}/hog") is None
        assert only_grew(before, "pod_deleted") == {"pod_deleted": 1.0}


async def test_another_resize_shrinking_retries_deferred_resizes() -> None:
    async with deferred_node() as (cluster, agent):
        before = accepted_by()
        cluster.apply(resize("hog", "1"))
        await until(lambda: cluster.pod("web").status.resize is None, "web resized")
        assert web_cpu(cluster) == (None, "2", "2")
        assert str(agent.checkpoint.requests_of(f"{NS}/hog")["cpu"]) == "1"
        assert only_grew(before, "pod_resized") == {"pod_resized": 1.0}


async def test_a_resize_that_frees_nothing_leaves_it_deferred() -> None:
    """A growing resize elsewhere is no trigger that helps: web stays Deferred, and nothing
    writes its Deferred status again."""
    async with deferred_node() as (cluster, _):
        cluster.apply(resize("hog", "2600m"))
        await until(lambda: cluster.pod("hog").status.resize is None, "hog resized")
        assert cluster.pod("web").status.resize == "Deferred"
        statuses = [
            p.resize
            for p in cluster.written
            if isinstance(p, ev.ResizeStatusChanged) and p.name == "web"
        ]
        assert statuses == ["Deferred"]


async def test_the_timer_alone_accepts_a_deferred_resize(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="services.kubelet.nodeagent")
    async with deferred_node((0.05, 0.05)) as (cluster, agent):
        before = accepted_by()
        written = len(cluster.written)
        # Room frees with no event the agent hears of (see the module's docstring): the node's
        # allocatable grows in the checkpoint only.
        agent.checkpoint = agent.checkpoint.with_allocatable(
            {**agent.checkpoint.allocatable, "cpu": Quantity("8")}
        )
        await until(lambda: cluster.pod("web").status.resize is None, "web resized")
        assert web_cpu(cluster) == (None, "2", "2")
        assert only_grew(before, "periodic_retry") == {"periodic_retry": 1.0}
        # The acceptance is the first thing written after the room freed: no event led to it.
        assert isinstance(cluster.written[written], ev.Allocated)
        assert cluster.written[written].name == "web"
        assert any("periodic retry of 1 deferred resizes" in r.message for r in caplog.records)
