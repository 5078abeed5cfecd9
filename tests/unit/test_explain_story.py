"""The pure story `inplace explain` tells, from records built by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from inplace.core.bus.consumer import Record
from inplace.core.bus.producer import Position
from inplace.core.explain.story import pod_story, render
from schemas import events as ev
from schemas.envelope import Envelope, UserInfo
from schemas.quantity import Quantity
from tests import factories

T0 = datetime(2026, 1, 1, tzinfo=UTC)
IDS = {"namespace": "d", "name": "web", "uid": "u"}


def _records(*payloads: ev.EventPayload, user: UserInfo | None = None) -> list[Record]:
    return [
        Record(
            Position("pods", 0, i),
            Envelope.wrap(p, producer="test", time=T0 + timedelta(seconds=i), user=user),
        )
        for i, p in enumerate(payloads)
    ]


def test_a_deferred_resize_told_with_its_inputs_and_what_freed_the_room() -> None:
    record = ev.DecisionRecord(
        node="n1",
        allocatable={"cpu": "4"},
        allocated={"cpu": "3"},
        requested={"cpu": "2"},
        short=["cpu"],
        holders=[ev.ResourceHolder(pod="d/hog", requests={"cpu": "3"})],
    )
    unschedulable = ev.SchedulingRecord(
        nodes=1,
        requested={"cpu": "1000m"},
        reasons={"Insufficient cpu": 1},
        closest=[ev.NodeFit(node="n1", free={"cpu": "500m"}, reasons=["Insufficient cpu"])],
    )
    flow = factories.resize_flow("d", "web", "n1", "2", "1Gi")
    own = _records(
        ev.PodUnschedulable(**IDS, message="0/1 nodes are available", record=unschedulable),
        ev.PodBound(**IDS, node_name="n1"),
        flow[0],  # Proposed (t=2)
        ev.ResizeStatusChanged(**IDS, resize="Deferred", message="no room", decision=record),
        *flow[1:],  # Allocated t=4, InProgress t=5, Actuated t=6, cleared t=7
        user=UserInfo(username="alice"),
    )
    hog = [
        Record(
            Position("pods", 1, 0),
            Envelope.wrap(
                ev.PodDeleted(namespace="d", name="hog", uid="h"),
                producer="test",
                time=T0 + timedelta(seconds=3.5),
            ),
        )
    ]
    story = pod_story("d/web", own, {"d/hog": hog})
    assert story.node == "n1"
    assert [s.event for s in story.scheduling] == ["PodUnschedulable", "PodBound"]
    assert "closest: n1 (free cpu 500m" in story.scheduling[0].text
    [resize] = story.resizes
    assert (resize.asked_by, resize.outcome) == ("alice", "Completed")
    assert [s.text for s in resize.freed_by] == ["d/hog was deleted"]
    assert resize.durations_ms == {"admission": 2000.0, "actuation": 2000.0, "total": 5000.0}
    deferred = resize.steps[0]
    assert deferred.decision == record
    assert "4 allocatable on node n1, 3 allocated to other pods (d/hog 3)" in deferred.text
    assert resize.retried is not None
    assert resize.retried.text == (
        f"retried at {(T0 + timedelta(seconds=4)).isoformat()} after d/hog was deleted"
    )
    text = "\n".join(render(story))
    assert "freed the room: d/hog was deleted" in text and text.endswith("now: Completed")
    lines = text.splitlines()
    retry = next(i for i, ln in enumerate(lines) if "retried at" in ln)
    assert "after d/hog was deleted" in lines[retry]
    assert "Allocated on node n1" in lines[retry + 1]
    assert "freed the room: d/hog was deleted" in lines[retry - 1]


def test_refused_and_unanswered_resizes() -> None:
    quota = ev.QuotaRefusal(
        quota="q",
        requested={"requests.cpu": "2"},
        used={"requests.cpu": "3"},
        hard={"requests.cpu": "4"},
    )
    refused = ev.ResizeRefused(
        **IDS, code=403, reason="Forbidden", message="exceeded quota: q", quota=quota
    )
    bounds = [factories.cpu_over_container_max()]
    too_big = ev.ResizeRefused(
        **IDS, code=403, reason="Forbidden", message="maximum cpu …", limit_range=bounds
    )
    own = _records(refused, factories.resize_flow("d", "web", "n1", "1", "1Gi")[0])
    story = pod_story("d/web", own)
    as_json = story.model_dump(mode="json")
    assert as_json["resizes"][0]["steps"][0]["quota"] == {
        "quota": "q",
        "requested": {"requests.cpu": "2"},
        "used": {"requests.cpu": "3"},
        "hard": {"requests.cpu": "4"},
    }
    [limited] = pod_story("d/web", _records(too_big)).resizes
    assert limited.steps[0].limit_range == bounds and limited.steps[0].quota is None
    assert [r.outcome for r in story.resizes] == [
        "Refused by the apiserver",
        "Proposed: no kubelet has decided yet",
    ]
    assert story.resizes[0].asked_by == "test (no authenticated user recorded)"
    assert pod_story("d/web", own, upto=0).now == "Refused by the apiserver"


def _at(
    topic: str, partition: int, offset: int, seconds: float, payload: ev.EventPayload
) -> Record:
    return Record(
        Position(topic, partition, offset),
        Envelope.wrap(payload, producer="test", time=T0 + timedelta(seconds=seconds)),
    )


DEFERRED = ev.DecisionRecord(
    node="n1",
    allocatable={"cpu": "4"},
    allocated={"cpu": "3"},
    requested={"cpu": "2"},
    short=["cpu"],
    holders=[
        ev.ResourceHolder(pod="d/hog", requests={"cpu": "2"}),
        ev.ResourceHolder(pod="d/hog2", requests={"cpu": "1"}),
    ],
)


def _deferred_then_freed() -> tuple[list[Record], dict[str, list[Record]]]:
    """web (pods:0, even offsets, t = index): Proposed, Deferred, Allocated, InProgress,
    Actuated, cleared. Meanwhile hog2 (pods:0 offset 3, t=1.2) is evicted, hog (pods:1,
    t=1.5) deleted, and node n1 (nodes:0, t=1.7) grows."""
    flow = factories.resize_flow("d", "web", "n1", "2", "1Gi")
    payloads = [
        flow[0],
        ev.ResizeStatusChanged(**IDS, resize="Deferred", message="no room", decision=DEFERRED),
        *flow[1:],
    ]
    own = [_at("pods", 0, 2 * i, i, p) for i, p in enumerate(payloads)]
    evicted = ev.PodEvicted(namespace="d", name="hog2", uid="h2", node_name="n1", reason="Evicted")
    grown = ev.NodeCapacityChanged(
        name="n1",
        old_capacity={"cpu": Quantity("4")},
        new_capacity={"cpu": Quantity("8")},
        old_allocatable={"cpu": Quantity("4")},
        new_allocatable={"cpu": Quantity("8")},
    )
    others = {
        "d/hog2": [_at("pods", 0, 3, 1.2, evicted)],
        "d/hog": [_at("pods", 1, 0, 1.5, ev.PodDeleted(namespace="d", name="hog", uid="h"))],
        "node/n1": [_at("nodes", 0, 0, 1.7, grown)],
    }
    return own, others


def test_at_an_offset_other_pods_and_the_node_are_cut_there_too() -> None:
    own, others = _deferred_then_freed()
    # As of the Deferred decision (offset 2): nothing after it has happened yet, on the
    # pod's partition (hog2 at offset 3) or elsewhere (hog's deletion, the node's growth).
    [deferred] = pod_story("d/web", own, others, upto=2).resizes
    assert (deferred.outcome, deferred.freed_by, deferred.retried) == ("Deferred", [], None)
    assert "freed the room" not in "\n".join(render(pod_story("d/web", own, others, upto=2)))
    # As of offset 3 of pods:0: hog2's eviction is in, the later events elsewhere are not.
    [waiting] = pod_story("d/web", own, others, upto=3).resizes
    assert [s.text for s in waiting.freed_by] == ["d/hog2 was evicted (Evicted)"]
    assert waiting.outcome == "Deferred"
    # The whole log: every freeing event, and the retry after the last of them.
    [done] = pod_story("d/web", own, others).resizes
    assert [s.text for s in done.freed_by] == [
        "d/hog2 was evicted (Evicted)",
        "d/hog was deleted",
        "node n1 allocatable changed to cpu 8, memory 0",
    ]
    assert done.outcome == "Completed" and done.retried is not None
    assert done.retried.text == (
        f"retried at {(T0 + timedelta(seconds=2)).isoformat()} after "
        "node n1 allocatable changed to cpu 8, memory 0"
    )
    as_json = pod_story("d/web", own, others).model_dump(mode="json")
    assert as_json["resizes"][0]["retried"]["event"] == "Retried"


def test_a_retry_with_nothing_recorded_names_the_periodic_retry() -> None:
    own, _ = _deferred_then_freed()
    [resize] = pod_story("d/web", own).resizes
    assert resize.freed_by == [] and resize.retried is not None
    assert resize.retried.text.endswith(
        "after no recorded change to the holders or the node (the periodic retry)"
    )
    undeferred = pod_story("d/web", [own[0], *own[2:]]).resizes[0]
    assert undeferred.outcome == "Completed" and undeferred.retried is None


def test_statuses_set_with_the_allocation_and_the_actuation_are_told_as_their_own_steps() -> None:
    proposed, allocated, _, actuated, _ = factories.resize_flow("d", "web", "n1", "2", "1Gi")
    own = _records(
        ev.PodBound(**IDS, node_name="n1"),
        proposed,  # t=1
        allocated.model_copy(update={"resize_status": ev.ResizeStatusUpdate(resize="InProgress")}),
        actuated.model_copy(update={"resize_status": ev.ResizeStatusUpdate(resize=None)}),
    )
    [resize] = pod_story("d/web", own).resizes
    assert [(s.event, s.offset) for s in resize.steps] == [
        ("Allocated", 2),
        ("ResizeStatusChanged(InProgress)", 2),
        ("Actuated", 3),
        ("ResizeStatusChanged(cleared)", 3),
    ]
    assert resize.outcome == "Completed"
    assert resize.durations_ms == {"admission": 1000.0, "actuation": 1000.0, "total": 2000.0}


def test_an_allocation_applied_first_is_told_as_allocated_actuated_and_completed() -> None:
    proposed, applied = factories.applied_in_one_flow("d", "web", "n1", "2", "1Gi")
    own = _records(ev.PodBound(**IDS, node_name="n1"), proposed, applied)
    [resize] = pod_story("d/web", own).resizes
    assert [(s.event, s.offset) for s in resize.steps] == [
        ("Allocated", 2),
        ("Actuated", 2),
        ("ResizeStatusChanged(cleared)", 2),
    ]
    assert "reported with the allocation" in resize.steps[1].text
    assert resize.outcome == "Completed"
    assert resize.durations_ms == {"admission": 1000.0, "actuation": 0.0, "total": 1000.0}
