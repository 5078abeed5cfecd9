"""The event types the scheduler folds; the other records of `pods` and `nodes` are skipped
before decoding (issue 16, `headers.of_types`).

Every field the scheduler reads (a placed pod's KEP-1287 demand, its phase and node, a pending
pod's spec, PodScheduled condition and resourceVersion for its Events, a node's allocatable,
labels, taints and cordon) comes out the same as when it folds everything:
tests/unit/scheduler/test_reads.py folds a stream of every type both ways and compares.

Of a placed pod that goes cold it keeps only the fields it prices the pod from (`placed_json`:
`schemas.podview.RESOURCE_FIELDS`). Under a resize load over 50,000 pods nearly every record
finds its pod cold, and decoding and writing back whole pods was a third of the scheduler's
CPU. A pending pod is kept whole: placing it reads its selectors, affinity, tolerations and
conditions.
"""

from __future__ import annotations

from inplace.core.projection.podstore import pod_json
from schemas import events as ev
from schemas.k8s import Pod
from schemas.podview import is_terminal, resource_json

READS: frozenset[str] = frozenset(
    {
        ev.PodCreated.TYPE,  # the pod itself: spec requests, schedulerName, placement, priority
        ev.PodUpdated.TYPE,  # resourceVersion of a pending pod, named by its FailedScheduling Event
        ev.ResizeProposed.TYPE,  # desired requests (spec), status.resize Proposed
        ev.ResizeStatusChanged.TYPE,  # Infeasible (or no longer): only what is granted counts
        ev.Allocated.TYPE,  # allocatedResources: part of max(spec, allocated, actual)
        ev.Actuated.TYPE,  # status resources: part of max(spec, allocated, actual)
        ev.PodBound.TYPE,  # spec.nodeName: placed, no longer pending
        ev.PodUnschedulable.TYPE,  # the PodScheduled=False message: said once per reason
        ev.PodPhaseChanged.TYPE,  # a terminal phase frees the node
        ev.PodEvicted.TYPE,  # Failed on its node: the node gets the room back
        ev.PodDeleted.TYPE,  # gone: its node gets the room back
        ev.NodeRegistered.TYPE,  # the node: allocatable, labels, taints, unschedulable
        ev.NodeUpdated.TYPE,  # labels, taints, cordon: may let pending pods in
        ev.NodeCapacityChanged.TYPE,  # allocatable moved (KEP-3953): may let pending pods in
        ev.NodeDeleted.TYPE,  # no longer a place for pods
    }
)

# What the rest change, none of which the scheduler reads.
SKIPS: dict[str, str] = {
    ev.PodReadinessChanged.TYPE: "the Ready condition (placement reads no readiness)",
    ev.ContainerRestarted.TYPE: "restart count and container state of a bound pod",
    ev.ResizeRefused.TYPE: "nothing (a refused resize changes no object); it only re-priced",
    ev.NodeConditionChanged.TYPE: "node conditions (placement reads labels, taints, cordon)",
    ev.NodeResizeFailed.TYPE: "only the node's resourceVersion, which the scheduler never sends",
}


def placed_json(pod: Pod) -> bytes:
    """What the scheduler keeps of a pod that goes cold (its read model's `pod_form`): the
    resource fields of a pod placed and still running (schemas.demand prices those), every
    field of any other."""
    if pod.spec.node_name is None or is_terminal(pod):
        return pod_json(pod)
    return resource_json(pod)
