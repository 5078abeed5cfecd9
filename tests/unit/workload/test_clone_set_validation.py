"""CloneSet validation: one row per rule, with the exact field and error type."""

from __future__ import annotations

from typing import Any

import pytest

from schemas.workload import CloneSet
from services.apiserver.workloadvalidation import validate_clone_set


def clone_set(**changes: Any) -> CloneSet:
    body: dict[str, Any] = {
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
            },
            "updateStrategy": {},
        },
    }
    for path, value in changes.items():
        node = body
        *parents, last = path.split("__")
        for key in parents:
            node = node[key]
        node[last] = value
    return CloneSet.model_validate(body)


@pytest.mark.parametrize(
    ("name", "changes", "expected"),
    [
        ("valid", {}, []),
        ("zero replicas", {"spec__replicas": 0}, []),
        ("negative replicas", {"spec__replicas": -1}, [("FieldValueInvalid", "spec.replicas")]),
        ("empty selector", {"spec__selector": {}}, [("FieldValueRequired", "spec.selector")]),
        (
            "selector does not match",
            {"spec__selector": {"matchLabels": {"app": "db"}}},
            [("FieldValueInvalid", "spec.template.metadata.labels")],
        ),
        ("max 3", {"spec__updateStrategy": {"maxConcurrentResizes": 3}}, []),
        ("max 30%", {"spec__updateStrategy": {"maxConcurrentResizes": "30%"}}, []),
        (
            "max 0",
            {"spec__updateStrategy": {"maxConcurrentResizes": 0}},
            [("FieldValueInvalid", "spec.updateStrategy.maxConcurrentResizes")],
        ),
        (
            "max 0%",
            {"spec__updateStrategy": {"maxConcurrentResizes": "0%"}},
            [("FieldValueInvalid", "spec.updateStrategy.maxConcurrentResizes")],
        ),
        (
            "max 120%",
            {"spec__updateStrategy": {"maxConcurrentResizes": "120%"}},
            [("FieldValueInvalid", "spec.updateStrategy.maxConcurrentResizes")],
        ),
        (
            "max text",
            {"spec__updateStrategy": {"maxConcurrentResizes": "three"}},
            [("FieldValueInvalid", "spec.updateStrategy.maxConcurrentResizes")],
        ),
        (
            "negative partition",
            {"spec__updateStrategy": {"partition": -1}},
            [("FieldValueInvalid", "spec.updateStrategy.partition")],
        ),
        ("rollback", {"spec__updateStrategy": {"onInfeasible": "Rollback"}}, []),
        (
            "onInfeasible unknown",
            {"spec__updateStrategy": {"onInfeasible": "Retry"}},
            [("FieldValueNotSupported", "spec.updateStrategy.onInfeasible")],
        ),
        (
            "negative deferred timeout",
            {"spec__updateStrategy": {"deferredTimeoutSeconds": -5}},
            [("FieldValueInvalid", "spec.updateStrategy.deferredTimeoutSeconds")],
        ),
        (
            "template without containers",
            {"spec__template__spec": {"containers": []}},
            [("FieldValueRequired", "spec.template.spec.containers")],
        ),
    ],
)
def test_validate_clone_set(
    name: str, changes: dict[str, Any], expected: list[tuple[str, str]]
) -> None:
    errors = [(e.type, e.field) for e in validate_clone_set(clone_set(**changes))]
    assert errors == expected, name
