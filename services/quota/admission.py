"""Pod admission against LimitRanges and ResourceQuotas, as the apiserver calls it (issue 6).

The order and the words are Kubernetes': the LimitRanger mutating plugin fills in defaults on
create, then LimitRanger validation (min, max, maxLimitRequestRatio for the Container and Pod
types), then ResourceQuota. A refusal is a 403 Forbidden whose message is what
`admission.NewForbidden` builds: `pods "NAME" is forbidden: <reason>`.

KEP-1287 ("Affected Components"): both plugins also see `pods/resize`. A resize is validated
against the LimitRanges like a new pod (no defaulting: a resize only changes what the user
wrote) and charged to quota by the delta between the pod's usage with the new spec and its
current usage, floored at zero per resource; a shrink is never refused by quota.

Deliberate choices, each against a race or nondeterminism in Kubernetes' own implementation:
- `used` comes from the namespace's pods as given (their KEP-1287 usage), not from a quota's
  `status.used`, which may lag the log; the caller counts the requests it admitted that are not
  on the log yet, so two resizes cannot both pass a quota that fits only one. A caller that
  keeps running totals gives `used` (a quota → its usage) instead of the pods.
- LimitRanges and quotas are visited by name, and resources by name, where Kubernetes walks
  informer lists and Go maps in no fixed order (it decides which message a user sees).
- The Pod-type LimitRange on a resize checks the desired totals (spec), as the Container type
  does, where Kubernetes takes max(spec, allocated) and so lets a shrink below `min` through.

A refusal's facts (the quota and its amounts, the LimitRange bounds) are kept as data beside
the words (`Denied.quota`, `Denied.limit_range`), built from the same values the message
prints, so the webhook can answer with both and nobody has to parse the message.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final, Literal

from schemas.admission import LimitRangeFacts, QuotaFacts, RefusalFacts
from schemas.k8s import (
    Container,
    LimitRange,
    LimitRangeItem,
    Pod,
    ResourceList,
    ResourceQuota,
    Status,
    StatusDetails,
)
from schemas.quantity import ZERO, Quantity
from schemas.resources import add, container_requests, pod_limits, pod_requests, subtract
from services.quota.usage import (
    VALIDATION_SET,
    container_usage_names,
    matches_scopes,
    matching_resources,
    pod_usage,
    quota_hard,
    quota_used,
)

__all__ = [
    "LIMIT_RANGER_ANNOTATION",
    "Allowed",
    "Denied",
    "LimitViolation",
    "Operation",
    "QuotaUsage",
    "QuotaViolation",
    "admit",
    "apply_api_defaults",
    "apply_limit_range_defaults",
    "check_quotas",
    "default_limit_range_item",
    "first_limit_range_violations",
    "limit_range_errors",
    "pods_usage",
    "validate_limit_ranges",
]

Operation = Literal["CREATE", "RESIZE"]
# A quota's `used` for a decision (`usage.quota_used`: its matching hard resources, zero-filled)
# over the namespace's pods with the admitted pod in its current state, not the requested one.
QuotaUsage = Callable[[ResourceQuota], ResourceList]

LIMIT_RANGER_ANNOTATION: Final = "kubernetes.io/limit-ranger"
_MAX_MILLI_VALUE: Final = (2**63 - 1) // 1000  # resource.MaxMilliValue


@dataclass(frozen=True, slots=True)
class Allowed:
    """Admit `pod`: on create it carries the LimitRange defaults; on resize it is unchanged."""

    pod: Pod


@dataclass(frozen=True, slots=True)
class LimitViolation:
    """One LimitRange bound a pod breaks: Kubernetes' words (`message`) and their facts."""

    message: str
    resource: str
    per: str  # the LimitRangeItem type: Container | Pod
    bound: Literal["minimum", "maximum", "maxLimitRequestRatio"]
    enforced: Quantity
    field: Literal["request", "limit", "ratio"] | None = None  # None: none specified
    actual: str | None = None

    def facts(self) -> LimitRangeFacts:
        return LimitRangeFacts(
            resource=self.resource,
            per=self.per,
            bound=self.bound,
            enforced=self.enforced,
            field=self.field,
            actual=self.actual,
        )


@dataclass(frozen=True, slots=True)
class QuotaViolation:
    """The ResourceQuota a request breaks: Kubernetes' words and the exceeded resources'
    amounts (all empty for "must specify")."""

    message: str
    quota: str
    requested: ResourceList = dataclasses.field(default_factory=dict)
    used: ResourceList = dataclasses.field(default_factory=dict)
    hard: ResourceList = dataclasses.field(default_factory=dict)

    def facts(self) -> QuotaFacts:
        return QuotaFacts(name=self.quota, requested=self.requested, used=self.used, hard=self.hard)


