"""PodDisruptionBudget decisions: the disruption controller's status and the eviction API's check.

Pure functions over plain objects (no I/O, no clock): the caller lists pods and budgets, reads
the controllers' scales, passes `now`, and writes what comes back.

- `budget_sync` is one sync of kube-controller-manager's disruption controller
  (pkg/controller/disruption/disruption.go: `trySync`, `getExpectedPodCount`,
  `getExpectedScale`, `buildDisruptedPodMap`, `countHealthyPods`, `updatePdbStatus`, and
  `failSafe` when a sync fails), with the DisruptionAllowed condition kept as
  k8s.io/component-helpers/apps/poddisruptionbudget's `UpdateDisruptionAllowedCondition` and
  apimachinery's `meta.SetStatusCondition` keep it.
- `evict_check` is kube-apiserver's eviction subresource
  (pkg/registry/core/pod/storage/eviction.go: `canIgnorePDB`, the one-budget rule, the
  unhealthy-pod policies, `checkAndDecrement`), answering with the Status it answers.
- Percentages scale as apimachinery's `intstr.GetScaledValueFromIntOrPercent` with rounding up,
  which is how the controller calls it for both `minAvailable` and `maxUnavailable`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from schemas.k8s import ConditionStatus, Pod
from schemas.podview import PodHealthLike, is_terminal, pod_ready
from schemas.policy import (
    Condition,
    PodDisruptionBudget,
    PodDisruptionBudgetSpec,
    PodDisruptionBudgetStatus,
    selects,
)

__all__ = [
    "DELETION_TIMEOUT",
    "MAX_DISRUPTED_POD_SIZE",
    "BudgetSync",
    "EvictionVerdict",
    "Notice",
    "budget_sync",
    "evict_check",
]

# How long an eviction's entry in status.disruptedPods keeps the pod out of currentHealthy
# while the controller waits to see the pod marked for deletion (disruption.go DeletionTimeout).
DELETION_TIMEOUT = timedelta(minutes=2)
# More entries than this and the eviction API refuses (eviction.go MaxDisruptedPodSize).
MAX_DISRUPTED_POD_SIZE = 2000

# policy/v1 names (k8s.io/api/policy/v1/types.go).
DISRUPTION_ALLOWED = "DisruptionAllowed"
SUFFICIENT_PODS = "SufficientPods"
INSUFFICIENT_PODS = "InsufficientPods"
SYNC_FAILED = "SyncFailed"
DISRUPTION_BUDGET_CAUSE = "DisruptionBudget"
ALWAYS_ALLOW = "AlwaysAllow"

# kube-apiserver's user-visible texts (eviction.go; errors.NewForbidden's format).
MULTIPLE_BUDGETS = (
    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not "
    "support."
)
WOULD_VIOLATE = "Cannot evict pod as it would violate the pod's disruption budget."


# --- the disruption controller ------------------------------------------------------------------


class _SyncFailed(Exception):
    """A sync the controller gives up on; its text becomes the SyncFailed condition's message."""


ScaleOf = Callable[[str, str], int | None]


@dataclass(frozen=True)
class Notice:
    """An Event one sync records on the budget."""

    type: Literal["Normal", "Warning"]
    reason: str
    message: str


@dataclass(frozen=True)
class BudgetSync:
    status: PodDisruptionBudgetStatus
    notices: list[Notice]


def budget_sync(
    pdb: PodDisruptionBudget,
    pods: Iterable[PodHealthLike],
    now: datetime,
    scale_of: ScaleOf,
) -> BudgetSync:
    """One sync of the disruption controller for `pdb` (trySync, or failSafe when the sync
    fails): the status it writes and what it tells on the budget. `pods` are the pods of the
    budget's namespace; `scale_of(kind, name)` is the desired replicas of a controller in it,
    None when no such controller is known. Kubernetes resolves a ReplicaSet owned by a
    Deployment to the Deployment's replicas; `scale_of` should too. `pdb` is not changed."""
    selected = [pod for pod in pods if selects(pdb.spec.selector, pod.metadata.labels)]
    notices = [] if selected else [Notice("Normal", "NoPods", "No matching pods found")]
    try:
        expected_count, desired_healthy = _expected_pod_count(pdb.spec, selected, scale_of)
    except _SyncFailed as failure:
        notices.append(
            Notice(
                "Warning",
                "CalculateExpectedPodCountFailed",
                f"Failed to calculate the number of expected pods: {failure}",
            )
        )
        return BudgetSync(_fail_safe(pdb.status, str(failure), now), notices)
    disrupted = _disrupted_pod_map(selected, pdb.status.disrupted_pods or {}, now)
    current_healthy = _count_healthy_pods(selected, disrupted, now)
    status = _updated_status(pdb, current_healthy, desired_healthy, expected_count, disrupted, now)
    return BudgetSync(status, notices)


