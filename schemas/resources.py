"""Pure resource arithmetic over the core/v1 models, with Kubernetes' rules.

- Effective pod requests/limits follow component-helpers `PodRequests`/`PodLimits` and the sidecar
  KEP (753): init containers run one at a time, each alongside the sidecars started before it;
  sidecars then keep running next to the regular containers.
- QoS class follows pkg/apis/core/helper/qos `ComputePodQOS`.
- In-place resize (KEP-1287): a pod's requests can come from its spec (desired), its
  `allocatedResources` (admitted by the kubelet), its `status...resources` (actual), or the
  per-container max of spec and allocated, which the scheduler and quota use while a resize is
  pending so that a node or namespace is never overcommitted by an imminent resize.
- Pod-level resources (KEP-2837, beta in 1.34; their in-place resize is 1.35 alpha, on here):
  `spec.resources` requests/limits of cpu, memory and hugepages-* replace the containers'
  aggregate for those resources (PodRequests/PodLimits), the QoS class is computed from them
  alone, and `status.allocatedResources` / `status.resources` are their allocated and actual
  values, picked by the same `source` as the containers'.

Every function returns a new ResourceList and never mutates its inputs; a result only has keys
that appear in some input (no implicit zero `cpu`/`memory` entries).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal

from schemas.k8s import (
    HUGEPAGES_PREFIX,
    RESOURCE_CPU,
    RESOURCE_MEMORY,
    Container,
    ContainerStatus,
    PodQOSClass,
    ResourceList,
    ResourceRequirements,
)
from schemas.podview import PodLike
from schemas.quantity import ZERO, Quantity

__all__ = [
    "QOS_COMPUTE_RESOURCES",
    "LimitSource",
    "RequestSource",
    "add",
    "aggregate_container_limits",
    "aggregate_container_requests",
    "container_limits",
    "container_requests",
    "fits",
    "is_pod_level_resource",
    "is_sidecar",
    "max_per_resource",
    "pod_limits",
    "pod_requests",
    "qos_class",
    "resize_aware_containers",
    "resize_aware_requests",
    "scheduling_pod_level_requests",
    "scheduling_requests",
    "subtract",
]

RequestSource = Literal["spec", "allocated", "actual", "max"]
LimitSource = Literal["spec", "actual", "max"]

# Only these count towards the QoS class (hugepages, ephemeral-storage, extended resources don't).
QOS_COMPUTE_RESOURCES: frozenset[str] = frozenset({RESOURCE_CPU, RESOURCE_MEMORY})


# --- ResourceList arithmetic --------------------------------------------------------------------


def add(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> ResourceList:
    """a + b per resource; a resource missing on one side counts as zero there."""
    result: ResourceList = dict(a)
    for name, quantity in b.items():
        result[name] = result[name] + quantity if name in result else quantity
    return result


def subtract(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> ResourceList:
    """a - b per resource (may go negative); a resource only in b becomes -b."""
    result: ResourceList = dict(a)
    for name, quantity in b.items():
        result[name] = (result[name] if name in result else ZERO) - quantity
    return result


def max_per_resource(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> ResourceList:
    """The larger of a and b per resource; a resource on one side only is taken as is."""
    result: ResourceList = dict(a)
    for name, quantity in b.items():
        if name not in result or result[name] < quantity:
            result[name] = quantity
    return result


def fits(request: Mapping[str, Quantity], available: Mapping[str, Quantity]) -> list[str]:
    """Names (sorted) of the resources whose request exceeds what is available.

    A resource the available list does not mention has none available (as the scheduler treats
    an extended resource a node does not advertise); a zero request always fits.
    """
    return sorted(
        name
        for name, quantity in request.items()
        if available.get(name, ZERO) < quantity and not quantity.is_zero()
    )


def _sum(lists: Iterable[Mapping[str, Quantity]]) -> ResourceList:
    total: ResourceList = {}
    for item in lists:
        total = add(total, item)
    return total


# --- containers ---------------------------------------------------------------------------------


def is_sidecar(container: Container) -> bool:
    """True for a restartable init container (`restartPolicy: Always`), i.e. a sidecar.

    Only meaningful for entries of `spec.initContainers`.
    """
    return container.restart_policy == "Always"


def _defaulted_requests(resources: ResourceRequirements | None) -> ResourceList:
    """Requests with API defaulting applied: a limit without a request defaults the request.

    The apiserver does this (SetDefaults_Pod) before anything else sees the pod, so for a stored
    pod this changes nothing; for a pod that skipped defaulting it gives the same answer.
    """
    if resources is None:
        return {}
    return {**(resources.limits or {}), **(resources.requests or {})}


def container_requests(
    container: Container, *, use_allocated: Mapping[str, Quantity] | None = None
) -> ResourceList:
    """Requests of one container from its spec (limits default missing requests).

    With `use_allocated` (the container's `status.allocatedResources`), the per-resource max of
    spec and allocated: KEP-1287's pessimistic rule while a resize may still be accepted.
    """
    requests = _defaulted_requests(container.resources)
    if use_allocated is None:
        return requests
    return max_per_resource(requests, use_allocated)


def container_limits(container: Container) -> ResourceList:
    """Limits of one container from its spec (a copy)."""
    return dict(container.resources.limits or {})


def _statuses_by_name(pod: PodLike) -> dict[str, ContainerStatus]:
    statuses = [*(pod.status.init_container_statuses or []), *(pod.status.container_statuses or [])]
    return {status.name: status for status in statuses}


def _allocated(container: Container, status: ContainerStatus | None) -> ResourceList:
    # No status yet (not admitted): the kubelet will allocate exactly the spec.
    if status is not None and status.allocated_resources is not None:
        return dict(status.allocated_resources)
    return _defaulted_requests(container.resources)


def _actual_requests(container: Container, status: ContainerStatus | None) -> ResourceList:
    if status is not None and status.resources is not None:
        if status.resources.requests is not None:
            return dict(status.resources.requests)
    return _allocated(container, status)


def _actual_limits(container: Container, status: ContainerStatus | None) -> ResourceList:
    if status is not None and status.resources is not None:
        if status.resources.limits is not None:
            return dict(status.resources.limits)
    return container_limits(container)


def _request_of(
    pod: PodLike, container: Container, status: ContainerStatus | None, source: RequestSource
) -> ResourceList:
    if source == "spec":
        return container_requests(container)
    if source == "allocated":
        return _allocated(container, status)
    if source == "actual":
        return _actual_requests(container, status)
    # "max": an Infeasible resize will never be applied, so only what is allocated counts.
    if pod.status.resize == "Infeasible":
        return _allocated(container, status)
    return max_per_resource(container_requests(container), _allocated(container, status))


def _limit_of(
    pod: PodLike, container: Container, status: ContainerStatus | None, source: LimitSource
) -> ResourceList:
    if source == "spec":
        return container_limits(container)
    if source == "actual" or pod.status.resize == "Infeasible":
        return _actual_limits(container, status)
    return max_per_resource(container_limits(container), _actual_limits(container, status))


# --- pod-level resources (KEP-2837) -----------------------------------------------------------


def is_pod_level_resource(name: str) -> bool:
    """IsSupportedPodLevelResource: cpu, memory and hugepages-*."""
    return name in QOS_COMPUTE_RESOURCES or name.startswith(HUGEPAGES_PREFIX)


def _supported(resources: Mapping[str, Quantity] | None) -> ResourceList:
    return {n: q for n, q in (resources or {}).items() if is_pod_level_resource(n)}


def _pod_level_requests(pod: PodLike, source: RequestSource) -> ResourceList:
    """The pod-level requests `source` picks ({} without pod-level requests)."""
    spec = _supported(pod.spec.resources.requests if pod.spec.resources else None)
    if not spec:
        return {}
    status = pod.status
    allocated = _supported(status.allocated_resources) or spec
    if source == "spec":
        return spec
    if source == "allocated":
        return allocated
    if source == "actual":
        actual = status.resources.requests if status.resources is not None else None
        return _supported(actual) or allocated
    if pod.status.resize == "Infeasible":
        return allocated
    return max_per_resource(spec, allocated)


def _pod_level_limits(pod: PodLike, source: LimitSource) -> ResourceList:
    spec = _supported(pod.spec.resources.limits if pod.spec.resources else None)
    if not spec:
        return {}
    actual = pod.status.resources.limits if pod.status.resources is not None else None
    actual_or_spec = _supported(actual) or spec
    if source == "spec":
        return spec
    if source == "actual" or pod.status.resize == "Infeasible":
        return actual_or_spec
    return max_per_resource(spec, actual_or_spec)


# --- pods ---------------------------------------------------------------------------------------


def _aggregate(
    pod: PodLike, per_container: list[ResourceList], per_init: list[ResourceList]
) -> ResourceList:
    """max(regular containers + all sidecars, the peak of the init phase), per resource.

    While the i-th init container runs, the sidecars declared before it are already running, so
    the init phase needs, at its peak, max_i(init_i + sidecars before i); a sidecar's own
    start counts as such a step (sidecars before it + itself).
    """
    total = _sum(per_container)
    init_containers = pod.spec.init_containers or []
    sidecars_so_far: ResourceList = {}
    init_peak: ResourceList = {}
    for container, resources in zip(init_containers, per_init, strict=True):
        if is_sidecar(container):
            total = add(total, resources)
            sidecars_so_far = add(sidecars_so_far, resources)
            step = sidecars_so_far
        else:
            step = add(resources, sidecars_so_far)
        init_peak = max_per_resource(init_peak, step)
    return max_per_resource(total, init_peak)


def pod_requests(pod: PodLike, *, source: RequestSource = "spec") -> ResourceList:
    """Effective requests of a pod, plus `spec.overhead`, as Kubernetes schedules and admits it.

    `source` picks each container's requests:
    - "spec": `spec...resources.requests` (the desired state; limits default requests).
    - "allocated": `status...allocatedResources`; spec for a container without one.
    - "actual": `status...resources.requests`; else allocated; else spec.
    - "max": per container, max(spec, allocated) (KEP-1287's scheduler and quota rule for a
      pending resize); allocated alone when `status.resize` is Infeasible.

    Pod-level requests (`spec.resources`, picked by the same `source`) replace the aggregate
    for the resources they name.
    """
    statuses = _statuses_by_name(pod)
    per_container = [_request_of(pod, c, statuses.get(c.name), source) for c in pod.spec.containers]
    per_init = [
        _request_of(pod, c, statuses.get(c.name), source) for c in pod.spec.init_containers or []
    ]
    requests = _aggregate(pod, per_container, per_init)
    if pod.spec.resources is not None:
        requests.update(_pod_level_requests(pod, source))
    return add(requests, pod.spec.overhead or {})


def aggregate_container_requests(pod: PodLike) -> ResourceList:
    """AggregateContainerRequests: the containers' spec requests aggregated (sidecars, init
    peak), without pod-level requests or overhead."""
    regular = [container_requests(c) for c in pod.spec.containers]
    init = [container_requests(c) for c in pod.spec.init_containers or []]
    return _aggregate(pod, regular, init)


def aggregate_container_limits(pod: PodLike) -> ResourceList:
    """AggregateContainerLimits: the containers' spec limits aggregated like requests."""
    regular = [container_limits(c) for c in pod.spec.containers]
    init = [container_limits(c) for c in pod.spec.init_containers or []]
    return _aggregate(pod, regular, init)


