"""How the node agent's writes reach the log: an accepted resize's allocation is sent while
the runtime applies it and waited for together with its Actuated, one log round trip for the
two (what reads the pod's status in between waits for it first: test_nodeagent_notes.py)."""

from __future__ import annotations

from schemas import events as ev
from tests.unit.kubelet.agentworld import agent_on_node, resize, start, until


def _kinds(batch: list[ev.EventPayload]) -> list[str]:
    return [
        p.event.reason or "" if isinstance(p, ev.KubeEventRecorded) else type(p).__name__
        for p in batch
    ]


async def test_an_accepted_resize_is_allocated_and_actuated_in_one_wait() -> None:
    async with agent_on_node() as (cluster, _):
        await start(cluster, "web", "1")
        cluster.settled.clear()
        cluster.apply(resize("web", "2"))
        await until(lambda: cluster.pod("web").status.resize is None, "completed")
        assert [_kinds(batch) for batch in cluster.settled] == [
            ["Allocated", "ResizeStarted", "Actuated", "ResizeCompleted"]
        ]


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
