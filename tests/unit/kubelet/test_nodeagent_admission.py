"""A pod's admission cut short by the log, one node agent in memory (no Kafka): the Allocated
landed but was not read back in time (a kubelet far behind the log, as when it takes over a
thousand new nodes at once), or never reached the log. Either way the retry ends with the pod
Running, admitted once, started once."""

from __future__ import annotations

import logging

import pytest
from aiokafka.errors import KafkaConnectionError

from schemas import events as ev
from services.kubelet.nodeagent import NodeAgent
from services.kubelet.runtime_fake import FakeRuntime
from tests import factories
from tests.unit.kubelet.agentworld import NODE, NS, Cluster, Fault, agent_on_node, until


async def _web_through(fault: Fault) -> tuple[Cluster, NodeAgent, FakeRuntime]:
    """Create pod `web` on the node with `fault` on the log's way; return once it runs, with
    one Allocated and one sandbox, as the agent left them."""
    runtime = FakeRuntime()
    async with agent_on_node(runtime=runtime) as (cluster, agent):
        cluster.faults.append(fault)
        pod = factories.pod(NS, "web", cpu="500m")
        pod.spec.node_name = NODE
        cluster.apply(ev.PodCreated(namespace=NS, name="web", uid=pod.metadata.uid or "", pod=pod))
        await until(lambda: cluster.pod("web").status.phase == "Running", "web runs")
    allocated = [p for p in cluster.written if isinstance(p, ev.Allocated) and p.name == "web"]
    assert len(allocated) == 1
    assert len(await runtime.list_pod_sandboxes()) == 1
    return cluster, agent, runtime


async def test_an_allocation_on_the_log_but_not_read_back_is_started_by_the_retry(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="services.kubelet.nodeagent")
    cluster, agent, _ = await _web_through(Fault(ev.Allocated, TimeoutError(), landed=True))
    assert agent.checkpoint.allocated(f"{NS}/web") is not None
    phases = [p.phase for p in cluster.written if isinstance(p, ev.PodPhaseChanged)]
    assert phases == ["Running"]
    # A timeout is told in one line, not as a failure with its traceback.
    told = [(r.levelname, r.getMessage()) for r in caplog.records if "reconcile of" in r.message]
    assert told == [("WARNING", f"{NODE}: reconcile of {NS}/web timed out; retrying")]


async def test_an_allocation_the_log_never_took_is_admitted_again() -> None:
    _, agent, _ = await _web_through(Fault(ev.Allocated, KafkaConnectionError(), landed=False))
    # Counted once in the node's checkpoint, not twice.
    assert str(agent.checkpoint.requests_of(f"{NS}/web")["cpu"]) == "500m"
    assert len(agent.checkpoint.pods) == 1