def _expected_pod_count(
    spec: PodDisruptionBudgetSpec, pods: Sequence[PodHealthLike], scale_of: ScaleOf
) -> tuple[int, int]:
    """(expectedPods, desiredHealthy) as getExpectedPodCount: an integer minAvailable counts
    the selected pods; a percentage, or maxUnavailable, counts the controllers' replicas."""
    if spec.max_unavailable is not None:
        expected_count = _expected_scale(pods, scale_of)
        max_unavailable = _scaled_value(spec.max_unavailable, expected_count)
        return expected_count, max(expected_count - max_unavailable, 0)
    if spec.min_available is None:
        return 0, 0
    if isinstance(spec.min_available, int):
        return len(pods), spec.min_available
    expected_count = _expected_scale(pods, scale_of)
    return expected_count, _scaled_value(spec.min_available, expected_count)


def _expected_scale(pods: Sequence[PodHealthLike], scale_of: ScaleOf) -> int:
    """The sum of the replicas of the pods' distinct controllers (getExpectedScale). A pod
    without a controller is left out (Kubernetes only records a warning Event, UnmanagedPods);
    a controller nobody knows fails the sync."""
    scales: dict[tuple[str, str], int] = {}
    for pod in pods:
        owner = _controller_of(pod)
        if owner is None or owner in scales:
            continue
        scale = scale_of(*owner)
        if scale is None:
            raise _SyncFailed(f"found no controllers for pod {_go_quote(pod.metadata.name or '')}")
        scales[owner] = scale
    return sum(scales.values())


def _controller_of(pod: PodHealthLike) -> tuple[str, str] | None:
    """(kind, name) of the owner reference marked controller (metav1.GetControllerOf)."""
    for ref in pod.metadata.owner_references or []:
        if ref.controller:
            return ref.kind, ref.name
    return None


_ATOI = re.compile(r"[+-]?[0-9]+")
_INT64 = 1 << 63


def _scaled_value(value: int | str, total: int) -> int:
    """intstr.GetScaledValueFromIntOrPercent(value, total, roundUp=true), its errors included."""
    if isinstance(value, int):
        return value
    if not value.endswith("%"):
        raise _SyncFailed("invalid value for IntOrString: invalid type: string is not a percentage")
    digits = value[:-1]
    if not _ATOI.fullmatch(digits):
        raise _SyncFailed(_atoi_error(value, digits, "invalid syntax"))
    percent = int(digits)
    if not -_INT64 <= percent < _INT64:
        raise _SyncFailed(_atoi_error(value, digits, "value out of range"))
    return math.ceil(percent * total / 100)


def _atoi_error(value: str, digits: str, why: str) -> str:
    return (
        f"invalid value for IntOrString: invalid value {_go_quote(value)}: "
        f"strconv.Atoi: parsing {_go_quote(digits)}: {why}"
    )


def _disrupted_pod_map(
    pods: Sequence[PodHealthLike], previous: dict[str, datetime], now: datetime
) -> dict[str, datetime]:
    """buildDisruptedPodMap: the entries of pods still selected and not being deleted whose
    deadline (eviction time + DELETION_TIMEOUT) is not yet past; an entry whose pod is gone,
    is being deleted, or outlived its deadline is dropped."""
    kept: dict[str, datetime] = {}
    for pod in pods:
        name = pod.metadata.name or ""
        if pod.metadata.deletion_timestamp is not None or name not in previous:
            continue
        if not previous[name] + DELETION_TIMEOUT < now:
            kept[name] = previous[name]
    return kept


def _count_healthy_pods(
    pods: Sequence[PodHealthLike], disrupted: dict[str, datetime], now: datetime
) -> int:
    """countHealthyPods: Ready pods, less those being deleted and those an eviction let go
    whose deadline is still ahead (strictly: at the deadline the pod counts again)."""
    healthy = 0
    for pod in pods:
        if pod.metadata.deletion_timestamp is not None:
            continue
        evicted_at = disrupted.get(pod.metadata.name or "")
        if evicted_at is not None and evicted_at + DELETION_TIMEOUT > now:
            continue
        if pod_ready(pod):
            healthy += 1
    return healthy


