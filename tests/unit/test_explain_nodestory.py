"""The pure node story `inplace explain node/NAME` tells: capacity changes, evictions and
starvation periods, from records built by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from inplace.core.bus.consumer import Record
from inplace.core.bus.producer import Position
from inplace.core.explain.nodestory import node_story, render_node
from schemas import events as ev
from schemas.envelope import Envelope
from schemas.k8s import NodeCondition, Taint
from schemas.quantity import Quantity
from tests import factories

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _at(seconds: float, payload: ev.EventPayload, offset: int = 0) -> Record:
    topic = ev.NODES if isinstance(payload, ev.NodeEvent) else ev.PODS
    return Record(
        Position(topic, 0, offset),
        Envelope.wrap(payload, producer="test", time=T0 + timedelta(seconds=seconds)),
    )


def _q(**amounts: str) -> dict[str, Quantity]:
    return {k: Quantity(v) for k, v in amounts.items()}


def _ids(name: str) -> dict[str, str]:
    return {"namespace": "d", "name": name, "uid": f"u-{name}"}


def _deferred(name: str) -> ev.ResizeStatusChanged:
    decision = ev.DecisionRecord(
        node="n1",
        allocatable={"cpu": "4"},
        allocated={"cpu": "3500m"},
        requested={"cpu": "1"},
        short=["cpu"],
        holders=[ev.ResourceHolder(pod="d/hog", requests={"cpu": "3"})],
    )
    return ev.ResizeStatusChanged(
        **_ids(name), resize="Deferred", message="no room", decision=decision
    )


def _cordoned(name: str) -> ev.NodeUpdated:
    node = factories.node(name)
    node.metadata.labels = {"disk": "ssd"}
    node.spec.unschedulable = True
    node.spec.taints = [Taint(key="dedicated", value="db", effect="NoSchedule")]
    return ev.NodeUpdated(name=name, metadata=node.metadata, spec=node.spec)


def test_capacity_changes_and_conditions_in_log_order() -> None:
    own = [
        _at(0, ev.NodeRegistered(name="n1", node=factories.node("n1", "4", "8Gi"))),
        _at(
            10,
            ev.NodeCapacityChanged(
                name="n1",
                old_capacity=_q(cpu="4", memory="8Gi", pods="110"),
                new_capacity=_q(cpu="8", memory="16Gi", pods="110"),
                old_allocatable=_q(cpu="4", memory="8Gi"),
                new_allocatable=_q(cpu="7500m", memory="15Gi"),
            ),
        ),
        _at(20, ev.NodeResizeFailed(name="n1", reason="Hotplug", message="no such CPU", attempt=1)),
        _at(
            30,
            ev.NodeConditionChanged(
                name="n1",
                condition=NodeCondition(
                    type="ResourceStarvation", status="True", reason="HotUnplug"
                ),
            ),
        ),
        _at(35, _cordoned("n1")),
        _at(40, ev.NodeDeleted(name="n1")),
    ]
    story = node_story("n1", own, [])
    assert [c.event for c in story.changes] == [
        "NodeRegistered",
        "NodeCapacityChanged",
        "NodeResizeFailed",
        "NodeConditionChanged",
        "NodeUpdated",
        "NodeDeleted",
    ]
    assert [c.text for c in story.changes] == [
        "registered, allocatable cpu 4, memory 8Gi",
        "capacity cpu 4, memory 8Gi -> cpu 8, memory 16Gi; "
        "allocatable cpu 4, memory 8Gi -> cpu 7500m, memory 15Gi",
        "resize failed: no such CPU",
        "condition ResourceStarvation=True (HotUnplug)",
        "updated: cordoned; labels disk=ssd; taints dedicated=db:NoSchedule",
        "deleted",
    ]
    assert story.changes[1].time == T0 + timedelta(seconds=10)
    assert story.evictions == [] and story.starvation == []
    lines = list(render_node(story))
    assert lines[:2] == ["node n1", "capacity and conditions:"]
    assert lines[3].endswith(
        "capacity cpu 4, memory 8Gi -> cpu 8, memory 16Gi; "
        "allocatable cpu 4, memory 8Gi -> cpu 7500m, memory 15Gi"
    )
    assert lines[-4:] == [
        "evictions:",
        "  none",
        "starvation (resizes Deferred on this node):",
        "  none",
    ]


def test_evictions_and_starvation_periods() -> None:
    pods = [
        _at(
            1,
            ev.PodEvicted(
                **_ids("be"),
                node_name="n1",
                reason="Evicted",
                message="The node was low on resource: cpu.",
            ),
        ),
        _at(2, ev.PodEvicted(**_ids("bu"), node_name="n1", reason="Evicted")),
        _at(3, _deferred("web")),
        _at(4, _deferred("web")),  # deferred again: the same period
        _at(5, _deferred("db")),
        _at(6, factories.resize_flow("d", "other", "n1", "1", "1Gi")[1]),  # never waited
        _at(7.5, factories.resize_flow("d", "web", "n1", "1", "1Gi")[1]),  # Allocated
    ]
    story = node_story("n1", [], pods)
    assert [(e.event, e.text) for e in story.evictions] == [
        ("PodEvicted", "d/be: The node was low on resource: cpu."),
        ("PodEvicted", "d/bu: Evicted"),
    ]
    web, db = story.starvation
    assert (web.pod, web.since, web.until, web.waited_ms) == (
        "d/web",
        T0 + timedelta(seconds=3),
        T0 + timedelta(seconds=7.5),
        4500.0,
    )
    assert "cpu: 4 allocatable on node n1, 3500m allocated to other pods (d/hog 3)" in web.inputs
    assert (db.pod, db.until, db.waited_ms) == ("d/db", None, None)
    text = "\n".join(render_node(story))
    assert "capacity and conditions:\n  nothing on record" in text
    assert "The node was low on resource: cpu." in text
    assert "d/web since " in text and "(4500.0 ms)" in text
    assert f"d/db since {(T0 + timedelta(seconds=5)).isoformat()} still waiting: cpu: 4" in text
