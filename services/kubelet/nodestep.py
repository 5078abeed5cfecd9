"""The node agent's reaction to a node resize (KEP-3953) as pure functions, in the shape of
resizestep.py: (the node as the log has it, the agent's checkpoint, what it last applied) →
what to do and the log events to write. The node agent (nodeagent.py) keeps the I/O: it
measures usage, writes what these return, evicts, and updates containers in the runtime.

The maths is noderesize.py's; this is the order of one reaction, the KEP's:
1. `capacity_change`: did allocatable or capacity move (or did the last resync fail, which
   is retried from the top)? Nothing to do otherwise.
2. `unplug` (only when the admitted pods no longer fit): the ResourceStarvation condition
   before, the pods to evict in order with their message, and the condition once they are gone.
3. The resync (noderesize.resync_plan) of swap limits and OOM score adj; when a step of it
   fails, `resync_failure` is what the kubelet says (NodeResizeFailed, the FailedNodeResize
   condition and a Warning Event), and `resync_recovered` what it says once one succeeds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from schemas import events as ev
from schemas.k8s import NodeCondition, NodeStatus, ObjectReference, ResourceList
from schemas.keys import pod_key
from schemas.kubeevents import event_about
from schemas.nodeswap import planning_capacity
from schemas.podview import PodLike
from schemas.quantity import Quantity
from services.kubelet.admission import NodeAllocation
from services.kubelet.noderesize import (
    eviction_message,
    evictions,
    node_resize_condition,
    starvation_condition,
    starved_resources,
)

__all__ = [
    "CapacityChange",
    "Unplug",
    "capacity_change",
    "resync_failure",
    "resync_recovered",
    "unplug",
]


@dataclass(frozen=True)
class CapacityChange:
    """What moved, and what reacting to it takes."""

    allocatable: ResourceList  # the node's new allocatable: the checkpoint admits against it
    old_capacity: ResourceList  # what the containers' swap limits and OOM adj were set for
    capacity: ResourceList  # planning capacity (swap included) to resync them to
    resync_requested: bool  # the capacity moved, or the last resync failed: a resync request
    starved: bool  # the admitted pods no longer fit: evict before resyncing (hot unplug)


def capacity_change(
    status: NodeStatus,
    checkpoint: NodeAllocation,
    last_capacity: ResourceList | None,
    failed_resyncs: int,
) -> CapacityChange | None:
    """The change the node's status shows against the agent's checkpoint and the capacity it
    last resynced to (`last_capacity`; None: none yet, the status's own counts); None when
    nothing moved and no failed resync waits to be retried."""
    allocatable = dict(status.allocatable or {})
    capacity = planning_capacity(status)
    old_capacity = last_capacity if last_capacity is not None else capacity
    if (
        allocatable == dict(checkpoint.allocatable)
        and capacity == old_capacity
        and not failed_resyncs
    ):
        return None
    pods = list(checkpoint.pods.values())
    return CapacityChange(
        allocatable=allocatable,
        old_capacity=old_capacity,
        capacity=capacity,
        resync_requested=capacity != old_capacity or failed_resyncs > 0,
        starved=bool(starved_resources(allocatable, pods)),
    )


@dataclass(frozen=True)
class Unplug:
    """A hot unplug's evictions, between the node's ResourceStarvation condition before them
    (True) and after them (False once the rest fit)."""

    before: NodeCondition
    evict: list[str]  # pod keys, in eviction order
    message: str  # each evicted pod's status.message and Warning Event
    after: NodeCondition


def unplug(
    allocatable: Mapping[str, Quantity],
    pods: list[PodLike],
    usage: Mapping[str, Mapping[str, Quantity]],
) -> Unplug:
    """`pods`: the admitted pods with their allocation as spec (NodeAllocation.pods);
    `usage`: measured memory per pod key (a BestEffort pod requests nothing but holds some)."""
    evict = evictions(allocatable, pods, usage)
    gone = set(evict)
    return Unplug(
        before=starvation_condition(allocatable, pods),
        evict=evict,
        message=eviction_message(allocatable, pods),
        after=starvation_condition(allocatable, [p for p in pods if pod_key(p) not in gone]),
    )


def resync_failure(
    node: str, error: str, attempt: int
) -> tuple[ev.NodeResizeFailed, ev.NodeConditionChanged, ev.KubeEventRecorded]:
    """A resync step failed (KEP-3953: retried from step 1 "along with a FailedNodeResize
    event and condition"): the log event, the condition, and the Warning Event (in the
    default namespace, where Kubernetes puts Node events; the node's recorder names it and
    decides whether it is written)."""
    event = event_about(
        ObjectReference(kind="Node", name=node, api_version="v1"),
        name="",  # the recorder names it (schemas.kubeevents.Correlator)
        namespace="default",
        reason="FailedNodeResize",
        message=f"node resize resync failed: {error}",
        type_="Warning",
        component="kubelet",
        instance=node,
        host=node,
    )
    return (
        ev.NodeResizeFailed(name=node, reason="FailedNodeResize", message=error, attempt=attempt),
        ev.NodeConditionChanged(name=node, condition=node_resize_condition(error)),
        ev.KubeEventRecorded(event=event),
    )


def resync_recovered(node: str) -> ev.NodeConditionChanged:
    """A resync succeeded after failing: FailedNodeResize goes False."""
    return ev.NodeConditionChanged(name=node, condition=node_resize_condition(None))