def pod_limits(pod: PodLike, *, source: LimitSource = "spec") -> ResourceList:
    """Effective limits of a pod, aggregated like requests; overhead added to non-zero limits.

    A container without a limit for a resource is unbounded in it, which a sum cannot express;
    like Kubernetes' PodLimits, the result only sums the limits that are set. `source` picks
    each container's limits: "spec", "actual" (`status...resources.limits`, else spec) or "max"
    of the two (actual alone when the resize is Infeasible).
    """
    statuses = _statuses_by_name(pod)
    per_container = [_limit_of(pod, c, statuses.get(c.name), source) for c in pod.spec.containers]
    per_init = [
        _limit_of(pod, c, statuses.get(c.name), source) for c in pod.spec.init_containers or []
    ]
    limits = _aggregate(pod, per_container, per_init)
    if pod.spec.resources is not None:
        limits.update(_pod_level_limits(pod, source))
    for name, quantity in (pod.spec.overhead or {}).items():
        if name in limits and not limits[name].is_zero():
            limits[name] = limits[name] + quantity
    return limits


# --- QoS ----------------------------------------------------------------------------------------


def _qos_list(resources: Mapping[str, Quantity]) -> dict[str, int]:
    """The QoS-relevant part of a list: cpu and memory, strictly positive (exact nano-units:
    QoS is asked of every pod a kubelet re-admits, ~2x cheaper than summing quantities)."""
    return {
        name: value
        for name in QOS_COMPUTE_RESOURCES
        if name in resources and (value := resources[name].nano_value()) > 0
    }


