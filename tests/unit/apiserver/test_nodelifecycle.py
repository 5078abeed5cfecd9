"""The node lifecycle decision (services/apiserver/nodelifecycle.py): a node unheard for the
grace period is Ready=Unknown and tainted unreachable; heard again, Ready and untainted."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from schemas import events as ev
from schemas.k8s import Node, NodeCondition, Taint
from services.apiserver.nodelifecycle import UNREACHABLE, monitor
from tests.factories import node

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
GRACE = timedelta(seconds=50)
REGISTERED = datetime(2026, 11, 27, 11, 0, tzinfo=UTC)


def ready_node(status: str = "True", taints: list[Taint] | None = None) -> Node:
    held = node("node-0")
    held.status.conditions = [
        NodeCondition(type="Ready", status=status, reason="KubeletReady",  # type: ignore[arg-type]
                      last_heartbeat_time=REGISTERED, last_transition_time=REGISTERED)
    ]  # fmt: skip
    held.spec.taints = taints
    return held


def test_a_node_heard_within_the_grace_period_or_never_is_left_as_it_is() -> None:
    assert monitor(ready_node(), NOW - timedelta(seconds=49), NOW, GRACE) == []
    assert monitor(ready_node(), None, NOW, GRACE) == []  # no heartbeats (sampling off)
    assert monitor(node("node-0"), NOW - timedelta(hours=1), NOW, GRACE) == []  # no Ready


def test_a_silent_node_goes_unknown_tainted_unreachable_with_an_event() -> None:
    user_taint = Taint(key="team", value="a", effect="NoSchedule")
    written = monitor(ready_node(taints=[user_taint]), NOW - timedelta(seconds=51), NOW, GRACE)
    condition, recorded, updated = written
    assert isinstance(condition, ev.NodeConditionChanged)
    assert (condition.condition.status, condition.condition.reason) == (
        "Unknown",
        "NodeStatusUnknown",
    )
    assert condition.condition.message == "Kubelet stopped posting node status."
    assert condition.condition.last_heartbeat_time == REGISTERED  # the last one heard
    assert isinstance(recorded, ev.KubeEventRecorded)
    assert (recorded.event.reason, recorded.event.message) == (
        "NodeNotReady",
        "Node node-0 status is now: NodeNotReady",
    )
    assert recorded.event.involved_object.kind == "Node"
    assert isinstance(updated, ev.NodeUpdated)
    assert [(t.key, t.effect, t.time_added) for t in updated.spec.taints or []] == [
        ("team", "NoSchedule", None),
        (UNREACHABLE, "NoSchedule", None),
        (UNREACHABLE, "NoExecute", NOW),
    ]


def test_an_unknown_node_heard_again_is_ready_and_untainted() -> None:
    tainted = [Taint(key=UNREACHABLE, effect="NoSchedule"),
               Taint(key=UNREACHABLE, effect="NoExecute", time_added=REGISTERED)]  # fmt: skip
    written = monitor(ready_node("Unknown", tainted), NOW - timedelta(seconds=1), NOW, GRACE)
    condition, recorded, updated = written
    assert isinstance(condition, ev.NodeConditionChanged)
    assert (condition.condition.status, condition.condition.reason) == ("True", "KubeletReady")
    assert isinstance(recorded, ev.KubeEventRecorded)
    assert recorded.event.reason == "NodeReady"
    assert isinstance(updated, ev.NodeUpdated)
    assert updated.spec.taints is None


def test_taints_follow_the_ready_condition_alone() -> None:
    """Unknown and still silent, but untainted (a user removed them): tainted again; Ready
    with a leftover unreachable taint: removed; each without a new condition."""
    (updated,) = monitor(ready_node("Unknown"), NOW - timedelta(hours=1), NOW, GRACE)
    assert isinstance(updated, ev.NodeUpdated)
    assert {t.effect for t in updated.spec.taints or []} == {"NoSchedule", "NoExecute"}
    leftover = [Taint(key=UNREACHABLE, effect="NoSchedule")]
    (cleared,) = monitor(ready_node("True", leftover), None, NOW, GRACE)
    assert isinstance(cleared, ev.NodeUpdated)
    assert cleared.spec.taints is None
    already = [Taint(key=UNREACHABLE, effect="NoSchedule"),
               Taint(key=UNREACHABLE, effect="NoExecute", time_added=REGISTERED)]  # fmt: skip
    assert monitor(ready_node("Unknown", already), NOW - timedelta(hours=1), NOW, GRACE) == []