def _updated_status(
    pdb: PodDisruptionBudget,
    current_healthy: int,
    desired_healthy: int,
    expected_count: int,
    disrupted: dict[str, datetime],
    now: datetime,
) -> PodDisruptionBudgetStatus:
    """updatePdbStatus. disruptionsAllowed stays 0 while the budget expects no pods, so a budget
    whose first pods appear before the controller has seen them is safe."""
    allowed = current_healthy - desired_healthy
    if expected_count <= 0 or allowed <= 0:
        allowed = 0
    old = pdb.status
    if (
        old.current_healthy == current_healthy
        and old.desired_healthy == desired_healthy
        and old.expected_pods == expected_count
        and old.disruptions_allowed == allowed
        and (old.disrupted_pods or {}) == disrupted
        and (old.observed_generation or 0) == (pdb.metadata.generation or 0)
        and _conditions_up_to_date(pdb)
    ):
        return old.model_copy(deep=True)  # Kubernetes writes nothing then
    status = PodDisruptionBudgetStatus(
        observed_generation=pdb.metadata.generation,
        disrupted_pods=disrupted or None,  # Go's omitempty: an empty map is not written
        disruptions_allowed=allowed,
        current_healthy=current_healthy,
        desired_healthy=desired_healthy,
        expected_pods=expected_count,
        conditions=old.conditions,
    )
    return _with_disruption_allowed_condition(status, now)


def _conditions_up_to_date(pdb: PodDisruptionBudget) -> bool:
    """pdbhelper.ConditionsAreUpToDate."""
    status = pdb.status
    cond = _find_condition(status.conditions, DISRUPTION_ALLOWED)
    if cond is None or (status.observed_generation or 0) != (pdb.metadata.generation or 0):
        return False
    if status.disruptions_allowed > 0:
        return cond.status == "True" and cond.reason == SUFFICIENT_PODS
    return cond.status == "False" and cond.reason == INSUFFICIENT_PODS


def _fail_safe(
    old: PodDisruptionBudgetStatus, message: str, now: datetime
) -> PodDisruptionBudgetStatus:
    """failSafe: the previous status with disruptionsAllowed 0 and DisruptionAllowed False /
    SyncFailed, so the eviction API refuses while the budget cannot be computed."""
    conditions = _set_condition(
        old.conditions,
        Condition(
            type=DISRUPTION_ALLOWED,
            status="False",
            reason=SYNC_FAILED,
            message=message,
            observed_generation=old.observed_generation,
            last_transition_time=now,
        ),
    )
    return _with(old, disruptions_allowed=0, conditions=conditions)


# --- conditions ---------------------------------------------------------------------------------


def _with_disruption_allowed_condition(
    status: PodDisruptionBudgetStatus, now: datetime
) -> PodDisruptionBudgetStatus:
    """pdbhelper.UpdateDisruptionAllowedCondition: True/SufficientPods while disruptions are
    allowed, else False/InsufficientPods; observedGeneration from the status."""
    allowed: ConditionStatus = "True" if status.disruptions_allowed > 0 else "False"
    wanted = Condition(
        type=DISRUPTION_ALLOWED,
        status=allowed,
        reason=SUFFICIENT_PODS if allowed == "True" else INSUFFICIENT_PODS,
        observed_generation=status.observed_generation,
        last_transition_time=now,
    )
    return _with(status, conditions=_set_condition(status.conditions, wanted))


def _set_condition(conditions: list[Condition] | None, wanted: Condition) -> list[Condition]:
    """meta.SetStatusCondition on a copy: a condition of the same type keeps its
    lastTransitionTime unless its status changes; reason, message and observedGeneration are
    always replaced; a new type is appended. `wanted.last_transition_time` is `now`."""
    result: list[Condition] = []
    found = False
    for cond in conditions or []:
        if cond.type != wanted.type or found:  # only the first of a type, as FindStatusCondition
            result.append(cond.model_copy(deep=True))
            continue
        found = True
        if cond.status == wanted.status:
            wanted = wanted.model_copy(update={"last_transition_time": cond.last_transition_time})
        result.append(wanted)
    if not found:
        result.append(wanted)
    return result


def _find_condition(conditions: list[Condition] | None, kind: str) -> Condition | None:
    return next((c for c in conditions or [] if c.type == kind), None)


def _with(status: PodDisruptionBudgetStatus, **changes: Any) -> PodDisruptionBudgetStatus:
    """A validated copy of `status` with `changes` (times truncated as metav1.Time is)."""
    return PodDisruptionBudgetStatus.model_validate({**status.model_dump(), **changes})


# --- the eviction API ---------------------------------------------------------------------------


@dataclass(frozen=True)
class EvictionVerdict:
    """kube-apiserver's answer to an eviction, before it deletes the pod.

    `code`, `reason`, `message` and `causes` ((type, message) pairs) are the Status it answers
    with (201 and an empty message when the pod may go). `budget` is the budget with the status
    to write first when the eviction used up a disruption (not written for a dry run), else
    None. `retry_after_seconds` is the Status details' retryAfterSeconds of a 429 (kube sends
    Retry-After when it is > 0). Kubernetes also deletes with the pod's resourceVersion as a
    precondition, so a pod that became Ready meanwhile is not deleted past its budget; here the
    check and the delete run under the pod's write lock, back to back.
    """

    allowed: bool
    code: int
    reason: str
    message: str
    causes: list[tuple[str, str]] = field(default_factory=list)
    budget: PodDisruptionBudget | None = None
    retry_after_seconds: int = 0