def qos_class(pod: PodLike) -> PodQOSClass:
    """The pod's QoS class, computed as Kubernetes' ComputePodQOS does.

    With pod-level resources (`spec.resources` set), from those alone: Guaranteed when cpu and
    memory limits are set and every request equals its limit. Otherwise over all containers
    and init containers (only cpu and memory, only values > 0):
    - BestEffort: no requests and no limits at all.
    - Guaranteed: every container has cpu and memory limits, and the summed requests equal
      the summed limits for each resource (with limits defaulting missing requests, that means
      requests == limits in each valid container, where requests never exceed limits).
    - Burstable: anything else.
    """
    if pod.spec.resources is not None:
        return _pod_level_qos(pod.spec.resources)
    requests: dict[str, int] = {}
    limits: dict[str, int] = {}
    guaranteed = True
    for container in [*pod.spec.containers, *(pod.spec.init_containers or [])]:
        for name, value in _qos_list(_defaulted_requests(container.resources)).items():
            requests[name] = requests.get(name, 0) + value
        container_qos_limits = _qos_list(container.resources.limits or {})
        for name, value in container_qos_limits.items():
            limits[name] = limits.get(name, 0) + value
        if len(container_qos_limits) < len(QOS_COMPUTE_RESOURCES):
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed and requests == limits:
        return "Guaranteed"
    return "Burstable"