@dataclass(frozen=True, slots=True)
class Denied:
    """Refuse the request: the apiserver answers with `to_status()`, and `facts()` beside it."""

    message: str
    name: str = "Unknown"
    code: int = 403
    reason: str = "Forbidden"
    details_kind: str = "pods"
    quota: QuotaViolation | None = None
    limit_range: tuple[LimitViolation, ...] = ()

    def facts(self) -> RefusalFacts | None:
        """The policy's facts as data (None: nothing to tell beyond the message)."""
        if self.quota is None and not self.limit_range:
            return None
        return RefusalFacts(
            quota=self.quota.facts() if self.quota else None,
            limit_range=[v.facts() for v in self.limit_range] or None,
        )

    def to_status(self) -> Status:
        """The metav1.Status body apierrors.NewForbidden produces."""
        return Status(
            status="Failure",
            message=self.message,
            reason=self.reason,
            details=StatusDetails(name=self.name, kind=self.details_kind),
            code=self.code,
        )


def _object_name(pod: Pod) -> str:
    # extractResourceName: the name, else generateName (not generated yet), else "Unknown".
    return pod.metadata.name or pod.metadata.generate_name or "Unknown"


def _forbidden(
    pod: Pod,
    reason: str,
    *,
    quota: QuotaViolation | None = None,
    limit_range: Sequence[LimitViolation] = (),
) -> Denied:
    name = _object_name(pod)
    return Denied(
        message=f'pods "{name}" is forbidden: {reason}',
        name=name,
        quota=quota,
        limit_range=tuple(limit_range),
    )


def admit(
    quotas: Iterable[ResourceQuota],
    limit_ranges: Iterable[LimitRange],
    namespace_pods: Iterable[Pod],
    operation: Operation,
    old_pod: Pod | None,
    new_pod: Pod,
    *,
    now: datetime | None = None,
    used: QuotaUsage | None = None,
) -> Allowed | Denied:
    """Admit a pod create or resize in one namespace.

    `namespace_pods` are the namespace's pods as stored (the resized pod may be among them in
    its current state; it is counted as `old_pod`). `old_pod` is required for RESIZE.
    `now` lets quota stop charging pods stuck terminating past their grace period.
    `used`, when given, is each quota's usage instead of a sum over `namespace_pods`.
    """
    ranges = sorted(limit_ranges, key=lambda lr: lr.metadata.name or "")
    pod = new_pod
    if operation == "CREATE":
        pod = apply_limit_range_defaults(apply_api_defaults(new_pod), ranges)
    elif old_pod is None:
        raise ValueError("a RESIZE needs the pod as stored (old_pod)")
    violations = first_limit_range_violations(ranges, pod)
    if violations:
        message = _aggregate_message([v.message for v in violations])
        return _forbidden(pod, message, limit_range=violations)
    exceeded = check_quotas(quotas, namespace_pods, operation, old_pod, pod, now=now, used=used)
    if exceeded is not None:
        return _forbidden(pod, exceeded.message, quota=exceeded)
    return Allowed(pod)


# --- defaults -------------------------------------------------------------------------------------


def apply_api_defaults(pod: Pod) -> Pod:
    """SetDefaults_Pod's resource rule: a container's missing request defaults to its limit.

    The apiserver does this before any admission plugin; LimitRanger's defaultRequest must only
    fill what is still missing afterwards. Returns a copy; idempotent.
    """
    result = pod.model_copy(deep=True)
    for container in [*result.spec.containers, *(result.spec.init_containers or [])]:
        limits = container.resources.limits or {}
        requests = container.resources.requests
        missing = {
            name: q for name, q in limits.items() if requests is None or name not in requests
        }
        if missing:
            container.resources.requests = {**(requests or {}), **missing}
    return result


def default_limit_range_item(item: LimitRangeItem) -> LimitRangeItem:
    """SetDefaults_LimitRangeItem, for Container items: default ← max, defaultRequest ←
    default, then defaultRequest ← min. The apiserver applies it when a LimitRange is
    stored; applying it again is harmless, and guards against a LimitRange stored without it."""
    if item.type != "Container":
        return item
    default = dict(item.default or {})
    for name, quantity in (item.max or {}).items():
        default.setdefault(name, quantity)
    default_request = dict(item.default_request or {})
    for name, quantity in default.items():
        default_request.setdefault(name, quantity)
    for name, quantity in (item.min or {}).items():
        default_request.setdefault(name, quantity)
    return item.model_copy(update={"default": default, "default_request": default_request})