def evict_check(pod: Pod, budgets: Iterable[PodDisruptionBudget], now: datetime) -> EvictionVerdict:
    """Whether the eviction API lets `pod` go (EvictionREST.Create up to the delete). `budgets`
    are the PodDisruptionBudgets of the pod's namespace; those whose selector picks the pod
    apply."""
    if _can_ignore_pdb(pod):
        return _allowed()
    matching = [pdb for pdb in budgets if selects(pdb.spec.selector, pod.metadata.labels)]
    if len(matching) > 1:
        # A plain metav1.Status (Failure, code 500) with no reason, as eviction.go builds it.
        return EvictionVerdict(allowed=False, code=500, reason="", message=MULTIPLE_BUDGETS)
    if not matching:
        return _allowed()
    pdb = matching[0]
    if not pod_ready(pod) and _unhealthy_pod_may_go(pdb):
        # Not Ready: it does not count towards currentHealthy, so no disruption is used.
        return _allowed()
    return _check_and_decrement(pdb, pod.metadata.name or "", now)


def _stale_budget_verdict(budget_name: str) -> EvictionVerdict:
    """The 429 for a budget the controller has not caught up with (createTooManyRequestsError):
    its observedGeneration is behind, or a delete pinned to the pod's resourceVersion hit a
    conflict."""
    return _too_many_requests(
        f"The disruption budget {budget_name} is still being processed by the server.",
        retry_after_seconds=10,
    )


def _can_ignore_pdb(pod: Pod) -> bool:
    """canIgnorePDB: a terminal or Pending pod, or one already being deleted, disrupts nothing
    more by going."""
    return (
        is_terminal(pod)
        or pod.status.phase == "Pending"
        or pod.metadata.deletion_timestamp is not None
    )


def _unhealthy_pod_may_go(pdb: PodDisruptionBudget) -> bool:
    """unhealthyPodEvictionPolicy for a pod that is not Ready: AlwaysAllow lets it go;
    IfHealthyBudget (or unset) only while the application is not disrupted."""
    if pdb.spec.unhealthy_pod_eviction_policy == ALWAYS_ALLOW:
        return True
    status = pdb.status
    return status.current_healthy >= status.desired_healthy and status.desired_healthy > 0


def _check_and_decrement(pdb: PodDisruptionBudget, pod_name: str, now: datetime) -> EvictionVerdict:
    """checkAndDecrement: refuse, or take one disruption and record the pod in disruptedPods."""
    status = pdb.status
    name = pdb.metadata.name or ""
    if (status.observed_generation or 0) < (pdb.metadata.generation or 0):
        return _stale_budget_verdict(name)
    if status.disruptions_allowed < 0:
        return _forbidden(name, "pdb disruptions allowed is negative")
    if len(status.disrupted_pods or {}) > MAX_DISRUPTED_POD_SIZE:
        return _forbidden(
            name, "DisruptedPods map too big - too many evictions not confirmed by PDB controller"
        )
    if status.disruptions_allowed == 0:
        return _too_many_requests(
            f"The disruption budget {name} needs {status.desired_healthy} healthy pods "
            f"and has {status.current_healthy} currently",
            retry_after_seconds=0,
        )
    decremented = _with(
        status,
        disruptions_allowed=status.disruptions_allowed - 1,
        disrupted_pods={**(status.disrupted_pods or {}), pod_name: now},
    )
    if decremented.disruptions_allowed == 0:
        decremented = _with_disruption_allowed_condition(decremented, now)
    return _allowed(budget=pdb.model_copy(deep=True, update={"status": decremented}))


def _allowed(budget: PodDisruptionBudget | None = None) -> EvictionVerdict:
    return EvictionVerdict(allowed=True, code=201, reason="", message="", budget=budget)


def _too_many_requests(cause: str, retry_after_seconds: int) -> EvictionVerdict:
    """errors.NewTooManyRequests(WOULD_VIOLATE, …) with one DisruptionBudget cause."""
    return EvictionVerdict(
        allowed=False,
        code=429,
        reason="TooManyRequests",
        message=WOULD_VIOLATE,
        causes=[(DISRUPTION_BUDGET_CAUSE, cause)],
        retry_after_seconds=retry_after_seconds,
    )


def _forbidden(budget_name: str, why: str) -> EvictionVerdict:
    """errors.NewForbidden(policy.Resource("poddisruptionbudget"), name, why)."""
    message = f"poddisruptionbudget.policy {_go_quote(budget_name)} is forbidden: {why}"
    return EvictionVerdict(allowed=False, code=403, reason="Forbidden", message=message)


def _go_quote(text: str) -> str:
    """Go's %q for the printable text of object names and IntOrString values."""
    return json.dumps(text, ensure_ascii=False)
