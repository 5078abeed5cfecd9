"""One node agent in memory (no Kafka), for the node agent's unit tests: a ClusterState for
its read model and a writer that folds what it writes, optionally failing a write as the log
can (`Fault`)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from inplace.core.bus.consumer import Record
from inplace.core.bus.producer import Position
from inplace.core.logwriter import LogWriter, Queued
from inplace.core.projection.podstore import PodStore
from inplace.core.projection.state import ClusterState
from inplace.core.readmodel import ReadModel
from schemas import events as ev
from schemas.envelope import Envelope, EventPayload
from schemas.k8s import Pod
from schemas.nodeswap import planning_capacity
from services.kubelet.admission import NodeAllocation
from services.kubelet.nodeagent import NODE_KEY, NodeAgent
from services.kubelet.runtime_fake import FakeRuntime
from tests import factories


@dataclass
class Fault:
    """The next write of a `kind` event fails with `error`; `landed`: after the log took it
    (its read-back timed out), else before (the log never had it)."""

    kind: type[EventPayload]
    error: BaseException
    landed: bool


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
        self.settled: list[list[EventPayload]] = []  # what each wait of the agent's covered
        self.faults: list[Fault] = []
        self._offset = 0

    def get(self, collection: str, key: Any) -> Any:
        objects: dict[Any, Any] = getattr(self.state, collection)
        return objects.get(key)

    async def write(self, payload: EventPayload, *, cause: Envelope | None = None) -> None:
        fault = next((f for f in self.faults if isinstance(payload, f.kind)), None)
        if fault is not None:
            self.faults.remove(fault)
            if not fault.landed:
                raise fault.error
        self.written.append(payload)
        self.apply(payload, producer="kubelet")
        if fault is not None:
            raise fault.error

    async def write_all(
        self, payloads: list[EventPayload], *, cause: Envelope | None = None
    ) -> None:
        for payload in payloads:
            await self.write(payload, cause=cause)

    async def queue(self, payloads: list[EventPayload], *, cause: Envelope | None = None) -> Queued:
        """Held until `settle`, which writes them in order (a fault surfaces there, as the
        producer's error or the read-back's timeout does)."""
        held: list[tuple[Any, bytes]] = [(payload, b"") for payload in payloads]
        return Queued(held, 0.0)

    async def settle(self, queued: Queued) -> None:
        self.settled.append([cast(EventPayload, payload) for payload, _ in queued.sent])
        for payload in self.settled[-1]:
            await self.write(payload)

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


def web_cpu(cluster: Cluster) -> tuple[str | None, str, str]:
    """web's (status.resize, allocated cpu, actual cpu limit)."""
    pod = cluster.pod("web")
    status = pod.status.container_statuses or []
    allocated = status[0].allocated_resources or {}
    actual = status[0].resources.limits if status[0].resources else {}
    return pod.status.resize, str(allocated.get("cpu")), str((actual or {}).get("cpu"))