def _merge_defaults(
    container: Container, limits: ResourceList, requests: ResourceList, prefix: str
) -> list[str]:
    """mergeContainerResources: fill what the container leaves unset; say what was set."""
    own_limits = dict(container.resources.limits or {})
    own_requests = dict(container.resources.requests or {})
    set_limits = sorted(name for name in limits if name not in own_limits)
    set_requests = sorted(name for name in requests if name not in own_requests)
    if not set_limits and not set_requests:
        return []
    container.resources.limits = {**own_limits, **{n: limits[n] for n in set_limits}}
    container.resources.requests = {**own_requests, **{n: requests[n] for n in set_requests}}
    notes = []
    if set_requests:
        notes.append(f"{', '.join(set_requests)} request for {prefix} {container.name}")
    if set_limits:
        notes.append(f"{', '.join(set_limits)} limit for {prefix} {container.name}")
    return notes


def apply_limit_range_defaults(pod: Pod, limit_ranges: Sequence[LimitRange]) -> Pod:
    """LimitRanger's mutation on create: per LimitRange, the Container items' `default` limits
    and `defaultRequest` requests fill what each container leaves unset, noted in the
    `kubernetes.io/limit-ranger` annotation. Returns a copy."""
    result = pod.model_copy(deep=True)
    for limit_range in limit_ranges:
        limits: ResourceList = {}
        requests: ResourceList = {}
        for item in limit_range.spec.limits:
            if item.type == "Container":
                item = default_limit_range_item(item)
                requests.update(item.default_request or {})
                limits.update(item.default or {})
        notes: list[str] = []
        for container in result.spec.containers:
            notes += _merge_defaults(container, limits, requests, "container")
        for container in result.spec.init_containers or []:
            notes += _merge_defaults(container, limits, requests, "init container")
        if notes:
            annotations = dict(result.metadata.annotations or {})
            annotations[LIMIT_RANGER_ANNOTATION] = "LimitRanger plugin set: " + "; ".join(notes)
            result.metadata.annotations = annotations
    return result


# --- LimitRange validation ------------------------------------------------------------------------


def _comparable(*quantities: Quantity) -> list[int]:
    """requestLimitEnforcedValues: milli-units when none overflows int64 there, else units."""
    values = [q.value() for q in quantities]
    if all(v <= _MAX_MILLI_VALUE for v in values):
        return [q.milli_value() for q in quantities]
    return values


def _bound_violation(
    bound: Literal["minimum", "maximum"],
    kind: str,
    name: str,
    enforced: Quantity,
    field: Literal["request", "limit"] | None = None,
    actual: Quantity | None = None,
) -> LimitViolation:
    """min/max: "BOUND NAME usage per KIND is ENFORCED, but FIELD is ACTUAL", or the missing
    request (minimum) / limit (maximum) one."""
    head = f"{bound} {name} usage per {kind} is {enforced}"
    if field is None:
        missing = "request" if bound == "minimum" else "limit"
        message = f"{head}.  No {missing} is specified"
    else:
        message = f"{head}, but {field} is {actual}"
    shown = None if actual is None else str(actual)
    return LimitViolation(message, name, kind, bound, enforced, field, shown)


def _min_error(
    kind: str, name: str, enforced: Quantity, requests: ResourceList, limits: ResourceList
) -> LimitViolation | None:
    request, limit = requests.get(name), limits.get(name)
    req, lim, enf = _comparable(request or ZERO, limit or ZERO, enforced)
    if request is None:
        return _bound_violation("minimum", kind, name, enforced)
    if req < enf:
        return _bound_violation("minimum", kind, name, enforced, "request", request)
    if limit is not None and lim < enf:
        return _bound_violation("minimum", kind, name, enforced, "limit", limit)
    return None


def _max_error(
    kind: str, name: str, enforced: Quantity, requests: ResourceList, limits: ResourceList
) -> LimitViolation | None:
    request, limit = requests.get(name), limits.get(name)
    req, lim, enf = _comparable(request or ZERO, limit or ZERO, enforced)
    if limit is None:
        return _bound_violation("maximum", kind, name, enforced)
    if lim > enf:
        return _bound_violation("maximum", kind, name, enforced, "limit", limit)
    if request is not None and req > enf:
        return _bound_violation("maximum", kind, name, enforced, "request", request)
    return None


