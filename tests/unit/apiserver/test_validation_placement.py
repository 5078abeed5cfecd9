"""Node affinity and toleration validation: each row a pod spec fragment and the exact errors
kube-apiserver prints (pkg/apis/core/validation: ValidateNodeSelectorRequirement,
ValidateNodeFieldSelectorRequirement, validateNodeAffinity, ValidateTolerations).
"""

from __future__ import annotations

from typing import Any

import pytest

from schemas.k8s import Pod
from services.apiserver.validation import (
    validate_node_affinity_and_tolerations,
    validate_pod_create,
)

REQ = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
EXPR = f"{REQ}[0].matchExpressions[0]"
NO_TERMS = "requiredDuringSchedulingIgnoredDuringExecution"
TOL = "spec.tolerations[0]"
PREF = "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"


def mkpod(**spec: Any) -> Pod:
    container = {"name": "app", "image": "nginx"}
    return Pod.from_k8s(
        {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": [container], **spec}}
    )


def required(*expressions: dict[str, Any], fields: bool = False) -> dict[str, Any]:
    term = {"matchFields" if fields else "matchExpressions": list(expressions)}
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }


def expr(operator: str, *values: str, key: str = "zone") -> dict[str, Any]:
    return {"key": key, "operator": operator, **({"values": list(values)} if values else {})}


ROWS: list[tuple[str, dict[str, Any], list[str]]] = [
    ("valid In", {"affinity": required(expr("In", "a"))}, []),
    ("valid Gt", {"affinity": required(expr("Gt", "3"))}, []),
    ("valid Exists toleration", {"tolerations": [{"operator": "Exists"}]}, []),
    (
        "valid Equal toleration",
        {"tolerations": [{"key": "k", "value": "v", "effect": "NoSchedule"}]},
        [],
    ),
    (
        "unknown operator",
        {"affinity": required(expr("Foo", "a"))},
        [
            f'{EXPR}.operator: Unsupported value: "Foo": supported values: '
            '"DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn"'
        ],
    ),
    (
        "In without values",
        {"affinity": required(expr("In"))},
        [f"{EXPR}.values: Required value: must be specified when `operator` is 'In' or 'NotIn'"],
    ),
    (
        "Exists with values",
        {"affinity": required(expr("Exists", "a"))},
        [
            f"{EXPR}.values: Forbidden: may not be specified "
            "when `operator` is 'Exists' or 'DoesNotExist'"
        ],
    ),
    (
        "Gt two values",
        {"affinity": required(expr("Gt", "1", "2"))},
        [
            f"{EXPR}.values: Required value: must be specified single value "
            "when `operator` is 'Lt' or 'Gt'"
        ],
    ),
    (
        "Lt non-integer",
        {"affinity": required(expr("Lt", "x"))},
        [f'{EXPR}.values[0]: Invalid value: "x": must be a valid integer'],
    ),
    (
        "matchFields other key",
        {"affinity": required(expr("In", "n1", key="metadata.uid"), fields=True)},
        [
            f'{REQ}[0].matchFields[0].key: Invalid value: "metadata.uid": '
            "not a valid field selector key"
        ],
    ),
    (
        "no terms",
        {"affinity": {"nodeAffinity": {NO_TERMS: {"nodeSelectorTerms": []}}}},
        [f"{REQ}: Required value: must have at least one node selector term"],
    ),
    (
        "preferred weight out of range",
        {
            "affinity": {
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 0, "preference": {"matchExpressions": [expr("In", "a")]}}
                    ]
                }
            }
        },
        [f"{PREF}[0].weight: Invalid value: 0: must be in the range 1-100"],
    ),
    (
        "Exists with a value",
        {"tolerations": [{"key": "k", "operator": "Exists", "value": "v"}]},
        [
            f'{TOL}.operator: Invalid value: "Exists": value must be empty '
            "when `operator` is 'Exists'"
        ],
    ),
    (
        "empty key needs Exists",
        {"tolerations": [{"operator": "Equal", "value": "v"}]},
        [
            f'{TOL}.operator: Invalid value: "Equal": operator must be Exists when `key` is empty, '
            'which means "match all values and all keys"'
        ],
    ),
    (
        "unknown toleration operator",
        {"tolerations": [{"key": "k", "operator": "In"}]},
        [f'{TOL}.operator: Unsupported value: "In": supported values: "Equal", "Exists"'],
    ),
    (
        "unknown effect",
        {"tolerations": [{"key": "k", "operator": "Exists", "effect": "Never"}]},
        [
            f'{TOL}.effect: Unsupported value: "Never": supported values: '
            '"NoExecute", "NoSchedule", "PreferNoSchedule"'
        ],
    ),
    (
        "tolerationSeconds needs NoExecute",
        {
            "tolerations": [
                {"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}
            ]
        },
        [
            f"{TOL}.effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' "
            "when `tolerationSeconds` is set"
        ],
    ),
]


@pytest.mark.parametrize(("spec", "want"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_validate_node_affinity_and_tolerations(spec: dict[str, Any], want: list[str]) -> None:
    pod = mkpod(**spec)
    assert [e.error() for e in validate_node_affinity_and_tolerations(pod)] == want
    # Pod create reports them too (the rest of this pod is valid).
    assert [e.error() for e in validate_pod_create(pod)] == want
