"""What one pod takes from its node, in the integers kube-scheduler compares (issue 6, 16).

A placed pod counts KEP-1287's "Scheduler and API Server Interaction":
- no resize, Proposed, InProgress, Deferred: per container, the max of the desired requests
  (spec) and what the node already granted (`allocatedResources`, `status...resources`). The
  scheduler must be pessimistic and assume a pending resize will be accepted, and a shrink keeps
  its old size until the kubelet has actually applied it.
- Infeasible: only what the node granted, since the kubelet will never apply that spec.
This is Kubernetes' `determineContainerReqs` (component-helpers/resource). Containers are then
aggregated by `schemas.resources` (sidecars, init-container peak, overhead).

The rule lives here, not in the scheduler, because the projection stores each pod's demand
beside it (`demand_json`, the `pods.demand` column): a scheduler starting from the projection
sums its nodes from those rows instead of decoding and pricing every pod (~25 µs a pod).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Final

from schemas.k8s import (
    RESOURCE_CPU,
    RESOURCE_MEMORY,
    Container,
    ResourceList,
    ResourceRequirements,
)
from schemas.podview import (
    ContainerView,
    ObjectMetaView,
    PodLike,
    PodResources,
    PodSpecView,
    PodStatusView,
)
from schemas.quantity import ZERO, Quantity
from schemas.resources import (
    container_requests,
    granted_requests,
    is_resize_infeasible,
    pod_requests,
    resize_aware_containers,
    scheduling_pod_level_requests,
    scheduling_requests,
)

__all__ = [
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "PodDemand",
    "amount",
    "demand_json",
    "effective_requests",
    "pod_demand",
    "priced_row",
]

# pkg/scheduler/util: scoring counts a container without a cpu/memory request as requesting
# this much, so best-effort pods still spread instead of piling onto one "empty" node.
DEFAULT_MILLI_CPU_REQUEST: Final = 100
DEFAULT_MEMORY_REQUEST: Final = 200 * 1024 * 1024

_NON_MISSING: Final[ResourceList] = {
    RESOURCE_CPU: Quantity.from_milli(DEFAULT_MILLI_CPU_REQUEST),
    RESOURCE_MEMORY: Quantity.from_int(DEFAULT_MEMORY_REQUEST),
}


def amount(name: str, quantity: Quantity) -> int:
    """The integer kube-scheduler compares for a resource: milli-cpu, else whole units (bytes).

    Both round up (away from zero), as Quantity.MilliValue/Value do.
    """
    return quantity.milli_value() if name == RESOURCE_CPU else quantity.value()


# --- what one pod takes from its node -------------------------------------------------------------


def _with_container_requests(
    pod: PodLike, regular: list[ResourceList], init: list[ResourceList]
) -> PodResources:
    """A bare copy of `pod`'s resource fields whose containers request exactly the given lists
    (and whose pod-level requests are what it holds by KEP-1287's rule).

    schemas.resources owns Kubernetes' aggregation (sidecars, init-container peak, pod-level
    requests, overhead); feeding it per-container requests chosen here keeps one definition.
    Every field is given: `model_construct` looks up each missing field's default, and that
    (an `inspect.signature` per default factory) was most of pricing a running pod.
    """

    def bare(container: ContainerView | Container, requests: ResourceList) -> ContainerView:
        return ContainerView.model_construct(
            name=container.name,
            resources=ResourceRequirements.model_construct(requests=requests, limits=None),
            resize_policy=None,
            restart_policy=container.restart_policy,
        )

    init_containers = pod.spec.init_containers or []
    pod_level = (
        ResourceRequirements.model_construct(
            requests=scheduling_pod_level_requests(pod), limits=None
        )
        if pod.spec.resources is not None
        else None
    )
    spec = PodSpecView.model_construct(
        init_containers=[bare(c, r) for c, r in zip(init_containers, init, strict=True)] or None,
        containers=[bare(c, r) for c, r in zip(pod.spec.containers, regular, strict=True)],
        restart_policy="Always",
        node_name=None,
        scheduler_name=None,
        priority_class_name=None,
        priority=None,
        overhead=pod.spec.overhead,
        resources=pod_level,
    )
    return PodResources.model_construct(metadata=_NO_META, spec=spec, status=_NO_STATUS)


_NO_META, _NO_STATUS = ObjectMetaView(), PodStatusView()  # shared, never changed


def _granted_anywhere(pod: PodLike) -> bool:
    """Has the kubelet reported anything for the pod (else every container counts its spec,
    as for the pods being scheduled, and the fast paths apply)?"""
    statuses = [*(pod.status.init_container_statuses or []), *(pod.status.container_statuses or [])]
    return any(granted_requests(s) is not None for s in statuses)


def effective_requests(pod: PodLike) -> ResourceList:
    """The pod's requests as the scheduler counts them (KEP-1287, schemas.resources)."""
    return scheduling_requests(pod)


