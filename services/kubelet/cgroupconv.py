"""Kubernetes' conversions between API resources and cgroup values, both ways.

Forward (pkg/kubelet/cm/helpers_linux.go): MilliCPUToShares, MilliCPUToQuota, memory bytes,
ResourceConfigForPod for the pod-level cgroup. cgroup v2 has cpu.weight instead of cpu.shares;
runc maps one to the other (ConvertCPUSharesToCgroupV2Value).

Backward (pkg/kubelet/kuberuntime, kubelet_pods.go convertContainerStatusResources): the values a
runtime reports in ContainerStatus.resources become `status.containerStatuses[].resources`.
KEP-1287: "Currently, the resources reported by the runtime are CPU Limit (translated from quota
& period), CPU Request (translated from shares), and Memory Limit"; everything else is copied
from the allocated resources.
"""

from __future__ import annotations

from typing import Final, Literal

from schemas.k8s import (
    RESOURCE_CPU,
    RESOURCE_MEMORY,
    Pod,
    PodQOSClass,
    ResourceList,
    ResourceRequirements,
)
from schemas.quantity import Quantity
from schemas.resources import pod_limits, pod_requests, qos_class
from services.kubelet.cri import ContainerResources, LinuxContainerResources

__all__ = [
    "MAX_SHARES",
    "MILLI_CPU_TO_CPU",
    "MIN_MILLI_CPU_LIMIT",
    "MIN_QUOTA_PERIOD",
    "MIN_SHARES",
    "QUOTA_PERIOD",
    "SHARES_PER_CPU",
    "container_resources",
    "memory_limit_bytes",
    "milli_cpu_to_quota",
    "milli_cpu_to_shares",
    "oom_score_adj",
    "pod_resources",
    "quota_to_milli_cpu",
    "requirements_from_linux",
    "shares_to_milli_cpu",
    "shares_to_weight",
    "weight_to_shares",
]

# The kernel's bounds for cpu.shares (kernel/sched/sched.h MIN_SHARES / MAX_SHARES).
MIN_SHARES: Final = 2
MAX_SHARES: Final = 262144
SHARES_PER_CPU: Final = 1024
MILLI_CPU_TO_CPU: Final = 1000
# CFS: quota is measured over a 100ms period, and may not be below 1ms.
QUOTA_PERIOD: Final = 100_000
MIN_QUOTA_PERIOD: Final = 1_000
# The smallest CPU limit a quota can express: MinQuotaPeriod over QuotaPeriod, in milli-CPU.
MIN_MILLI_CPU_LIMIT: Final = MIN_QUOTA_PERIOD * MILLI_CPU_TO_CPU // QUOTA_PERIOD

# cgroup v2 cpu.weight range.
_MIN_WEIGHT: Final = 1
_MAX_WEIGHT: Final = 10_000

# oom_score_adj bands (pkg/kubelet/qos/policy.go).
_GUARANTEED_OOM_SCORE_ADJ: Final = -997
_BEST_EFFORT_OOM_SCORE_ADJ: Final = 1000


# --- CPU ----------------------------------------------------------------------------------------


def milli_cpu_to_shares(milli_cpu: int) -> int:
    """MilliCPUToShares: 1 CPU = 1024 shares, clamped to the kernel's [2, 262144].

    Zero maps to 2, not to "unset": an unset value would get the kernel default of 1024, far
    more than a pod that asked for nothing should have.
    """
    if milli_cpu <= 0:
        return MIN_SHARES
    shares = milli_cpu * SHARES_PER_CPU // MILLI_CPU_TO_CPU
    return max(MIN_SHARES, min(MAX_SHARES, shares))


