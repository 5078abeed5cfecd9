"""What a pod charges against a ResourceQuota (issue 6; KEP-1287 "Resource Quota").

Kubernetes' pod evaluator (pkg/quota/v1/evaluator/core/pods.go) turns a pod's effective requests
and limits into quota resources: `cpu` and `requests.cpu` from requests, `limits.cpu` from
limits, the same for memory and ephemeral-storage, `hugepages-*` / `requests.hugepages-*`, plus
`pods` (1 while not terminal) and `count/pods` (1 always, as object count).

KEP-1287: quota must see a pending resize the way the scheduler does, so a container counts
for the max of its desired requests (spec) and what its node granted (`allocatedResources`,
`status...resources`); when the resize is Infeasible only what was granted, since that spec will
never be applied. Limits count as max(spec, status) (status alone when Infeasible). Shrinking a
pod therefore frees quota only once the kubelet has applied the smaller size. This is Kubernetes'
PodRequests/PodLimits with UseStatusResources.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Final, NamedTuple

from schemas.k8s import (
    RESOURCE_CPU,
    RESOURCE_EPHEMERAL_STORAGE,
    RESOURCE_MEMORY,
    RESOURCE_PODS,
    Container,
    Pod,
    ResourceList,
    ResourceQuota,
)
from schemas.podview import PodLike, is_terminal
from schemas.quantity import ZERO, Quantity
from schemas.resources import (
    add,
    container_requests,
    pod_limits,
    qos_class,
    scheduling_requests,
)

__all__ = [
    "COUNT_PODS",
    "POD_RESOURCES",
    "VALIDATION_SET",
    "ScopeFacts",
    "container_usage_names",
    "effective_limits",
    "effective_requests",
    "is_charged",
    "matches_scopes",
    "matching_resources",
    "namespace_usage",
    "pod_usage",
    "quota_hard",
    "quota_used",
    "scope_facts",
    "scopes_select",
]

COUNT_PODS: Final = "count/pods"
_REQUESTS: Final = "requests."
_LIMITS: Final = "limits."
_HUGEPAGES: Final = "hugepages-"

# The quota resources a pod can consume (podResources in pods.go), plus the hugepages prefixes.
POD_RESOURCES: Final = frozenset(
    {
        COUNT_PODS,
        RESOURCE_PODS,
        RESOURCE_CPU,
        RESOURCE_MEMORY,
        RESOURCE_EPHEMERAL_STORAGE,
        _REQUESTS + RESOURCE_CPU,
        _REQUESTS + RESOURCE_MEMORY,
        _REQUESTS + RESOURCE_EPHEMERAL_STORAGE,
        _LIMITS + RESOURCE_CPU,
        _LIMITS + RESOURCE_MEMORY,
        _LIMITS + RESOURCE_EPHEMERAL_STORAGE,
    }
)

# A quota on these makes every container spell them out ("must specify …"). Kubernetes calls
# this a mistake it keeps for compatibility and never extends; so do we.
VALIDATION_SET: Final = frozenset(
    {
        RESOURCE_CPU,
        RESOURCE_MEMORY,
        _REQUESTS + RESOURCE_CPU,
        _REQUESTS + RESOURCE_MEMORY,
        _LIMITS + RESOURCE_CPU,
        _LIMITS + RESOURCE_MEMORY,
    }
)

_ONE: Final = Quantity.from_int(1)


# --- effective requests and limits (KEP-1287) -----------------------------------------------------


def effective_requests(pod: PodLike) -> ResourceList:
    """Requests quota charges for: per container max(spec, granted), granted if Infeasible;
    pod-level requests by the same rule (one definition: schemas.resources)."""
    return scheduling_requests(pod)


def effective_limits(pod: PodLike) -> ResourceList:
    """Limits quota charges for: max(spec, status) per container; status alone if Infeasible."""
    return pod_limits(pod, source="max")


# --- usage ----------------------------------------------------------------------------------------


def is_charged(pod: PodLike, now: datetime | None = None) -> bool:
    """False for a pod quota no longer charges compute resources for (QuotaV1Pod).

    A terminal pod holds nothing; a pod stuck terminating past its grace period (its node is
    lost) must not block the replacement its owner is trying to create.
    """
    if is_terminal(pod):
        return False
    meta = pod.metadata
    if now is not None and meta.deletion_timestamp is not None:
        grace = meta.deletion_grace_period_seconds
        if grace is not None and now > meta.deletion_timestamp + timedelta(seconds=grace):
            return False
    return True


def _compute_usage(
    requests: Mapping[str, Quantity], limits: Mapping[str, Quantity]
) -> ResourceList:
    """podComputeUsageHelper: quota resource names from a requests and a limits list."""
    usage: ResourceList = {RESOURCE_PODS: _ONE}
    for name in (RESOURCE_CPU, RESOURCE_MEMORY, RESOURCE_EPHEMERAL_STORAGE):
        if name in requests:
            usage[name] = requests[name]
            usage[_REQUESTS + name] = requests[name]
        if name in limits:
            usage[_LIMITS + name] = limits[name]
    for name, quantity in requests.items():
        if name.startswith(_HUGEPAGES):
            usage[name] = quantity
            usage[_REQUESTS + name] = quantity
    return usage


def pod_usage(pod: PodLike, now: datetime | None = None) -> ResourceList:
    """Everything `pod` charges: `count/pods` always; compute resources while charged."""
    usage: ResourceList = {COUNT_PODS: _ONE}
    if not is_charged(pod, now):
        return usage
    return add(usage, _compute_usage(effective_requests(pod), effective_limits(pod)))


def namespace_usage(pods: Iterable[Pod], now: datetime | None = None) -> ResourceList:
    """Sum of pod_usage over `pods`."""
    total: ResourceList = {}
    for pod in pods:
        total = add(total, pod_usage(pod, now))
    return total


def container_usage_names(container: Container) -> frozenset[str]:
    """The quota resources a single container spells out (for the "must specify" check).

    Requests default from limits first, as the apiserver's defaulting does before admission.
    """
    requests = container_requests(container)
    limits = container.resources.limits or {}
    return frozenset(_compute_usage(requests, limits))


# --- quotas ---------------------------------------------------------------------------------------


def quota_hard(quota: ResourceQuota) -> ResourceList:
    """The limits a quota enforces: `status.hard` (what Kubernetes admission reads) once the
    quota controller has published it, else `spec.hard`."""
    return dict(quota.status.hard if quota.status.hard is not None else quota.spec.hard or {})


def matching_resources(names: Iterable[str]) -> list[str]:
    """Those of `names` a pod can consume (podEvaluator.MatchingResources), sorted."""
    return sorted(
        name
        for name in names
        if name in POD_RESOURCES
        or name.startswith(_HUGEPAGES)
        or name.startswith(_REQUESTS + _HUGEPAGES)
    )


class ScopeFacts(NamedTuple):
    """What quota scopes look at in a pod: all that decides whether a quota selects it."""

    best_effort: bool  # QoS class BestEffort
    priority_class: bool  # names a PriorityClass


def scope_facts(pod: PodLike) -> ScopeFacts:
    return ScopeFacts(qos_class(pod) == "BestEffort", bool(pod.spec.priority_class_name))


def scopes_select(scopes: Iterable[str] | None, facts: ScopeFacts) -> bool:
    """Every scope selects a pod with these facts (podMatchesScopeFunc; no scopes select all).

    This API has no activeDeadlineSeconds and no pod affinity, so no pod is Terminating or
    uses cross-namespace affinity; a PriorityClass scope selects pods naming a class.
    """
    for scope in scopes or []:
        if scope == "NotTerminating":
            continue
        if scope == "BestEffort" and facts.best_effort:
            continue
        if scope == "NotBestEffort" and not facts.best_effort:
            continue
        if scope == "PriorityClass" and facts.priority_class:
            continue
        return False
    return True


def matches_scopes(quota: ResourceQuota, pod: Pod) -> bool:
    """Every scope of the quota selects the pod (`scopes_select` over its `scope_facts`)."""
    return scopes_select(quota.spec.scopes, scope_facts(pod))


def quota_used(
    quota: ResourceQuota, pods: Iterable[Pod], now: datetime | None = None
) -> ResourceList:
    """`status.used` of a quota: usage of the pods its scopes select, for each hard resource.

    Every hard resource gets a value (zero when unused), as the quota controller publishes it.
    """
    hard = quota_hard(quota)
    usage = namespace_usage((pod for pod in pods if matches_scopes(quota, pod)), now)
    return {name: usage.get(name, ZERO) for name in matching_resources(hard)}
