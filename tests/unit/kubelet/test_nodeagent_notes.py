"""PodResizeInProgress says why an accepted resize is not done yet (the 1.33+ kubelet): reason
Error with the runtime's message when actuation fails, a "held back" message while a memory
limit decrease waits for usage to fall; once per distinct cause, gone at completion. One node
agent in memory (no Kafka); the condition is folded by the reducers from what it writes."""

from __future__ import annotations

from typing import Any

from schemas import events as ev
from services.kubelet.runtime_fake import FakeRuntime
from tests.unit.kubelet.agentworld import (
    NS,
    Cluster,
    agent_on_node,
    resize,
    start,
    until,
    web_cpu,
)

KUBE = ev.KubeEventRecorded

MI = 1024 * 1024


def in_progress(cluster: Cluster, name: str) -> Any:
    conditions = cluster.pod(name).status.conditions or []
    return next((c for c in conditions if c.type == "PodResizeInProgress"), None)


def statuses(cluster: Cluster, name: str) -> list[tuple[str | None, str | None]]:
    """(resize, reason) of every status.resize change the agent wrote about `name` (on its
    own or with an Allocated / Actuated)."""
    return [
        (change.resize, change.reason)
        for p in cluster.written
        if isinstance(p, ev.PodEvent)
        and p.name == name
        and (change := ev.resize_change(p)) is not None
    ]


def kube_events(cluster: Cluster, reason: str) -> list[ev.KubeEventRecorded]:
    return [
        p
        for p in cluster.written
        if isinstance(p, ev.KubeEventRecorded) and p.event.reason == reason
    ]


async def test_a_failing_runtime_shows_as_reason_error_once_then_clears() -> None:
    runtime = FakeRuntime()
    async with agent_on_node(runtime=runtime) as (cluster, _):
        await start(cluster, "web", "1")
        runtime.fail_next("update_container_resources", times=2)
        cluster.apply(resize("web", "2"))
        await until(
            lambda: getattr(in_progress(cluster, "web"), "reason", None) == "Error", "Error"
        )
        condition = in_progress(cluster, "web")
        assert condition.status == "True" and "injected failure" in condition.message
        assert condition.observed_generation == 2
        await until(lambda: cluster.pod("web").status.resize is None, "completed")
        assert in_progress(cluster, "web") is None
        # Two failed attempts, one note: the second failure said nothing new.
        assert statuses(cluster, "web") == [
            ("InProgress", None),
            ("InProgress", "Error"),
            (None, None),
        ]
        assert [e.event.type for e in kube_events(cluster, "ResizeError")] == ["Warning"] * 2
        assert len(kube_events(cluster, "ResizeCompleted")) == 1
        # The allocation went out on its own, before the error: nothing applied to report.
        *_, allocated = (p for p in cluster.written if isinstance(p, ev.Allocated))
        assert allocated.actuated is None and allocated.resize_status.resize == "InProgress"


async def test_a_held_back_memory_decrease_says_so_until_usage_falls() -> None:
    runtime = FakeRuntime()
    async with agent_on_node(runtime=runtime) as (cluster, agent):
        await start(cluster, "web", "500m", memory="256Mi")
        container = agent.pods[f"{NS}/web"].containers["app"]
        runtime.set_memory_usage(container, 200 * MI)
        cluster.apply(resize("web", "500m", memory="128Mi"))
        await until(
            lambda: "held back" in (getattr(in_progress(cluster, "web"), "message", None) or ""),
            "held back",
        )
        condition = in_progress(cluster, "web")
        assert condition.reason is None, "not an error: KEP-1287 waits for usage to fall"
        assert "is not above its current memory usage 209715200" in condition.message
        # Still allocated at the new limit, not applied: the runtime keeps the old one.
        status = cluster.pod("web").status.container_statuses or []
        assert str(status[0].allocated_resources["memory"]) == "128Mi"
        assert str(status[0].resources.limits["memory"]) == "256Mi"
        runtime.set_memory_usage(container, 50 * MI)
        await until(lambda: cluster.pod("web").status.resize is None, "applied once usage fell")
        assert in_progress(cluster, "web") is None
        assert str(cluster.pod("web").status.container_statuses[0].resources.limits["memory"]) == (
            "128Mi"
        )
        assert statuses(cluster, "web") == [
            ("InProgress", None),
            ("InProgress", None),
            (None, None),
        ]
        assert not kube_events(cluster, "ResizeError"), "held back is no error"


async def test_a_pod_resized_over_and_over_stops_adding_events_not_resizes() -> None:
    """The recorder's spam filter: 25 Events about one pod, then none for 5 minutes; every
    resize still completes, and a second pod has its own budget."""
    async with agent_on_node() as (cluster, _):
        await start(cluster, "web", "1")
        await start(cluster, "api", "1")
        actuated = len(cluster.written)
        for n in range(14):  # 28 would-be Events: ResizeStarted and ResizeCompleted each
            cpu = "2" if n % 2 == 0 else "1"
            cluster.apply(resize("web", cpu))
            await until(
                lambda cpu=cpu: web_cpu(cluster) == (None, cpu, cpu), f"resize {n} completed"
            )
        cluster.apply(resize("api", "2"))
        await until(lambda: cluster.pod("api").status.resize is None, "api resized")
        about = [p.event.involved_object.name for p in cluster.written if isinstance(p, KUBE)]
        assert about.count("web") == 25  # its container's Pulled, Created, Started, then 22
        assert about.count("api") == 3 + 2
        resized = cluster.written[actuated:]
        reported = [p for p in resized if ev.applied(p) is not None and p.name == "web"]
        assert len(reported) == 14  # each resize applied and reported
