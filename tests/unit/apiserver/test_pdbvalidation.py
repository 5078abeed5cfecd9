"""Kubernetes-style tables for PodDisruptionBudget validation (policy/v1, create and update).

Each row is a budget's spec and the exact error strings kube-apiserver's `field.Error.Error()`
prints for it, in order.
"""

from __future__ import annotations

from typing import Any

import pytest

from schemas.policy import PodDisruptionBudget
from services.apiserver.fielderrors import FieldError
from services.apiserver.pdbvalidation import validate_pdb, validate_pdb_update
from tests.factories import LABEL_VALUE, NAME_PART

# Kubernetes' own texts (apimachinery util/validation), spelled out rather than imported.
PERCENT = (
    "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or "
    "'93%', regex used for validation is '[0-9]+%')"
)
BOTH_SET = "minAvailable and maxUnavailable cannot be both set"


def pdb(**spec: Any) -> PodDisruptionBudget:
    return PodDisruptionBudget.from_k8s(
        {"metadata": {"name": "web", "namespace": "default"}, "spec": spec}
    )


def expr(key: str, operator: str, values: list[str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values is not None:
        out["values"] = values
    return out


def texts(errors: list[FieldError]) -> list[str]:
    return [e.error() for e in errors]


def intstr(value: str) -> str:
    """How kube-apiserver prints a string IntOrString it refuses (Go's %#v)."""
    return f'intstr.IntOrString{{Type:1, IntVal:0, StrVal:"{value}"}}'


VALID = [
    ("nothing set", {}),
    ("minAvailable an int", {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}),
    ("minAvailable zero", {"minAvailable": 0}),
    ("an int is not capped at 100", {"maxUnavailable": 150}),
    ("maxUnavailable a percentage", {"maxUnavailable": "50%"}),
    ("0%", {"minAvailable": "0%"}),
    ("100%", {"minAvailable": "100%"}),
    ("leading zeros are still a percentage", {"maxUnavailable": "0100%"}),
    ("empty selector", {"minAvailable": 1, "selector": {}}),
    (
        "every operator",
        {
            "maxUnavailable": 1,
            "selector": {
                "matchLabels": {"example.com/tier": "front_end.1", "empty": ""},
                "matchExpressions": [
                    expr("app", "In", ["web", "api"]),
                    expr("env", "NotIn", ["dev"]),
                    expr("canary", "Exists"),
                    expr("legacy", "DoesNotExist", []),
                ],
            },
        },
    ),
    ("IfHealthyBudget", {"minAvailable": 1, "unhealthyPodEvictionPolicy": "IfHealthyBudget"}),
    ("AlwaysAllow", {"minAvailable": 1, "unhealthyPodEvictionPolicy": "AlwaysAllow"}),
]


@pytest.mark.parametrize("spec", [c[1] for c in VALID], ids=[c[0] for c in VALID])
def test_valid_budgets(spec: dict[str, Any]) -> None:
    assert validate_pdb(pdb(**spec)) == []


INVALID: list[tuple[str, dict[str, Any], list[str]]] = [
    (
        "minAvailable and maxUnavailable both set",
        {"minAvailable": 1, "maxUnavailable": "10%"},
        [f'spec: Invalid value: {{"maxUnavailable": "10%", "minAvailable": 1}}: {BOTH_SET}'],
    ),
    (
        "negative minAvailable",
        {"minAvailable": -1},
        ["spec.minAvailable: Invalid value: -1: must be greater than or equal to 0"],
    ),
    (
        "negative maxUnavailable",
        {"maxUnavailable": -3},
        ["spec.maxUnavailable: Invalid value: -3: must be greater than or equal to 0"],
    ),
    (
        "a number in a string is not a percentage",
        {"maxUnavailable": "50"},
        [f"spec.maxUnavailable: Invalid value: {intstr('50')}: {PERCENT}"],
    ),
    (
        "a negative percentage",
        {"minAvailable": "-5%"},
        [f"spec.minAvailable: Invalid value: {intstr('-5%')}: {PERCENT}"],
    ),
    (
        "a fractional percentage",
        {"minAvailable": "2.5%"},
        [f"spec.minAvailable: Invalid value: {intstr('2.5%')}: {PERCENT}"],
    ),
    (
        "more than 100% minAvailable",
        {"minAvailable": "101%"},
        [f"spec.minAvailable: Invalid value: {intstr('101%')}: must not be greater than 100%"],
    ),
    (
        "more than 100% maxUnavailable",
        {"maxUnavailable": "250%"},
        [f"spec.maxUnavailable: Invalid value: {intstr('250%')}: must not be greater than 100%"],
    ),
    (
        "both set and both wrong: the exclusion first, then each field",
        {"minAvailable": "150%", "maxUnavailable": -1},
        [
            f'spec: Invalid value: {{"maxUnavailable": -1, "minAvailable": "150%"}}: {BOTH_SET}',
            f"spec.minAvailable: Invalid value: {intstr('150%')}: must not be greater than 100%",
            "spec.maxUnavailable: Invalid value: -1: must be greater than or equal to 0",
        ],
    ),
    (
        "In needs values",
        {"selector": {"matchExpressions": [expr("app", "In")]}},
        [
            "spec.selector.matchExpressions[0].values: Required value: must be specified when "
            "`operator` is 'In' or 'NotIn'"
        ],
    ),
    (
        "NotIn needs values (an empty list is none)",
        {"selector": {"matchExpressions": [expr("app", "Exists"), expr("app", "NotIn", [])]}},
        [
            "spec.selector.matchExpressions[1].values: Required value: must be specified when "
            "`operator` is 'In' or 'NotIn'"
        ],
    ),
    (
        "Exists takes no values",
        {"selector": {"matchExpressions": [expr("app", "Exists", ["web"])]}},
        [
            "spec.selector.matchExpressions[0].values: Forbidden: may not be specified when "
            "`operator` is 'Exists' or 'DoesNotExist'"
        ],
    ),
    (
        "DoesNotExist takes no values",
        {"selector": {"matchExpressions": [expr("app", "DoesNotExist", ["web"])]}},
        [
            "spec.selector.matchExpressions[0].values: Forbidden: may not be specified when "
            "`operator` is 'Exists' or 'DoesNotExist'"
        ],
    ),
    (
        "an unknown operator",
        {"selector": {"matchExpressions": [expr("app", "Equals", ["web"])]}},
        [
            'spec.selector.matchExpressions[0].operator: Invalid value: "Equals": not a valid '
            "selector operator"
        ],
    ),
    (
        "a bad key and a bad value in an expression",
        {"selector": {"matchExpressions": [expr("-app", "In", ["ok", "not ok"])]}},
        [
            f'spec.selector.matchExpressions[0].key: Invalid value: "-app": {NAME_PART}',
            f'spec.selector.matchExpressions[0].values[1]: Invalid value: "not ok": {LABEL_VALUE}',
        ],
    ),
    (
        "a key with an empty prefix",
        {"selector": {"matchExpressions": [expr("/app", "Exists")]}},
        [
            'spec.selector.matchExpressions[0].key: Invalid value: "/app": prefix part must be '
            "non-empty"
        ],
    ),
    (
        "bad matchLabels key and value",
        {"selector": {"matchLabels": {"app_": "web", "tier": "front end"}}},
        [
            f'spec.selector.matchLabels: Invalid value: "app_": {NAME_PART}',
            f'spec.selector.matchLabels: Invalid value: "front end": {LABEL_VALUE}',
        ],
    ),
    (
        "an unknown unhealthyPodEvictionPolicy",
        {"minAvailable": 1, "unhealthyPodEvictionPolicy": "Sometimes"},
        [
            'spec.unhealthyPodEvictionPolicy: Unsupported value: "Sometimes": supported values: '
            '"AlwaysAllow", "IfHealthyBudget"'
        ],
    ),
]


@pytest.mark.parametrize(
    ("spec", "expected"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID]
)
def test_invalid_budgets(spec: dict[str, Any], expected: list[str]) -> None:
    assert texts(validate_pdb(pdb(**spec))) == expected


def test_error_types_and_fields() -> None:
    errors = validate_pdb(
        pdb(
            minAvailable="120%",
            maxUnavailable=1,
            selector={"matchExpressions": [expr("a", "In"), expr("b", "Exists", ["x"])]},
            unhealthyPodEvictionPolicy="Never",
        )
    )
    assert [(e.type, e.field) for e in errors] == [
        ("FieldValueInvalid", "spec"),
        ("FieldValueInvalid", "spec.minAvailable"),
        ("FieldValueRequired", "spec.selector.matchExpressions[0].values"),
        ("FieldValueForbidden", "spec.selector.matchExpressions[1].values"),
        ("FieldValueNotSupported", "spec.unhealthyPodEvictionPolicy"),
    ]


BAD_VALUE = {"matchExpressions": [expr("app", "In", ["not ok"])]}
BAD_VALUE_ERROR = (
    f'spec.selector.matchExpressions[0].values[0]: Invalid value: "not ok": {LABEL_VALUE}'
)


@pytest.mark.parametrize(
    ("old_selector", "expected"),
    [
        pytest.param({"matchLabels": {"app": "web"}}, [BAD_VALUE_ERROR], id="old selector valid"),
        pytest.param(None, [BAD_VALUE_ERROR], id="old budget without selector"),
        pytest.param(BAD_VALUE, [], id="old selector had a bad value"),
        # hasInvalidLabelValueInLabelSelector asks whether the old selector has any error.
        pytest.param(
            {"matchExpressions": [expr("-app", "Exists")]}, [], id="old selector had a bad key"
        ),
    ],
)
def test_update_tolerates_label_values_the_stored_selector_already_had(
    old_selector: dict[str, Any] | None, expected: list[str]
) -> None:
    old = pdb(minAvailable=1, selector=old_selector)
    new = pdb(minAvailable=1, selector=BAD_VALUE)
    assert texts(validate_pdb_update(new, old)) == expected


def test_update_still_checks_everything_else() -> None:
    old = pdb(minAvailable=1, selector=BAD_VALUE)
    new = pdb(
        minAvailable=1,
        maxUnavailable=1,
        selector={"matchExpressions": [expr("app", "In", ["not ok"]), expr("-tier", "In")]},
    )
    assert texts(validate_pdb_update(new, old)) == [
        f'spec: Invalid value: {{"maxUnavailable": 1, "minAvailable": 1, "selector": '
        f'{{"matchExpressions": [{{"key": "app", "operator": "In", "values": ["not ok"]}}, '
        f'{{"key": "-tier", "operator": "In"}}]}}}}: {BOTH_SET}',
        "spec.selector.matchExpressions[1].values: Required value: must be specified when "
        "`operator` is 'In' or 'NotIn'",
        f'spec.selector.matchExpressions[1].key: Invalid value: "-tier": {NAME_PART}',
    ]


def test_valid_update() -> None:
    old = pdb(minAvailable=1, selector={"matchLabels": {"app": "web"}})
    new = pdb(maxUnavailable="25%", selector={"matchLabels": {"app": "web"}})
    assert validate_pdb_update(new, old) == []
