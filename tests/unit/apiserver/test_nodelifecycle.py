"""The node lifecycle decision (services/apiserver/nodelifecycle.py): a node unheard for the
grace period is Ready=Unknown and tainted unreachable; heard again, Ready and untainted."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from schemas import events as ev
from schemas.k8s import Node, NodeCondition, Pod, PodCondition, Taint, Toleration
from schemas.taints import toleration_seconds
from services.apiserver.nodelifecycle import UNREACHABLE, evictions, monitor, pods_not_ready
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


def pod_tolerating(name: str, *tolerations: Toleration) -> Pod:
    return Pod.model_validate(
        {"metadata": {"name": name, "namespace": "team", "uid": f"uid-{name}"},
         "spec": {"nodeName": "node-0", "containers": [{"name": "c", "image": "app"}],
                  "tolerations": [t.model_dump(by_alias=True, exclude_none=True)
                                  for t in tolerations]}}
    )  # fmt: skip


UNREACHABLE_FOR = {s: Toleration(key=UNREACHABLE, operator="Exists", effect="NoExecute",
                                 toleration_seconds=s) for s in (0, 60, 300)}  # fmt: skip


def test_a_noexecute_taint_evicts_who_does_not_tolerate_it_now_others_when_due() -> None:
    tainted = ready_node("Unknown", [Taint(key=UNREACHABLE, effect="NoSchedule"),
                                     Taint(key=UNREACHABLE, effect="NoExecute",
                                           time_added=NOW - timedelta(seconds=61))])  # fmt: skip
    pods = [
        pod_tolerating("untolerating"),
        pod_tolerating("sixty", UNREACHABLE_FOR[60]),
        pod_tolerating("default", UNREACHABLE_FOR[300]),
        pod_tolerating("forever", Toleration(operator="Exists")),
    ]
    written = evictions(tainted, pods, NOW)
    deleted = [p.name for p in written if isinstance(p, ev.PodDeleted)]
    assert deleted == ["untolerating", "sixty"]
    events = [p.event for p in written if isinstance(p, ev.KubeEventRecorded)]
    assert (events[0].reason, events[0].message) == (
        "TaintManagerEviction",
        "Marking for deletion Pod team/untolerating",
    )
    assert events[0].involved_object.kind == "Pod"
    assert evictions(ready_node(), pods, NOW) == []  # no NoExecute taint: nobody


def test_a_taint_without_time_added_evicts_only_who_does_not_tolerate_it() -> None:
    user_taint = ready_node(taints=[Taint(key="maintenance", effect="NoExecute")])
    pods = [pod_tolerating("a"), pod_tolerating("b", Toleration(key="maintenance",
                                                               operator="Exists",
                                                               toleration_seconds=1))]  # fmt: skip
    assert [p.name for p in evictions(user_taint, pods, NOW) if isinstance(p, ev.PodDeleted)] == [
        "a"
    ]


@pytest.mark.parametrize(
    ("tolerations", "seconds"),
    [
        ([], 0.0),
        ([UNREACHABLE_FOR[300]], 300.0),
        ([UNREACHABLE_FOR[300], UNREACHABLE_FOR[60]], 300.0),  # the first that matches counts
        ([Toleration(operator="Exists")], None),
        (
            [
                Toleration(
                    key=UNREACHABLE, operator="Exists", effect="NoExecute", toleration_seconds=-5
                )
            ],
            0.0,
        ),
        ([Toleration(key="other", operator="Exists")], 0.0),
    ],
)
def test_toleration_seconds(tolerations: list[Toleration], seconds: float | None) -> None:
    taints = [Taint(key=UNREACHABLE, effect="NoExecute")]
    assert toleration_seconds(tolerations, taints) == seconds


def with_ready(pod: Pod, status: str) -> Pod:
    pod.status.conditions = [
        PodCondition(type="ContainersReady", status="True"),
        PodCondition(type="Ready", status=status),  # type: ignore[arg-type]
    ]
    return pod


def test_pods_of_a_node_not_ready_are_marked_not_ready_once() -> None:
    """MarkPodsNotReady: each Ready pod of an Unknown node gets Ready=False and a Warning
    NodeNotReady Event; a pod not ready already, and every pod of a Ready node, is left."""
    pods = [with_ready(pod_tolerating("a"), "True"), with_ready(pod_tolerating("b"), "False")]
    written = pods_not_ready(ready_node("Unknown"), pods, NOW)
    [marked] = [p for p in written if isinstance(p, ev.PodReadinessChanged)]
    assert (marked.namespace, marked.name, marked.uid, marked.ready) == (
        "team",
        "a",
        "uid-a",
        False,
    )
    [event] = [p.event for p in written if isinstance(p, ev.KubeEventRecorded)]
    assert (event.type, event.reason, event.message) == (
        "Warning",
        "NodeNotReady",
        "Node is not ready",
    )
    assert (event.involved_object.kind, event.involved_object.name) == ("Pod", "a")
    assert event.reporting_component == "node-controller"
    assert pods_not_ready(ready_node("True"), pods, NOW) == []
    assert pods_not_ready(node("node-0"), pods, NOW) == []  # no Ready condition yet
