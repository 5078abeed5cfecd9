"""The event types the scheduler folds; the other records of `pods` and `nodes` are skipped
before decoding (issue 16, `headers.of_types`).

Every field the scheduler reads (a placed pod's KEP-1287 demand, its phase and node, a pending
pod's spec, PodScheduled condition and resourceVersion for its Events, a node's allocatable,
labels, taints and cordon) comes out the same as when it folds everything:
tests/unit/scheduler/test_reads.py folds a stream of every type both ways and compares.

Of a placed pod that goes cold it keeps only the fields it prices the pod from (`placed_json`):
under a resize load over 50,000 pods nearly every record finds its pod cold, and decoding and
writing back whole pods was a third of the scheduler's CPU. A pending pod is kept whole:
placing it reads its selectors, affinity, tolerations and conditions.
"""

from __future__ import annotations

from pydantic.main import IncEx

from inplace.core.projection.podstore import pod_json
from schemas import events as ev
from schemas.k8s import Pod

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


# A placed pod's fields the scheduler reads (schemas.demand, is_resize_infeasible, its node,
# phase and scheduler), and those the fold of the events above reads beside them: generation
# and observedGeneration (a completion of an older spec leaves status.resize Proposed), each
# container's image (PodUpdated bumps the generation when an image changes), the owner
# references (the `controller` header of the records the scheduler writes).
_CONTAINER: IncEx = {"name", "image", "resources", "resize_policy", "restart_policy"}
_CONTAINER_STATUS: IncEx = {"name", "allocated_resources", "resources"}
PLACED_POD_FIELDS: IncEx = {
    "api_version": True,
    "kind": True,
    "metadata": {
        "name",
        "namespace",
        "uid",
        "resource_version",
        "generation",
        "owner_references",
        "deletion_timestamp",
        "deletion_grace_period_seconds",
    },
    "spec": {
        "containers": {"__all__": _CONTAINER},
        "init_containers": {"__all__": _CONTAINER},
        "node_name": True,
        "scheduler_name": True,
        "restart_policy": True,
        "priority": True,
        "priority_class_name": True,
        "overhead": True,
        "resources": True,
    },
    "status": {
        "observed_generation": True,
        "phase": True,
        "resize": True,
        "allocated_resources": True,
        "resources": True,
        "container_statuses": {"__all__": _CONTAINER_STATUS},
        "init_container_statuses": {"__all__": _CONTAINER_STATUS},
    },
}
_serializer = Pod.__pydantic_serializer__


def placed_json(pod: Pod) -> bytes:
    """What the scheduler keeps of a pod that goes cold (its read model's `pod_form`): the
    fields above of a pod placed and still running, every field of any other."""
    if pod.spec.node_name is None or pod.status.phase in ("Succeeded", "Failed"):
        return pod_json(pod)
    raw: bytes = _serializer.to_json(
        pod, by_alias=True, exclude_none=True, include=PLACED_POD_FIELDS
    )
    return raw
