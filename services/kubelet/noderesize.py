"""KEP-3953 (In-place Node Resource Resize): what the kubelet recomputes when capacity changes.

Pure maths over the core/v1 models, no I/O. The hotplug role detects a change and publishes
NodeCapacityChanged; the kubelet reacts with these functions, in the KEP's order ("Handling
node compute capacity reconfiguration"):

1. `evictions` (hot unplug only): re-run admission for the node's pods against the new
   allocatable; the pods that no longer fit are evicted by QoS, then usage over request.
   `starvation_condition` is the node condition to publish before and after.
2. `resync_plan`: for every running container that stays, the new swap limit
   (`containerMemoryRequest / nodeTotalMemory * totalPodsSwapAvailable`) and OOM score adj
   (against the node's *initial* memory capacity), applied through UpdateContainerResources
   (`ContainerUpdate.apply` gives the CRI values).
3. Publish the new capacity/allocatable (done by the hotplug role) and re-evaluate Deferred
   resizes (in admission.retry_order, over `NodeAllocation.with_allocatable`).

Swap capacity travels in the capacity lists under `SWAP_RESOURCE` ("swap", bytes), as
NodeCapacityChanged carries it; the Node reports it in nodeInfo.swap.capacity
(schemas/nodeswap.py moves it between the two). A node without that entry has no swap.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import lru_cache
from types import MappingProxyType
from typing import Final

from schemas.k8s import (
    RESOURCE_CPU,
    RESOURCE_EPHEMERAL_STORAGE,
    RESOURCE_MEMORY,
    RESOURCE_PODS,
    Container,
    NodeCondition,
    Pod,
    PodQOSClass,
    ResourceList,
)
from schemas.keys import pod_key
from schemas.nodeswap import SWAP_RESOURCE
from schemas.quantity import ZERO, Quantity
from schemas.resources import add, container_limits, container_requests, pod_requests, qos_class
from services.kubelet.cri import LinuxContainerResources

__all__ = [
    "BEST_EFFORT_OOM_SCORE_ADJ",
    "BURSTABLE_MAX_OOM_SCORE_ADJ",
    "BURSTABLE_MIN_OOM_SCORE_ADJ",
    "FAILED_NODE_RESIZE",
    "GUARANTEED_OOM_SCORE_ADJ",
    "RESOURCE_STARVATION",
    "SWAP_RESOURCE",
    "SYSTEM_CRITICAL_PRIORITY",
    "ContainerUpdate",
    "eviction_message",
    "evictions",
    "limited_swap",
    "node_resize_condition",
    "oom_score_adj",
    "resync_plan",
    "starvation_condition",
    "starved_resources",
    "swap_limit",
    "with_swap_and_oom",
]


# pkg/kubelet/qos/policy.go.
GUARANTEED_OOM_SCORE_ADJ: Final = -997
BEST_EFFORT_OOM_SCORE_ADJ: Final = 1000
# "Ensure that burstable pods have a higher OOM score adjustment" than a Guaranteed pod using
# 100% of memory: policy.go returns 1000 + guaranteedOOMScoreAdj = 3 below that floor ...
BURSTABLE_MIN_OOM_SCORE_ADJ: Final = 1000 + GUARANTEED_OOM_SCORE_ADJ
# ... and "give burstable pods a higher chance of survival over besteffort pods": 1000 → 999.
BURSTABLE_MAX_OOM_SCORE_ADJ: Final = BEST_EFFORT_OOM_SCORE_ADJ - 1

# scheduling.SystemCriticalPriority: pods at or above it are critical (IsCriticalPod).
SYSTEM_CRITICAL_PRIORITY: Final = 2_000_000_000
_SYSTEM_NODE_CRITICAL: Final = "system-node-critical"

# KEP-3953 Handling Resource Reconfiguration: 'The node enters a "Resource Starvation" state.'
RESOURCE_STARVATION: Final = "ResourceStarvation"
# KEP-3953: failures are retried "along with a `FailedNodeResize` event and condition".
FAILED_NODE_RESIZE: Final = "FailedNodeResize"

# cgroup v2 key the kubelet's LimitedSwap writes (kuberuntime configureSwap).
_SWAP_MAX: Final = "memory.swap.max"

_QOS_RANK: Final[dict[str, int]] = {"BestEffort": 0, "Burstable": 1, "Guaranteed": 2}
# Starved resources are ranked in this order when picking the one pods are sorted by: memory
# first, as the kubelet's eviction signals and canResizePod report it first.
_PRIMARY_ORDER: Final = (RESOURCE_MEMORY, RESOURCE_CPU, RESOURCE_EPHEMERAL_STORAGE, RESOURCE_PODS)


# --- swap ---------------------------------------------------------------------------------------


def swap_limit(
    container_memory_request_bytes: int,
    node_total_memory_bytes: int,
    total_pods_swap_available_bytes: int,
) -> int:
    """KEP-3953 / KEP-2400 LimitedSwap: request / nodeTotalMemory * totalPodsSwapAvailable.

    Rounded down to whole bytes, computed exactly in integers. Kubernetes'
    calcSwapForBurstablePods computes the product in float64 and truncates with int64(), which
    is the same floor except where float rounding moves the result across an integer; exact
    integers make the KEP's flow come out as it states: 2G of 6G with 4G swap is 1333333333
    bytes ("1.33G"), and after the node grows to 8G it is exactly 1000000000 ("1G").

    Raises ValueError where Kubernetes returns an error: no node memory, or a request larger
    than the node's memory (after a hot unplug such a container's pod must be evicted first).
    """
    if node_total_memory_bytes <= 0:
        raise ValueError("total node memory is 0")
    if container_memory_request_bytes < 0 or total_pods_swap_available_bytes < 0:
        raise ValueError("memory request and swap must not be negative")
    if container_memory_request_bytes > node_total_memory_bytes:
        raise ValueError(
            f"container request {container_memory_request_bytes} is larger than total node "
            f"memory {node_total_memory_bytes}"
        )
    return (
        container_memory_request_bytes
        * total_pods_swap_available_bytes
        // (node_total_memory_bytes)
    )


def limited_swap(
    qos: PodQOSClass,
    memory_request_bytes: int,
    memory_limit_bytes: int,
    node_total_memory_bytes: int,
    total_pods_swap_available_bytes: int,
    *,
    critical: bool = False,
) -> int:
    """A container's swap limit under Kubernetes' LimitedSwap (0 = no swap).

    kuberuntime ConfigureLimitedSwap: only Burstable pods get swap; Guaranteed and BestEffort
    get none, nor does a critical pod, a container asking no memory, or one whose memory
    request equals its limit (`memory_limit_bytes` 0 = no limit).
    """
    if qos != "Burstable" or critical or memory_request_bytes == memory_limit_bytes:
        return 0
    return swap_limit(
        memory_request_bytes, node_total_memory_bytes, total_pods_swap_available_bytes
    )


# --- OOM score adj ------------------------------------------------------------------------------


def _burstable_raw(memory_request_bytes: int, memory_capacity_bytes: int) -> int:
    # Go's int64 division truncates; both operands are >= 0 here, so // is the same.
    return 1000 - (1000 * memory_request_bytes) // memory_capacity_bytes


def _clamp_burstable(adj: int) -> int:
    return max(BURSTABLE_MIN_OOM_SCORE_ADJ, min(BURSTABLE_MAX_OOM_SCORE_ADJ, adj))


def oom_score_adj(
    memory_request_bytes: int,
    initial_memory_capacity_bytes: int,
    qos: PodQOSClass,
    *,
    critical: bool = False,
) -> int:
    """A container's oom_score_adj, KEP-3953's way: against the node's *initial* memory.

    The KEP (Risks and Mitigations) keeps Kubernetes' formula
    `1000 - (1000*containerMemoryRequest)/memoryCapacity` but divides by initialMemoryCapacity,
    so a resize never changes the score of a running container (the new value would reach only
    its init process). The KEP writes it as `min(0, …)`, which would give every Burstable pod
    a score at or below 0, i.e. better than Guaranteed; we read that as a typo and keep
    policy.go's clamp instead:

    - Guaranteed and node-critical pods: -997; BestEffort: 1000.
    - Burstable: the formula, raised to 3 (1000 + guaranteedOOMScoreAdj: always above a
      Guaranteed pod) and lowered to 999 (always below BestEffort). A request larger than the
      initial capacity (possible once a node grew) lands on the floor, 3.

    (services.kubelet.cgroupconv.oom_score_adj floors at 2, the value from when
    guaranteedOOMScoreAdj was -998; policy.go has used -997 → 3 since.)
    """
    if critical or qos == "Guaranteed":
        return GUARANTEED_OOM_SCORE_ADJ
    if qos == "BestEffort":
        return BEST_EFFORT_OOM_SCORE_ADJ
    if initial_memory_capacity_bytes <= 0:
        return BURSTABLE_MAX_OOM_SCORE_ADJ
    return _clamp_burstable(_burstable_raw(memory_request_bytes, initial_memory_capacity_bytes))


# --- the per-container resync plan --------------------------------------------------------------


@dataclass(frozen=True)
class ContainerUpdate:
    """What UpdateContainerResources must set on one running container after a resize.

    `swap_limit_bytes` is the memory.swap.max value (0 = no swap); `old_swap_limit_bytes` what
    the old capacity gave (for logs: apply every update anyway, a failed earlier attempt may
    have left any value behind).
    """

    pod: str
    container: str
    qos: PodQOSClass
    memory_request_bytes: int
    swap_limit_bytes: int
    oom_score_adj: int
    old_swap_limit_bytes: int

    @property
    def changed(self) -> bool:
        return self.swap_limit_bytes != self.old_swap_limit_bytes

    def apply(self, linux: LinuxContainerResources) -> LinuxContainerResources:
        """`linux` with this update's values, as kuberuntime writes them.

        cgroup v2: `unified["memory.swap.max"]` (0 disables swap, as ConfigureNoSwap does).
        The CRI's memory_swap_limit_in_bytes is memory+swap (cgroup v1 memsw): the memory limit
        plus the swap limit, or unset (0) for a container without a memory limit.
        """
        memsw = linux.memory_limit_in_bytes + self.swap_limit_bytes
        return replace(
            linux,
            oom_score_adj=self.oom_score_adj,
            memory_swap_limit_in_bytes=memsw if linux.memory_limit_in_bytes > 0 else 0,
            unified=_with_swap_max(linux.unified, self.swap_limit_bytes),
        )


def _with_swap_max(unified: Mapping[str, str], swap_limit_bytes: int) -> Mapping[str, str]:
    """`unified` with memory.swap.max set. A container with no other raw value (all of them
    today) shares one read-only mapping per limit: the kubelet keeps one per container."""
    if not unified:
        return _swap_max_only(swap_limit_bytes)
    return {**unified, _SWAP_MAX: str(swap_limit_bytes)}


@lru_cache(maxsize=256)
def _swap_max_only(swap_limit_bytes: int) -> Mapping[str, str]:
    return MappingProxyType({_SWAP_MAX: str(swap_limit_bytes)})


def _bytes(resources: Mapping[str, Quantity] | None, name: str) -> int:
    if not resources or name not in resources:
        return 0
    return max(0, resources[name].value())


def _is_critical(pod: Pod) -> bool:
    # IsCriticalPod (swap is refused): priority at or above system-cluster-critical's.
    return (pod.spec.priority or 0) >= SYSTEM_CRITICAL_PRIORITY


def _is_node_critical(pod: Pod) -> bool:
    # IsNodeCriticalPod (policy.go scores it like Guaranteed).
    return _is_critical(pod) and pod.spec.priority_class_name == _SYSTEM_NODE_CRITICAL


def _running_containers(pod: Pod, running: Collection[str] | None) -> list[tuple[Container, bool]]:
    """(container, is_sidecar) of the pod's running containers, sidecars first (start order).
    Without `running`, every regular container and every sidecar: init containers that run to
    completion are not running once the pod is."""
    out: list[tuple[Container, bool]] = []
    for c in pod.spec.init_containers or []:
        sidecar = c.restart_policy == "Always"
        if (running is None and sidecar) or (running is not None and c.name in running):
            out.append((c, sidecar))
    for c in pod.spec.containers:
        if running is None or c.name in running:
            out.append((c, False))
    return out


def _container_adj(
    pod: Pod, container: Container, sidecar: bool, qos: PodQOSClass, initial_memory: int
) -> int:
    request = _bytes(container_requests(container), RESOURCE_MEMORY)
    if _is_node_critical(pod) or qos != "Burstable" or initial_memory <= 0:
        return oom_score_adj(request, initial_memory, qos, critical=_is_node_critical(pod))
    raw = _burstable_raw(request, initial_memory)
    if sidecar and pod.spec.containers:
        # policy.go: a sidecar's score "will match or fall below the OOM score adjustment of
        # regular containers in the Pod" (the one with the smallest memory request).
        smallest = min(_bytes(container_requests(c), RESOURCE_MEMORY) for c in pod.spec.containers)
        raw = min(raw, _burstable_raw(smallest, initial_memory))
    return _clamp_burstable(raw)


def resync_plan(
    node: str,
    pods_with_allocations: Iterable[Pod],
    old_capacity: Mapping[str, Quantity],
    new_capacity: Mapping[str, Quantity],
    initial_capacity: Mapping[str, Quantity] | None,
    swap_available: int | None = None,
    *,
    running: Mapping[str, Collection[str]] | None = None,
) -> list[ContainerUpdate]:
    """Per running container, the swap limit and OOM score adj to apply after a resize.

    `pods_with_allocations` are the node's admitted pods with their spec replaced by the
    allocation (NodeAllocation.pods), so a container's memory request is the *allocated* one.
    Pass only the pods that stay: call `evictions` first on a hot unplug, because a container
    requesting more than the new node memory has no swap limit (ValueError, as in Kubernetes).

    - nodeTotalMemory is the new memory *capacity* (cAdvisor's MemoryCapacity, not allocatable);
      totalPodsSwapAvailable is `swap_available`, by default the new capacity's "swap" entry.
    - The OOM score adj uses `initial_capacity["memory"]` (KEP-3953), or the old capacity's
      memory for a node registered without initialCapacity.
    - `running` maps a pod key to the names of its running containers; without it, every
      regular container and sidecar counts as running.

    Pods come in key order and containers in start order, so the plan is deterministic. `node`
    only names the node in error messages.
    """
    total_memory = _bytes(new_capacity, RESOURCE_MEMORY)
    old_memory = _bytes(old_capacity, RESOURCE_MEMORY)
    swap = _bytes(new_capacity, SWAP_RESOURCE) if swap_available is None else swap_available
    old_swap = _bytes(old_capacity, SWAP_RESOURCE)
    initial = initial_capacity if initial_capacity and RESOURCE_MEMORY in initial_capacity else None
    initial_memory = _bytes(initial or old_capacity, RESOURCE_MEMORY)
    plan: list[ContainerUpdate] = []
    for pod in sorted(pods_with_allocations, key=pod_key):
        key = pod_key(pod)
        qos = qos_class(pod)
        critical = _is_critical(pod)
        for container, sidecar in _running_containers(
            pod, None if running is None else running.get(key, ())
        ):
            request = _bytes(container_requests(container), RESOURCE_MEMORY)
            limit = _bytes(container_limits(container), RESOURCE_MEMORY)
            try:
                new_swap = limited_swap(qos, request, limit, total_memory, swap, critical=critical)
            except ValueError as exc:
                raise ValueError(f"node {node}: {key} container {container.name}: {exc}") from None
            old = 0
            if 0 < old_memory and request <= old_memory:
                old = limited_swap(qos, request, limit, old_memory, old_swap, critical=critical)
            plan.append(
                ContainerUpdate(
                    pod=key,
                    container=container.name,
                    qos=qos,
                    memory_request_bytes=request,
                    swap_limit_bytes=new_swap,
                    oom_score_adj=_container_adj(pod, container, sidecar, qos, initial_memory),
                    old_swap_limit_bytes=old,
                )
            )
    return plan


def with_swap_and_oom(
    node: str,
    pod_with_allocation: Pod,
    capacity: Mapping[str, Quantity],
    initial_capacity: Mapping[str, Quantity] | None,
    linux: Mapping[str, LinuxContainerResources],
) -> dict[str, LinuxContainerResources]:
    """`linux` (CRI resources per container name) with the swap limit and OOM score adj this
    node's current capacity gives the pod: what kuberuntime sets when it creates a container,
    and what a pod resize must keep (its new memory request moves the swap limit too).

    Without this a container would start with no swap limit and score 0, and only the next node
    resize would set them (KEP-3953's flow expects 1.33G at T=0, before any resize). Raises
    ValueError like `resync_plan` for a container requesting more than the node's memory.
    """
    plan = resync_plan(node, [pod_with_allocation], capacity, capacity, initial_capacity)
    updates = {u.container: u for u in plan}
    return {
        name: updates[name].apply(value) if name in updates else value
        for name, value in linux.items()
    }


# --- hot unplug: re-admission and eviction ------------------------------------------------------


def _checked(name: str, allocatable: Mapping[str, Quantity]) -> bool:
    # As admission does: an extended resource the node does not advertise is not checked.
    return "/" not in name or name in allocatable


def _held(pod: Pod, allocatable: Mapping[str, Quantity]) -> ResourceList:
    """What a pod holds for admission: its effective requests, plus one `pods` slot when the
    node counts pods (admission rejects past allocatable pods too)."""
    held = pod_requests(pod)
    if RESOURCE_PODS in allocatable:
        held[RESOURCE_PODS] = Quantity.from_int(1)
    return held


def _starved(held: Iterable[ResourceList], allocatable: Mapping[str, Quantity]) -> list[str]:
    total: ResourceList = {}
    for item in held:
        total = add(total, item)
    return sorted(
        name
        for name, want in total.items()
        if ZERO < want and _checked(name, allocatable) and allocatable.get(name, ZERO) < want
    )


def starved_resources(node_allocatable: Mapping[str, Quantity], pods: Iterable[Pod]) -> list[str]:
    """Resources (sorted) whose summed allocated requests exceed the node's allocatable."""
    return _starved((_held(p, node_allocatable) for p in pods), node_allocatable)


def _primary(starved: Sequence[str]) -> str:
    for name in _PRIMARY_ORDER:
        if name in starved:
            return name
    return starved[0]


def evictions(
    node_allocatable: Mapping[str, Quantity],
    pods: Iterable[Pod],
    usage: Mapping[str, Mapping[str, Quantity]] | None = None,
) -> list[str]:
    """Keys of the pods to evict, in eviction order, so that the rest fit after a hot unplug.

    "Fits": for every resource, the summed allocated requests of the remaining pods (`pods`
    carry their allocation as spec, overhead counts, one `pods` slot each when allocatable
    has `pods`) are at most `node_allocatable`. Nothing is evicted when they already fit.

    Otherwise the pods are ranked once (KEP-3953: "ranked for eviction based on their Quality
    of Service (QoS) class and resource usage relative to their requests"), on the starved
    resource that matters most (memory, then cpu, ephemeral-storage, pods, then by name):

    1. QoS: BestEffort, then Burstable, then Guaranteed;
    2. usage over request (usage - request) in that resource, largest first — `usage` maps a
       pod key to measured usage; an unmeasured pod counts as using 0;
    3. lower `spec.priority` first, then pod key (determinism).

    Walking that ranking, a pod is evicted if it holds some still-starved resource — a request,
    or measured usage (that is how a BestEffort pod, which requests nothing, holds memory) —
    and the walk stops as soon as the rest fit. A pod holding nothing short is left alone: its
    eviction could not help the rest fit.
    """
    pods = list(pods)
    held = {pod_key(p): _held(p, node_allocatable) for p in pods}
    starved = _starved(held.values(), node_allocatable)
    if not starved:
        return []
    usage = usage or {}
    primary = _primary(starved)

    def rank(pod: Pod) -> tuple[int, Quantity, int, str]:
        key = pod_key(pod)
        over = usage.get(key, {}).get(primary, ZERO) - held[key].get(primary, ZERO)
        return (_QOS_RANK[qos_class(pod)], -over, pod.spec.priority or 0, key)

    evicted: list[str] = []
    for pod in sorted(pods, key=rank):
        key = pod_key(pod)
        measured = usage.get(key, {})
        if not any(
            ZERO < held[key].get(name, ZERO) or ZERO < measured.get(name, ZERO) for name in starved
        ):
            continue
        evicted.append(key)
        del held[key]
        starved = _starved(held.values(), node_allocatable)
        if not starved:
            break
    return evicted


# --- node conditions ----------------------------------------------------------------------------


def _short_list(
    names: Sequence[str], total: Mapping[str, Quantity], allocatable: Mapping[str, Quantity]
) -> str:
    return ", ".join(
        f"{n} (requested {total[n]}, allocatable {allocatable.get(n, ZERO)})" for n in names
    )


def eviction_message(node_allocatable: Mapping[str, Quantity], pods: Iterable[Pod]) -> str:
    """The message an evicted pod carries (status.message and its Warning Event), worded as
    the kubelet's eviction manager words it ("The node was low on resource: memory. ..."),
    naming each starved resource with what the pods request and the node still allocates."""
    held = [_held(p, node_allocatable) for p in pods]
    starved = _starved(held, node_allocatable)
    total: ResourceList = {}
    for item in held:
        total = add(total, item)
    return (
        f"The node was low on resource: {', '.join(starved)}. "
        f"After a node resize its pods requested {_short_list(starved, total, node_allocatable)}."
    )


def starvation_condition(
    node_allocatable: Mapping[str, Quantity], pods: Iterable[Pod], *, now: datetime | None = None
) -> NodeCondition:
    """The node's ResourceStarvation condition for these pods and this allocatable.

    True (reason KubeletHasInsufficientResources) while the summed requests exceed the
    allocatable, naming each starved resource; False (KubeletHasSufficientResources)
    otherwise. Publish it (NodeConditionChanged) when its status differs from the node's:
    True before evicting, False once the survivors fit.
    """
    pods = list(pods)
    held = [_held(p, node_allocatable) for p in pods]
    starved = _starved(held, node_allocatable)
    if starved:
        total: ResourceList = {}
        for item in held:
            total = add(total, item)
        return NodeCondition(
            type=RESOURCE_STARVATION,
            status="True",
            reason="KubeletHasInsufficientResources",
            message=(
                "requested resources exceed allocatable after a node resize: "
                + _short_list(starved, total, node_allocatable)
            ),
            last_heartbeat_time=now,
            last_transition_time=now,
        )
    return NodeCondition(
        type=RESOURCE_STARVATION,
        status="False",
        reason="KubeletHasSufficientResources",
        message="kubelet has sufficient resources for the pods admitted to the node",
        last_heartbeat_time=now,
        last_transition_time=now,
    )


def node_resize_condition(error: str | None, *, now: datetime | None = None) -> NodeCondition:
    """The FailedNodeResize condition: True with the failing step's error while a resync keeps
    failing (KEP-3953: retried from step 1 "along with a FailedNodeResize event and
    condition"), False once a resync succeeded."""
    if error is not None:
        return NodeCondition(
            type=FAILED_NODE_RESIZE,
            status="True",
            reason=FAILED_NODE_RESIZE,
            message=error,
            last_heartbeat_time=now,
            last_transition_time=now,
        )
    return NodeCondition(
        type=FAILED_NODE_RESIZE,
        status="False",
        reason="NodeResizeSucceeded",
        message="the kubelet resynced its containers and resource managers with the new capacity",
        last_heartbeat_time=now,
        last_transition_time=now,
    )
