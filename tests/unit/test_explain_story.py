"""The pure story `inplace explain` tells, from records built by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from inplace.core.bus.consumer import Record
from inplace.core.bus.producer import Position
from inplace.core.explain.story import pod_story, render
from schemas import events as ev
from schemas.envelope import Envelope, UserInfo
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
    text = "\n".join(render(story))
    assert "freed the room: d/hog was deleted" in text and text.endswith("now: Completed")


def test_refused_and_unanswered_resizes() -> None:
    refused = ev.ResizeRefused(**IDS, code=403, reason="Forbidden", message="exceeded quota: q")
    own = _records(refused, factories.resize_flow("d", "web", "n1", "1", "1Gi")[0])
    story = pod_story("d/web", own)
    assert [r.outcome for r in story.resizes] == [
        "Refused by the apiserver",
        "Proposed: no kubelet has decided yet",
    ]
    assert story.resizes[0].asked_by == "test (no authenticated user recorded)"
    assert pod_story("d/web", own, upto=0).now == "Refused by the apiserver"