def milli_cpu_to_quota(milli_cpu: int, period: int = QUOTA_PERIOD) -> int:
    """MilliCPUToQuota: CFS quota (µs per `period`) for a limit; 0 (no quota) for no limit.

    The quota is at least 1ms (MinQuotaPeriod): the kernel refuses anything smaller.
    """
    if milli_cpu <= 0:
        return 0
    return max(MIN_QUOTA_PERIOD, milli_cpu * period // MILLI_CPU_TO_CPU)


def shares_to_milli_cpu(shares: int) -> int:
    """sharesToMilliCPU (kuberuntime): shares back to milli-CPU, rounded up; 0 if unset."""
    if shares < MIN_SHARES:
        return 0
    return -(-shares * MILLI_CPU_TO_CPU // SHARES_PER_CPU)


def quota_to_milli_cpu(quota: int, period: int) -> int:
    """quotaToMilliCPU (kuberuntime): quota over period in milli-CPU; 0 for no quota."""
    if quota <= 0 or period <= 0:
        return 0
    return quota * MILLI_CPU_TO_CPU // period


def shares_to_weight(shares: int) -> int:
    """cgroup v2 cpu.weight for v1 shares, as runc maps [2, 262144] onto [1, 10000].

    0 stays 0 ("not set"). runc >= 1.3.2 switched to a quadratic mapping; this is the linear
    one kubelet documentation and most runtimes in the field still use.
    """
    if shares == 0:
        return 0
    shares = max(MIN_SHARES, min(MAX_SHARES, shares))
    return _MIN_WEIGHT + (shares - MIN_SHARES) * (_MAX_WEIGHT - 1) // (MAX_SHARES - MIN_SHARES)


def weight_to_shares(weight: int) -> int:
    """The v1 shares a cgroup v2 cpu.weight stands for: the kubelet's CpuWeightToCpuShares,
    rounded up instead of down so that the shares map back to the same weight. Lossy: one
    weight step is about 26 shares."""
    if weight <= 0:
        return 0
    weight = max(_MIN_WEIGHT, min(_MAX_WEIGHT, weight))
    steps = -(-(weight - _MIN_WEIGHT) * (MAX_SHARES - MIN_SHARES) // (_MAX_WEIGHT - 1))
    return MIN_SHARES + steps


# --- memory and OOM -----------------------------------------------------------------------------


def memory_limit_bytes(quantity: Quantity | None) -> int:
    """Bytes of a memory limit; 0 (no limit) for none."""
    if quantity is None or quantity.is_zero():
        return 0
    return quantity.value()


def oom_score_adj(qos: PodQOSClass, memory_request: int, memory_capacity: int) -> int:
    """GetContainerOOMScoreAdjust (pkg/kubelet/qos/policy.go) for a regular container.

    Guaranteed -997, BestEffort 1000; Burstable 1000 - 1000*request/capacity, kept inside
    [2, 999] so a Burstable container is never scored like a Guaranteed or BestEffort one.
    """
    if qos == "Guaranteed":
        return _GUARANTEED_OOM_SCORE_ADJ
    if qos == "BestEffort":
        return _BEST_EFFORT_OOM_SCORE_ADJ
    if memory_capacity <= 0:
        return _BEST_EFFORT_OOM_SCORE_ADJ - 1
    adj = 1000 - (1000 * memory_request) // memory_capacity
    return max(2, min(_BEST_EFFORT_OOM_SCORE_ADJ - 1, adj))


# --- API → CRI ----------------------------------------------------------------------------------


def _milli(resources: ResourceList | None, name: str) -> int:
    if not resources or name not in resources:
        return 0
    return resources[name].milli_value()


def _bytes(resources: ResourceList | None, name: str) -> int:
    if not resources or name not in resources:
        return 0
    return memory_limit_bytes(resources[name])


def container_resources(
    requirements: ResourceRequirements | None, *, oom_score_adj: int = 0
) -> ContainerResources:
    """The CRI resources of a container (kuberuntime generateLinuxContainerResources).

    Shares come from the CPU request, which API defaulting sets from the limit when absent;
    quota only when a CPU limit is set; a memory limit only when one is set.
    """
    requirements = requirements or ResourceRequirements()
    requests = {**(requirements.limits or {}), **(requirements.requests or {})}
    cpu_limit = _milli(requirements.limits, RESOURCE_CPU)
    quota = milli_cpu_to_quota(cpu_limit)
    return ContainerResources(
        linux=LinuxContainerResources(
            cpu_period=QUOTA_PERIOD if quota else 0,
            cpu_quota=quota,
            cpu_shares=milli_cpu_to_shares(_milli(requests, RESOURCE_CPU)),
            memory_limit_in_bytes=_bytes(requirements.limits, RESOURCE_MEMORY),
            oom_score_adj=oom_score_adj,
        )
    )


def _all_containers_limit(pod: Pod, name: str) -> bool:
    """Is the pod bounded in `name`: by a pod-level limit (KEP-2837), else by every
    container declaring one."""
    pod_level = pod.spec.resources.limits if pod.spec.resources is not None else None
    if pod_level and name in pod_level and not pod_level[name].is_zero():
        return True
    containers = [*pod.spec.containers, *(pod.spec.init_containers or [])]
    return all(
        name in (c.resources.limits or {}) and not (c.resources.limits or {})[name].is_zero()
        for c in containers
    )


def pod_resources(
    pod: Pod, *, source: Literal["spec", "actual"] = "spec"
) -> LinuxContainerResources:
    """ResourceConfigForPod: the pod-level cgroup values for a pod.

    Pass the *allocated* pod (spec replaced by the allocation checkpoint, like the kubelet's
    UpdatePodFromAllocation) with source="spec" for the target of a resize; source="actual"
    uses `status...resources`. Guaranteed: shares, quota and memory; Burstable: shares, plus
    quota / memory only when every container declares that limit (one unbounded container
    leaves the whole pod unbounded); BestEffort: the minimum shares only. Pod-level
    resources (spec.resources) set the values they name, and a pod-level limit bounds the pod.
    """
    requests = pod_requests(pod, source="spec" if source == "spec" else "actual")
    limits = pod_limits(pod, source=source)
    shares = milli_cpu_to_shares(_milli(requests, RESOURCE_CPU))
    quota = milli_cpu_to_quota(_milli(limits, RESOURCE_CPU))
    memory = _bytes(limits, RESOURCE_MEMORY)
    qos = qos_class(pod)
    if qos == "BestEffort":
        return LinuxContainerResources(cpu_shares=MIN_SHARES)
    if qos == "Burstable":
        if not _all_containers_limit(pod, RESOURCE_CPU):
            quota = 0
        if not _all_containers_limit(pod, RESOURCE_MEMORY):
            memory = 0
    return LinuxContainerResources(
        cpu_period=QUOTA_PERIOD if quota else 0,
        cpu_quota=quota,
        cpu_shares=shares,
        memory_limit_in_bytes=memory,
    )


# --- CRI → API ----------------------------------------------------------------------------------


def _same_or(value: Quantity, allocated: Quantity | None) -> Quantity:
    # Keep the allocated spelling ("1.5" rather than "1500m") when the numbers agree, so that
    # status.resources reads like the spec a user wrote.
    if allocated is not None and allocated == value:
        return allocated
    return value


def _reported(milli: int, minimum: int, allocated: Quantity | None) -> Quantity | None:
    """A CPU value read back, or None when the runtime reports none (0).

    At or below what the cgroup can express (2 shares, a 1ms quota) the allocated value is
    kept when it is also at or below that floor, as the kubelet does: a 1m request becomes 2
    shares and would otherwise read back as 2m, a resize that never completes.
    """
    if milli <= 0:
        return None
    if milli <= minimum and (allocated is None or allocated.milli_value() <= minimum):
        return allocated
    return _same_or(Quantity.from_milli(milli), allocated)


def requirements_from_linux(
    linux: LinuxContainerResources | None, allocated: ResourceRequirements | None
) -> ResourceRequirements:
    """`status.containerStatuses[].resources` from what the runtime reports.

    CPU limit from quota/period, CPU request from shares, memory limit from the memory limit;
    every other value (memory request, ephemeral storage, hugepages …) is copied from the
    allocation. `limits` / `requests` appear only when the allocation has them (API defaulting
    gives a container with limits requests too); with neither the result is the empty `{}`
    KEP-1287 says a running container still reports.
    """
    allocated = allocated or ResourceRequirements()
    alloc_limits = dict(allocated.limits or {})
    alloc_requests = {**alloc_limits, **(allocated.requests or {})}
    linux = linux or LinuxContainerResources()
    read_back = (RESOURCE_CPU, RESOURCE_MEMORY)
    limits: ResourceList | None = None
    requests: ResourceList | None = None
    if allocated.limits is not None:
        limits = {n: q for n, q in alloc_limits.items() if n not in read_back}
        cpu_limit = _reported(
            quota_to_milli_cpu(linux.cpu_quota, linux.cpu_period),
            MIN_MILLI_CPU_LIMIT,
            alloc_limits.get(RESOURCE_CPU),
        )
        if cpu_limit is not None:
            limits[RESOURCE_CPU] = cpu_limit
        if linux.memory_limit_in_bytes > 0:
            memory = Quantity.from_int(linux.memory_limit_in_bytes, "BinarySI")
            limits[RESOURCE_MEMORY] = _same_or(memory, alloc_limits.get(RESOURCE_MEMORY))
    if allocated.requests is not None or allocated.limits is not None:
        requests = {n: q for n, q in alloc_requests.items() if n != RESOURCE_CPU}
        cpu_request = _reported(
            shares_to_milli_cpu(linux.cpu_shares), MIN_SHARES, alloc_requests.get(RESOURCE_CPU)
        )
        if cpu_request is not None:
            requests[RESOURCE_CPU] = cpu_request
    return ResourceRequirements(limits=limits, requests=requests)