def _ratio_error(
    kind: str, name: str, enforced: Quantity, requests: ResourceList, limits: ResourceList
) -> LimitViolation | None:
    request, limit = requests.get(name), limits.get(name)
    req, lim, _ = _comparable(request or ZERO, limit or ZERO, enforced)
    prefix = f"{name} max limit to request ratio per {kind} is {enforced}"

    def violation(message: str, actual: str | None = None) -> LimitViolation:
        field: Literal["ratio"] | None = "ratio" if actual is not None else None
        return LimitViolation(message, name, kind, "maxLimitRequestRatio", enforced, field, actual)

    if request is None or req == 0:
        return violation(f"{prefix}, but no request is specified or request is 0")
    if limit is None or lim == 0:
        return violation(f"{prefix}, but no limit is specified or limit is 0")
    observed = lim / req
    shown = observed
    ceiling = float(enforced.value())
    if enforced.value() <= _MAX_MILLI_VALUE:
        observed *= 1000
        ceiling = float(enforced.milli_value())
    if observed > ceiling:
        return violation(f"{prefix}, but provided ratio is {shown:f}", f"{shown:f}")
    return None


def _item_errors(
    item: LimitRangeItem, requests: ResourceList, limits: ResourceList
) -> list[LimitViolation]:
    errors: list[LimitViolation] = []
    checks = (
        (item.min, _min_error),
        (item.max, _max_error),
        (item.max_limit_request_ratio, _ratio_error),
    )
    for bounds, check in checks:
        for name in sorted(bounds or {}):
            error = check(item.type, name, (bounds or {})[name], requests, limits)
            if error is not None:
                errors.append(error)
    return errors


def _without_overhead(pod: Pod) -> Pod:
    # LimitRanger's Pod type bounds what the containers ask for; the runtime's overhead is not
    # the user's to bound.
    return pod.model_copy(update={"spec": pod.spec.model_copy(update={"overhead": None})})


def limit_range_errors(limit_range: LimitRange, pod: Pod) -> list[LimitViolation]:
    """PodValidateLimitFunc: every violation of one LimitRange, in a stable order.

    Container items bound each container and init container (requests defaulted from limits);
    Pod items bound the pod's aggregate requests and limits (sidecar rules, no overhead).
    """
    errors: list[LimitViolation] = []
    for item in limit_range.spec.limits:
        if item.type == "Container":
            for container in [*pod.spec.containers, *(pod.spec.init_containers or [])]:
                requests = container_requests(container)
                limits = dict(container.resources.limits or {})
                errors += _item_errors(item, requests, limits)
        elif item.type == "Pod":
            bare = _without_overhead(pod)
            requests = pod_requests(bare, source="spec")
            limits = pod_limits(bare, source="spec")
            errors += _item_errors(item, requests, limits)
    return errors


def _aggregate_message(errors: Sequence[str]) -> str:
    """utilerrors.NewAggregate(...).Error(): duplicates dropped, brackets for more than one."""
    unique = list(dict.fromkeys(errors))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


def first_limit_range_violations(
    limit_ranges: Sequence[LimitRange], pod: Pod
) -> list[LimitViolation]:
    """The violations of the first LimitRange the pod violates (empty: none), each message
    once, as the aggregate message says them."""
    for limit_range in limit_ranges:
        errors = limit_range_errors(limit_range, pod)
        if errors:
            unique: dict[str, LimitViolation] = {}
            for violation in errors:
                unique.setdefault(violation.message, violation)
            return list(unique.values())
    return []


def validate_limit_ranges(limit_ranges: Sequence[LimitRange], pod: Pod) -> str | None:
    """The error of the first LimitRange the pod violates, else None."""
    violations = first_limit_range_violations(limit_ranges, pod)
    return _aggregate_message([v.message for v in violations]) if violations else None


# --- ResourceQuota --------------------------------------------------------------------------------


def _constraints_error(required: Iterable[str], pod: Pod) -> str | None:
    """podEvaluator.Constraints: with cpu or memory under quota, every container must say so.

    "must specify limits.cpu for: app,sidecar; requests.memory for: app", names sorted.
    """
    required_set = VALIDATION_SET.intersection(required)
    missing: dict[str, set[str]] = {}
    for container in [*pod.spec.containers, *(pod.spec.init_containers or [])]:
        for name in required_set - container_usage_names(container):
            missing.setdefault(name, set()).add(container.name)
    if not missing:
        return None
    parts = [f"{name} for: {','.join(sorted(missing[name]))}" for name in sorted(missing)]
    return "must specify " + "; ".join(parts)


