"""How the node agent's writes reach the log: an accepted resize's allocation is held while
the runtime applies it and goes out with what the runtime applied, one record and one log
round trip (what reads the pod's status in between sends it first: test_nodeagent_notes.py)."""

from __future__ import annotations

from schemas import events as ev
from schemas.k8s import ObjectMeta
from schemas.kubeevents import Correlator, event_about, reference
from services.kubelet.heldallocation import HOLD_FOR_ACTUATION_S
from services.kubelet.runtime_fake import FakeRuntime
from tests.unit.kubelet.agentworld import agent_on_node, resize, start, until


def _kinds(batch: list[ev.EventPayload]) -> list[str]:
    return [
        p.event.reason or "" if isinstance(p, ev.KubeEventRecorded) else type(p).__name__
        for p in batch
    ]


async def test_an_accepted_resize_is_allocated_and_actuated_in_one_record() -> None:
    async with agent_on_node() as (cluster, _):
        await start(cluster, "web", "1")
        cluster.settled.clear()
        cluster.apply(resize("web", "2"))
        await until(lambda: cluster.pod("web").status.resize is None, "completed")
        assert [_kinds(batch) for batch in cluster.settled] == [
            ["Allocated", "ResizeStarted", "ResizeCompleted"]
        ]
        allocated = cluster.settled[0][0]
        assert isinstance(allocated, ev.Allocated) and allocated.actuated is not None
        assert allocated.resize_status == ev.ResizeStatusUpdate(resize=None)  # completed
        (app,) = allocated.actuated.containers
        assert str(app.resources.requests["cpu"]) == "2"
        status = cluster.pod("web").status.container_statuses[0]
        assert str(status.resources.requests["cpu"]) == "2"
        assert str(status.allocated_resources["cpu"]) == "2"


async def test_a_started_pod_tells_each_container_started_with_its_running() -> None:
    async with agent_on_node() as (cluster, _):
        await start(cluster, "web", "1")
        *_, started = cluster.settled
        assert _kinds(started) == ["Pulled", "Created", "Started", "PodPhaseChanged"]
        said = [p.event for p in started if isinstance(p, ev.KubeEventRecorded)]
        assert [e.message for e in said] == [
            'Container image "nginx:1.27" already present on machine',
            "Created container: app",
            "Started container app",
        ]
        assert {(e.involved_object.name, e.source.host, e.type) for e in said} == {
            ("web", "n1", "Normal")
        }


async def test_a_slow_runtime_gets_the_allocation_sent_before_it_applies() -> None:
    """KEP-1287's flow when actuation takes time: the allocation and InProgress go out first,
    then the actual resources and completion (heldallocation.HOLD_FOR_ACTUATION_S; that readers
    see InProgress meanwhile: tests/integration/kubelet/test_flow_control.py)."""
    runtime = FakeRuntime(latency={"update_container_resources": 3 * HOLD_FOR_ACTUATION_S})
    async with agent_on_node(runtime=runtime) as (cluster, _):
        await start(cluster, "web", "1")
        cluster.settled.clear()
        cluster.apply(resize("web", "2"))
        await until(lambda: cluster.pod("web").status.resize is None, "completed")
        assert [_kinds(batch) for batch in cluster.settled] == [
            ["Allocated", "ResizeStarted", "Actuated", "ResizeCompleted"]
        ]
        allocated, _, actuated, _ = cluster.settled[0]
        assert isinstance(allocated, ev.Allocated) and allocated.actuated is None
        assert allocated.resize_status == ev.ResizeStatusUpdate(resize="InProgress")
        assert isinstance(actuated, ev.Actuated)
        assert actuated.resize_status == ev.ResizeStatusUpdate(resize=None)


async def test_a_resize_event_is_the_one_its_recorder_would_make_of_it() -> None:
    """The agent names an Event with its recorder and builds it once (nodeagent._event_of):
    the same Event as building it unnamed and correlating it, the reference without a
    resourceVersion, as a kubelet's references to pods are."""
    async with agent_on_node() as (cluster, _):
        await start(cluster, "web", "1")
        cluster.settled.clear()
        cluster.apply(resize("web", "2"))
        await until(lambda: cluster.pod("web").status.resize is None, "completed")
        written = [
            p.event for b in cluster.settled for p in b if isinstance(p, ev.KubeEventRecorded)
        ]
        pod = cluster.pod("web")
        meta = pod.metadata
        for event in written:
            unnamed = event_about(
                reference(
                    "Pod", ObjectMeta(name=meta.name, namespace=meta.namespace, uid=meta.uid)
                ),
                name="",
                namespace=meta.namespace,
                reason=event.reason or "",
                message=event.message or "",
                type_=event.type or "Normal",
                component="kubelet",
                instance="n1",
                host="n1",
            )
            expected = Correlator().correlate(unnamed, 0.0)
            assert event.involved_object.resource_version is None
            assert event.metadata.name and event.metadata.name.startswith("web.")
            assert event.model_copy(update={"metadata": expected.metadata}) == expected
        assert [e.reason for e in written] == ["ResizeStarted", "ResizeCompleted"]
