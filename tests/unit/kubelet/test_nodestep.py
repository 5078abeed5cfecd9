"""The node agent's reaction to a node resize, decided without I/O (services/kubelet/nodestep.py):
whether anything moved, what a hot unplug evicts between its two conditions, and what a failed
resync says."""

from __future__ import annotations

from schemas import events as ev
from schemas.k8s import NodeStatus, NodeSwapStatus, NodeSystemInfo
from schemas.quantity import Quantity
from services.kubelet.admission import NodeAllocation
from services.kubelet.noderesize import FAILED_NODE_RESIZE, RESOURCE_STARVATION
from services.kubelet.nodestep import capacity_change, resync_failure, resync_recovered, unplug
from tests.unit.kubelet.test_noderesize import best_effort, burstable, guaranteed

GI = 2**30


def status(memory: str, cpu: str = "4", *, swap: int | None = None) -> NodeStatus:
    values = {"cpu": Quantity(cpu), "memory": Quantity(memory)}
    return NodeStatus(
        capacity=dict(values),
        allocatable=dict(values),
        node_info=NodeSystemInfo(swap=NodeSwapStatus(capacity=swap)) if swap else None,
    )


def checkpoint(memory: str, *pods: object, cpu: str = "4") -> NodeAllocation:
    allocation = NodeAllocation(
        name="n1", allocatable={"cpu": Quantity(cpu), "memory": Quantity(memory)}
    )
    for pod in pods:
        allocation = allocation.with_pod(pod)  # type: ignore[arg-type]
    return allocation


def test_nothing_moved_is_no_change() -> None:
    now = status("8Gi")
    assert capacity_change(now, checkpoint("8Gi"), None, 0) is None
    assert capacity_change(now, checkpoint("8Gi"), dict(now.capacity or {}), 0) is None


def test_a_failed_resync_is_retried_though_nothing_moved() -> None:
    now = status("8Gi")
    change = capacity_change(now, checkpoint("8Gi"), dict(now.capacity or {}), 2)
    assert change is not None
    assert change.resync_requested and not change.starved


def test_hotplug_moves_allocatable_and_requests_a_resync() -> None:
    before, after = status("8Gi"), status("12Gi")
    change = capacity_change(after, checkpoint("8Gi"), dict(before.capacity or {}), 0)
    assert change is not None
    assert change.allocatable["memory"] == Quantity("12Gi")
    assert change.old_capacity["memory"] == Quantity("8Gi")
    assert change.capacity["memory"] == Quantity("12Gi")
    assert change.resync_requested and not change.starved


def test_swap_counts_in_the_capacity_it_resyncs_to() -> None:
    # Only the swap moved: allocatable is unchanged, the swap limits are not.
    before = status("8Gi", swap=4 * GI)
    after = status("8Gi", swap=6 * GI)
    last = capacity_change(before, checkpoint("4Gi"), None, 0)
    assert last is not None
    change = capacity_change(after, checkpoint("8Gi"), last.capacity, 0)
    assert change is not None and change.resync_requested
    assert change.capacity["swap"] == Quantity(str(6 * GI))


def test_allocatable_alone_moving_is_a_change_without_a_resync_request() -> None:
    # The checkpoint was admitted against less (e.g. a restart with reserved resources).
    now = status("8Gi")
    change = capacity_change(now, checkpoint("6Gi"), dict(now.capacity or {}), 0)
    assert change is not None
    assert not change.resync_requested and not change.starved


def test_unplug_below_what_runs_is_starved() -> None:
    pods = (guaranteed("g", "3Gi"), burstable("b", "3Gi"))
    change = capacity_change(status("4Gi"), checkpoint("8Gi", *pods), None, 0)
    assert change is not None and change.starved


def test_unplug_evicts_between_a_true_and_a_false_starvation_condition() -> None:
    admitted = checkpoint("8Gi", guaranteed("g", "3Gi"), burstable("b", "3Gi"), best_effort("e"))
    allocatable = {"cpu": Quantity("4"), "memory": Quantity("4Gi")}
    usage = {"ns/e": {"memory": Quantity("1Gi")}}
    step = unplug(allocatable, list(admitted.pods.values()), usage)
    # BestEffort first (it holds memory by usage), then Burstable; the Guaranteed pod stays.
    assert step.evict == ["ns/e", "ns/b"]
    assert step.before.type == RESOURCE_STARVATION and step.before.status == "True"
    assert step.after.type == RESOURCE_STARVATION and step.after.status == "False"
    assert step.message.startswith("The node was low on resource: memory.")


def test_unplug_that_still_fits_evicts_nothing() -> None:
    admitted = checkpoint("8Gi", guaranteed("g", "1Gi"))
    allocatable = {"cpu": Quantity("4"), "memory": Quantity("4Gi")}
    step = unplug(allocatable, list(admitted.pods.values()), {})
    assert step.evict == []
    assert step.before.status == "False" and step.after.status == "False"


def test_a_failed_resync_says_so_three_ways() -> None:
    failed, condition, event = resync_failure("n1", "no swap for ns/p", 3)
    assert failed == ev.NodeResizeFailed(
        name="n1", reason="FailedNodeResize", message="no swap for ns/p", attempt=3
    )
    assert condition.name == "n1"
    assert condition.condition.type == FAILED_NODE_RESIZE
    assert condition.condition.status == "True"
    assert condition.condition.message == "no swap for ns/p"
    assert event.event.type == "Warning" and event.event.reason == "FailedNodeResize"
    assert event.event.involved_object.kind == "Node"
    assert event.event.involved_object.name == "n1"
    assert event.event.metadata.namespace == "default"
    recovered = resync_recovered("n1")
    assert recovered.condition.type == FAILED_NODE_RESIZE
    assert recovered.condition.status == "False"