def _pod_level_qos(resources: ResourceRequirements) -> PodQOSClass:
    requests = _qos_list(resources.requests or {})
    limits = _qos_list(resources.limits or {})
    if not requests and not limits:
        return "BestEffort"
    guaranteed = QOS_COMPUTE_RESOURCES <= limits.keys() and all(
        name in limits and limits[name] == quantity for name, quantity in requests.items()
    )
    return "Guaranteed" if guaranteed else "Burstable"


# --- KEP-1287: what a pod holds on its node while a resize is pending ---------------------------


def is_resize_infeasible(pod: PodLike) -> bool:
    """status.resize Infeasible (the KEP's field) or the newer PodResizePending condition."""
    if pod.status.resize == "Infeasible":
        return True
    for condition in pod.status.conditions or []:
        if condition.type == "PodResizePending":
            return condition.reason == "Infeasible"
    return False


def granted_requests(status: ContainerStatus | None) -> ResourceList | None:
    """What the node granted a container: max(allocatedResources, status...resources.requests);
    None when the kubelet has reported neither (never admitted)."""
    if status is None:
        return None
    allocated = status.allocated_resources
    actual = status.resources.requests if status.resources is not None else None
    if allocated is None and actual is None:
        return None
    return max_per_resource(allocated or {}, actual or {})


def resize_aware_requests(
    container: Container, status: ContainerStatus | None, infeasible: bool
) -> ResourceList:
    """KEP-1287 (scheduler and quota): max(spec, allocated, actual) per resource — a pending
    resize is assumed to succeed — except when it is Infeasible: then only what is granted."""
    spec = container_requests(container)
    granted = granted_requests(status)
    if granted is None:
        return spec
    return granted if infeasible else max_per_resource(spec, granted)


def resize_aware_containers(pod: PodLike) -> tuple[list[ResourceList], list[ResourceList]]:
    """Per regular and per init container, `resize_aware_requests` (sidecars included; a
    classic init container runs once, with its spec)."""
    statuses = _statuses_by_name(pod)
    infeasible = is_resize_infeasible(pod)
    regular = [
        resize_aware_requests(c, statuses.get(c.name), infeasible) for c in pod.spec.containers
    ]
    init = [
        resize_aware_requests(c, statuses.get(c.name), infeasible)
        if is_sidecar(c)
        else container_requests(c)
        for c in pod.spec.init_containers or []
    ]
    return regular, init


def scheduling_requests(
    pod: PodLike, per_container: tuple[list[ResourceList], list[ResourceList]] | None = None
) -> ResourceList:
    """What a pod holds for the scheduler and for quota (KEP-1287): `resize_aware_containers`
    (or the given lists) aggregated as Kubernetes aggregates, pod-level requests by the same
    rule (max of spec, allocated and actual; what is granted alone while the resize is
    Infeasible), plus overhead."""
    regular, init = per_container or resize_aware_containers(pod)
    requests = _aggregate(pod, regular, init)
    if pod.spec.resources is not None:
        requests.update(scheduling_pod_level_requests(pod))
    return add(requests, pod.spec.overhead or {})


def scheduling_pod_level_requests(pod: PodLike) -> ResourceList:
    """Pod-level requests by KEP-1287's rule ({} without pod-level requests)."""
    spec = _supported(pod.spec.resources.requests if pod.spec.resources else None)
    if not spec:
        return {}
    actual = pod.status.resources.requests if pod.status.resources is not None else None
    granted = max_per_resource(_supported(pod.status.allocated_resources), _supported(actual))
    if not granted:
        return spec
    return granted if is_resize_infeasible(pod) else max_per_resource(spec, granted)
