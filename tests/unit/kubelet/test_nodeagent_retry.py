"""What retries a Deferred resize, with one node agent in memory (no Kafka): the pod
terminated (Succeeded / Failed, not deleted), another resize shrinking, and the timer alone.

Every change that frees room on a node here (a pod deleted, terminated or evicted, an
accepted resize that shrinks, the node's allocatable moving) is itself a retry trigger, so
no log event can free room behind the agent's back. The timer test therefore frees room in
the agent's checkpoint directly, with no event at all, and the timer alone must find it.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

import pytest
from prometheus_client import REGISTRY

from schemas import events as ev
from schemas.quantity import Quantity
from tests.unit.kubelet.agentworld import (
    NEVER,
    NS,
    Cluster,
    NodeAgent,
    agent_on_node,
    resize,
    start,
    until,
    web_cpu,
)


def accepted(trigger: str) -> float:
    value = REGISTRY.get_sample_value(
        "kubelet_pod_deferred_accepted_resizes_total", {"retry_trigger": trigger}
    )
    return value or 0.0


TRIGGERS = ("pod_resized", "pod_deleted", "node_resized", "periodic_retry")


def accepted_by() -> dict[str, float]:
    return {t: accepted(t) for t in TRIGGERS}


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