def _pretty(resources: Mapping[str, Quantity]) -> str:
    """prettyPrint: "name=value" sorted by name, joined by commas."""
    return ",".join(f"{name}={resources[name]}" for name in sorted(resources))


def _mask(resources: Mapping[str, Quantity], names: Iterable[str]) -> ResourceList:
    return {name: resources[name] for name in names if name in resources}


def _non_negative_delta(new: ResourceList, old: ResourceList) -> ResourceList:
    """SubtractWithNonNegativeResult then RemoveZeros: what an update newly consumes."""
    delta = subtract(new, old)
    return {name: q for name, q in delta.items() if ZERO < q and name in new}


def pods_usage(
    namespace_pods: Iterable[Pod], old_pod: Pod | None, new_pod: Pod, now: datetime | None = None
) -> QuotaUsage:
    """QuotaUsage summed over `namespace_pods`, the admitted pod counted as `old_pod` (or not
    at all on create): O(pods) per quota."""
    key = (new_pod.metadata.namespace, new_pod.metadata.name)
    others = [pod for pod in namespace_pods if (pod.metadata.namespace, pod.metadata.name) != key]
    current = others if old_pod is None else [*others, old_pod]
    return lambda quota: quota_used(quota, current, now)


def usage_unknown(quotas: Iterable[ResourceQuota], pod: Pod) -> Denied | None:
    """kube-apiserver's refusal while a quota that applies to `pod` has no usage known yet:
    Forbidden, "status unknown for quota: NAME, resources: a,b" (clients retry on it). Here:
    while the namespace's pods are still being taken over (namespaces.py). None when no quota
    applies to the pod."""
    for quota in sorted(quotas, key=lambda q: q.metadata.name or ""):
        restricted = matching_resources(quota_hard(quota))
        if restricted and matches_scopes(quota, pod):
            name = quota.metadata.name or ""
            resources = ",".join(restricted)
            return _forbidden(pod, f"status unknown for quota: {name}, resources: {resources}")
    return None


def check_quotas(
    quotas: Iterable[ResourceQuota],
    namespace_pods: Iterable[Pod],
    operation: Operation,
    old_pod: Pod | None,
    new_pod: Pod,
    *,
    now: datetime | None = None,
    used: QuotaUsage | None = None,
) -> QuotaViolation | None:
    """ResourceQuota's CheckRequest for one pod: the first refusal, else None.

    For every quota whose hard resources a pod can consume and whose scopes select the pod:
    the "must specify" constraints, then used + requested ≤ hard for what the request adds
    ("exceeded quota: NAME, requested: …, used: …, limited: …", only the exceeded resources).
    A quota's usage is `used(quota)` when given, else summed over `namespace_pods`.
    """
    usage_of = used if used is not None else pods_usage(namespace_pods, old_pod, new_pod, now)
    interesting: list[tuple[ResourceQuota, ResourceList]] = []
    for quota in sorted(quotas, key=lambda q: q.metadata.name or ""):
        hard = quota_hard(quota)
        restricted = matching_resources(hard)
        if not restricted or not matches_scopes(quota, new_pod):
            continue
        error = _constraints_error(restricted, new_pod)
        if error is not None:
            name = quota.metadata.name or ""
            return QuotaViolation(f"failed quota: {name}: {error}", name)
        interesting.append((quota, hard))

    new_usage = pod_usage(new_pod, now)
    for quota, hard in interesting:
        if operation == "RESIZE" and old_pod is not None and matches_scopes(quota, old_pod):
            delta = _non_negative_delta(new_usage, pod_usage(old_pod, now))
        else:
            delta = {name: q for name, q in new_usage.items() if not q.is_zero()}
        requested = _mask(delta, hard)
        if not requested:
            continue
        quota_usage = usage_of(quota)
        after = add(_mask(quota_usage, requested), requested)
        exceeded = sorted(name for name, q in after.items() if hard[name] < q)
        if exceeded:
            name = quota.metadata.name or ""
            amounts = [_mask(of, exceeded) for of in (requested, quota_usage, hard)]
            message = (
                f"exceeded quota: {name}, requested: {_pretty(amounts[0])}, "
                f"used: {_pretty(amounts[1])}, limited: {_pretty(amounts[2])}"
            )
            return QuotaViolation(message, name, *amounts)
    return None
