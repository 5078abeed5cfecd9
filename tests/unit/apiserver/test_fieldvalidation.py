"""Server-side field validation against Kubernetes' schema: kube-apiserver's answers, by case."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from services.apiserver.errors import ApiError
from services.apiserver.fieldvalidation import Directive, check, directive
from tests.factories import with_value

POD_DEF = "io.k8s.api.core.v1.Pod"

FULL_POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web", "labels": {"app": "web"}, "annotations": {"a": "b"}},
    "spec": {
        "containers": [
            {
                "name": "app",
                "image": "nginx:1.27",
                "ports": [{"containerPort": 80, "name": "http"}],
                "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"}},
                "livenessProbe": {"tcpSocket": {"port": 80}, "initialDelaySeconds": 5},
                "env": [{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                "securityContext": {"runAsNonRoot": True, "capabilities": {"drop": ["ALL"]}},
                "resources": {"requests": {"cpu": "100m", "memory": 134217728}},
            }
        ],
        "volumes": [{"name": "data", "emptyDir": {"sizeLimit": "1Gi"}}],
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "db"}],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                    ]
                }
            }
        },
        "optional": None,
    },
}
FULL_POD["spec"].pop("optional")


def _with(path: list[str | int], value: Any, base: dict[str, Any] = FULL_POD) -> dict[str, Any]:
    return with_value(base, path, value)


def _status(data: dict[str, Any], how: Directive = "Strict") -> dict[str, Any]:
    with pytest.raises(ApiError) as err:
        check(POD_DEF, "Pod", "web", data, how)
    return err.value.status.to_k8s()


@pytest.mark.parametrize("how", ["Ignore", "Warn", "Strict"])
def test_every_kubernetes_field_passes_untouched(how: Directive) -> None:
    data = copy.deepcopy(FULL_POD)
    checked = check(POD_DEF, "Pod", "web", data, how)
    assert checked.data == FULL_POD
    assert checked.warnings == []


UNKNOWN = [
    (["spec", "containers", 0, "bogus"], 'unknown field "spec.containers[0].bogus"'),
    (["spec", "readinesProbe"], 'unknown field "spec.readinesProbe"'),
    (["metadata", "labelz"], 'unknown field "metadata.labelz"'),
    (["spec", "volumes", 0, "emptyDir", "size"], 'unknown field "spec.volumes[0].emptyDir.size"'),
    (
        ["spec", "containers", 0, "resize_policy"],
        'unknown field "spec.containers[0].resize_policy"',
    ),
]


@pytest.mark.parametrize(("path", "text"), UNKNOWN)
def test_unknown_fields_under_each_directive(path: list[str | int], text: str) -> None:
    sent = _with(path, 1)
    status = _status(sent, "Strict")
    assert status["code"] == 400 and status["reason"] == "BadRequest"
    assert status["message"] == (
        f'Pod in version "v1" cannot be handled as a Pod: strict decoding error: {text}'
    )
    warned = check(POD_DEF, "Pod", "web", copy.deepcopy(sent), "Warn")
    assert warned.warnings == [text]
    assert warned.data == FULL_POD  # dropped, as kube-apiserver drops it
    ignored = check(POD_DEF, "Pod", "web", copy.deepcopy(sent), "Ignore")
    assert ignored.warnings == [] and ignored.data == FULL_POD


def test_several_unknown_fields_are_listed_together() -> None:
    sent = _with(["spec", "x1"], 1, _with(["metadata", "x2"], 2))
    assert _status(sent)["message"].endswith(
        'strict decoding error: unknown field "metadata.x2", unknown field "spec.x1"'
    )


INVALID = [
    (
        ["spec", "containers", 0, "ports", 0, "containerPort"],
        "80",
        'spec.containers[0].ports[0].containerPort: Invalid value: "80": must be of type integer',
    ),
    (
        ["metadata", "labels", "tier"],
        3,
        "metadata.labels[tier]: Invalid value: 3: must be of type string",
    ),
    (
        ["spec", "containers", 0, "livenessProbe", "initialDelaySeconds"],
        True,
        "spec.containers[0].livenessProbe.initialDelaySeconds: Invalid value: true: "
        "must be of type integer",
    ),
    (
        ["spec", "containers", 0, "resources", "requests", "cpu"],
        [1],
        "spec.containers[0].resources.requests[cpu]: Invalid value: [1]: "
        "must be a string or a number",
    ),
    (["spec", "volumes"], {"name": "x"}, 'spec.volumes: Invalid value: {"name": "x"}: must be of'),
]


@pytest.mark.parametrize(("path", "value", "text"), INVALID)
def test_wrong_types_are_422_naming_the_field(path: list[str | int], value: Any, text: str) -> None:
    status = _status(_with(path, value), "Ignore")  # types are checked under every directive
    assert status["code"] == 422 and status["reason"] == "Invalid"
    assert status["message"].startswith(f'Pod "web" is invalid: {text}')
    assert status["details"]["causes"][0]["field"] == text.split(":")[0]


def test_fields_the_schema_calls_required_are_left_to_validation() -> None:
    """Kubernetes' schema marks every Go field without omitempty required (a Node's
    nodeInfo strings); kube-apiserver decodes them as zero values, and so do we."""
    sent = _with(["spec", "containers", 0], {"image": "nginx"})
    assert check(POD_DEF, "Pod", "web", sent, "Strict").data == sent
    node = {"metadata": {"name": "n1"}, "status": {"nodeInfo": {"kubeletVersion": "v1.35.0"}}}
    assert check("io.k8s.api.core.v1.Node", "Node", "n1", node, "Strict").data == node


def test_not_an_object() -> None:
    with pytest.raises(ApiError) as err:
        check(POD_DEF, "Pod", "", ["not", "a", "pod"], "Strict")
    assert err.value.status.code == 400


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, "Warn"), ("", "Warn"), ("Ignore", "Ignore"), ("Warn", "Warn"), ("Strict", "Strict")],
)
def test_directive(value: str | None, expected: str) -> None:
    assert directive(value) == expected


def test_bad_directive_is_400() -> None:
    with pytest.raises(ApiError) as err:
        directive("strict")
    assert err.value.status.code == 400
    assert "fieldValidation" in (err.value.status.message or "")
