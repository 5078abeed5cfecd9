"""Validation of policy/v1 PodDisruptionBudgets, with Kubernetes' rules, field paths and messages.

Follows kube-apiserver (v1.34):

- pkg/apis/policy/validation `ValidatePodDisruptionBudget` / `ValidatePodDisruptionBudgetSpec`:
  minAvailable and maxUnavailable exclusive, each checked by pkg/apis/apps/validation's
  `ValidatePositiveIntOrPercent` and `IsNotMoreThan100Percent`, the selector by apimachinery's
  `ValidateLabelSelector` (pkg/apis/meta/v1/validation), `unhealthyPodEvictionPolicy` one of
  `supportedUnhealthyPodEvictionPolicies`.
- pkg/registry/policy/poddisruptionbudget's strategy: a create validates with
  `AllowInvalidLabelValueInSelector: false`; an update allows invalid label values in the
  selector's expressions when the stored budget's selector was already invalid
  (`hasInvalidLabelValueInLabelSelector`), so a budget stored before that check can still change.
  The spec is otherwise as mutable in policy/v1 as at creation.

Messages match kube-apiserver's byte for byte, the printed bad values included, with one
exception: "minAvailable and maxUnavailable cannot be both set" is reported against the whole
`spec`, whose bad value Go prints with `%#v` (pointer addresses and all); here it is the spec's
JSON. Metadata is validated with every kind's (the generic registry does it, not this strategy);
status writes (`ValidatePodDisruptionBudgetStatusUpdate`) are the disruption controller's.
"""

from __future__ import annotations

import re

from schemas.policy import LabelSelector, LabelSelectorRequirement, PodDisruptionBudget
from services.apiserver.fielderrors import (
    FieldError,
    Verbatim,
    child,
    go_quote,
    index,
    invalid,
    not_supported,
)

# The shared apimachinery string checks (IsQualifiedName, IsValidLabelValue, RegexError) and
# ValidateLabels live with the pod rules; one copy of each rule.
from services.apiserver.validation import (
    SET_OPERATORS,
    is_label_value,
    is_qualified_name,
    regex_error,
    set_operator_values,
    validate_labels,
)

__all__ = [
    "UNHEALTHY_POD_EVICTION_POLICIES",
    "is_not_more_than_100_percent",
    "validate_label_selector",
    "validate_pdb",
    "validate_pdb_update",
    "validate_positive_int_or_percent",
]

# supportedUnhealthyPodEvictionPolicies.List(): sorted, as the NotSupported error lists them.
UNHEALTHY_POD_EVICTION_POLICIES = ("AlwaysAllow", "IfHealthyBudget")

# k8s.io/apimachinery/pkg/util/validation IsValidPercent.
_PERCENT_FMT = "[0-9]+%"
_PERCENT_MSG = "a valid percent string must be a numeric string followed by an ending '%'"
_PERCENT_RE = re.compile(_PERCENT_FMT)


def _int_or_string(value: str) -> Verbatim:
    """A string `intstr.IntOrString` as Go's `ErrorBody` prints it: `String()` has a pointer
    receiver, so the value falls through to `%#v`."""
    return Verbatim(f"intstr.IntOrString{{Type:1, IntVal:0, StrVal:{go_quote(value)}}}")


def _is_valid_percent(value: str) -> list[str]:
    if _PERCENT_RE.fullmatch(value):
        return []
    return [regex_error(_PERCENT_MSG, _PERCENT_FMT, "1%", "93%")]


def validate_positive_int_or_percent(value: int | str, path: str) -> list[FieldError]:
    """apps `ValidatePositiveIntOrPercent`: an int must be >= 0 (`ValidateNonnegativeField`,
    printed bare), a string must look like "N%"."""
    if isinstance(value, int):
        if value < 0:
            return [invalid(path, value, "must be greater than or equal to 0")]
        return []
    return [invalid(path, _int_or_string(value), msg) for msg in _is_valid_percent(value)]


def is_not_more_than_100_percent(value: int | str, path: str) -> list[FieldError]:
    """apps `IsNotMoreThan100Percent`: only a well-formed percentage is checked (an int of any
    size, or a malformed string, is the other check's business)."""
    if isinstance(value, int) or _is_valid_percent(value) or int(value[:-1]) <= 100:
        return []
    return [invalid(path, _int_or_string(value), "must not be greater than 100%")]


def _validate_requirement(
    req: LabelSelectorRequirement, path: str, *, allow_invalid_label_value: bool
) -> list[FieldError]:
    """metav1 validation `ValidateLabelSelectorRequirement`."""
    errs: list[FieldError] = []
    values = req.values or []
    values_path = child(path, "values")
    if req.operator in SET_OPERATORS:
        errs += set_operator_values(req.operator, values, values_path)
    else:
        errs.append(invalid(child(path, "operator"), req.operator, "not a valid selector operator"))
    errs += [invalid(child(path, "key"), req.key, msg) for msg in is_qualified_name(req.key)]
    if not allow_invalid_label_value:
        for i, value in enumerate(values):
            errs += [invalid(index(values_path, i), value, msg) for msg in is_label_value(value)]
    return errs


def validate_label_selector(
    selector: LabelSelector | None, path: str, *, allow_invalid_label_value: bool = False
) -> list[FieldError]:
    """metav1 validation `ValidateLabelSelector`: matchLabels keys and values, then each
    expression's operator, values and key. A null selector is valid (it selects nothing)."""
    if selector is None:
        return []
    errs = validate_labels(selector.match_labels, child(path, "matchLabels"))
    expressions_path = child(path, "matchExpressions")
    for i, req in enumerate(selector.match_expressions or []):
        errs += _validate_requirement(
            req, index(expressions_path, i), allow_invalid_label_value=allow_invalid_label_value
        )
    return errs


def validate_pdb(
    pdb: PodDisruptionBudget, *, allow_invalid_label_value_in_selector: bool = False
) -> list[FieldError]:
    """`ValidatePodDisruptionBudget`, as the create strategy calls it (invalid label values in
    the selector refused)."""
    errs: list[FieldError] = []
    spec = pdb.spec
    path = "spec"
    if spec.min_available is not None and spec.max_unavailable is not None:
        errs.append(
            invalid(path, spec.to_k8s(), "minAvailable and maxUnavailable cannot be both set")
        )
    for name, value in (
        ("minAvailable", spec.min_available),
        ("maxUnavailable", spec.max_unavailable),
    ):
        if value is not None:
            errs += validate_positive_int_or_percent(value, child(path, name))
            errs += is_not_more_than_100_percent(value, child(path, name))
    errs += validate_label_selector(
        spec.selector,
        child(path, "selector"),
        allow_invalid_label_value=allow_invalid_label_value_in_selector,
    )
    policy = spec.unhealthy_pod_eviction_policy
    if policy is not None and policy not in UNHEALTHY_POD_EVICTION_POLICIES:
        errs.append(
            not_supported(
                child(path, "unhealthyPodEvictionPolicy"), policy, UNHEALTHY_POD_EVICTION_POLICIES
            )
        )
    return errs


def validate_pdb_update(new: PodDisruptionBudget, old: PodDisruptionBudget) -> list[FieldError]:
    """The update strategy's `ValidateUpdate`: the new budget validated in full, tolerating
    invalid label values in its selector only when the stored selector already failed
    validation (`hasInvalidLabelValueInLabelSelector`, which asks whether it has any error)."""
    old_invalid = bool(validate_label_selector(old.spec.selector, "spec.selector"))
    return validate_pdb(new, allow_invalid_label_value_in_selector=old_invalid)