@dataclass(frozen=True, slots=True)
class PodDemand:
    """What one pod takes from its node, in the integers the scheduler compares.

    `cpu` is milli-cpu, `memory` bytes, `others` every other requested resource (name, units),
    zero requests dropped as kube-scheduler ignores them. `non_zero_*` are for scoring only:
    the same requests with the 100m / 200Mi defaults for containers that set none.
    """

    cpu: int
    memory: int
    others: tuple[tuple[str, int], ...]
    non_zero_cpu: int
    non_zero_memory: int

    def requests(self) -> dict[str, int]:
        """All non-zero requests by resource name."""
        result = dict(self.others)
        if self.cpu:
            result[RESOURCE_CPU] = self.cpu
        if self.memory:
            result[RESOURCE_MEMORY] = self.memory
        return result

    def shrinks(self, other: PodDemand) -> bool:
        """True when `other` asks less than this demand for some resource (it frees capacity)."""
        before = self.requests()
        after = other.requests()
        return any(after.get(name, 0) < value for name, value in before.items())


def _non_missing(requests: ResourceList) -> ResourceList:
    return {**_NON_MISSING, **requests}


def _non_zero_requests(
    pod: PodLike, per_container: tuple[list[ResourceList], list[ResourceList]] | None
) -> ResourceList:
    """The requests scoring counts: 100m / 200Mi for each container that sets none."""
    if per_container is None:
        regular = [container_requests(c) for c in pod.spec.containers]
        init = [container_requests(c) for c in pod.spec.init_containers or []]
        if all(_NON_MISSING.keys() <= r.keys() for r in [*regular, *init]):
            return pod_requests(pod, source="spec")
    else:
        regular, init = per_container
    return pod_requests(
        _with_container_requests(
            pod, [_non_missing(r) for r in regular], [_non_missing(r) for r in init]
        ),
        source="spec",
    )


def pod_demand(pod: PodLike) -> PodDemand:
    """Price a pod once (O(containers)); the cache stores the result, never the pod."""
    if _granted_anywhere(pod):
        per_container = resize_aware_containers(pod)
        requests = scheduling_requests(pod, per_container)
        regular, init = per_container
        if pod.spec.resources is None and all(
            _NON_MISSING.keys() <= r.keys() for r in [*regular, *init]
        ):
            # No container needs a default and no pod-level requests differ by source: the
            # scoring requests are these (building the defaulted pod was half the price).
            non_zero = requests
        else:
            non_zero = _non_zero_requests(pod, per_container)
    else:  # nothing granted yet: the spec, and the fast paths
        requests = pod_requests(pod, source="spec")
        non_zero = _non_zero_requests(pod, None)
    ints = {name: amount(name, q) for name, q in requests.items()}
    others = tuple(
        sorted(
            (name, value)
            for name, value in ints.items()
            if name not in (RESOURCE_CPU, RESOURCE_MEMORY) and value != 0
        )
    )
    return PodDemand(
        cpu=ints.get(RESOURCE_CPU, 0),
        memory=ints.get(RESOURCE_MEMORY, 0),
        others=others,
        # A pod without containers has no defaults to count (`.get`), only its overhead.
        non_zero_cpu=amount(RESOURCE_CPU, non_zero.get(RESOURCE_CPU, ZERO)),
        non_zero_memory=amount(RESOURCE_MEMORY, non_zero.get(RESOURCE_MEMORY, ZERO)),
    )


def demand_json(pod: PodLike) -> str:
    """The projection's `pods.demand`: the pod's demand and whether its resize is Infeasible
    (the scheduler tracks that flip), as `[cpu, memory, non_zero_cpu, non_zero_memory,
    {other: units}, infeasible]`."""
    d = pod_demand(pod)
    row = [d.cpu, d.memory, d.non_zero_cpu, d.non_zero_memory, dict(d.others)]
    return json.dumps([*row, is_resize_infeasible(pod)], separators=(",", ":"))


def priced_row(raw: str) -> tuple[PodDemand, bool]:
    """A `demand_json` row back: the demand and whether the pod's resize is Infeasible."""
    cpu, memory, non_zero_cpu, non_zero_memory, others, infeasible = json.loads(raw)
    demand = PodDemand(cpu, memory, tuple(sorted(others.items())), non_zero_cpu, non_zero_memory)
    return demand, bool(infeasible)
