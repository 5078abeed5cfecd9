"""OpenAPI documents built from Kubernetes' definitions and the discovery tables."""

from __future__ import annotations

import json
from typing import Any

import pytest

from services.apiserver.openapi import (
    CLONESET_DEFINITION,
    OpenAPIDocuments,
    convert,
    reachable,
    v2_document,
    v3_document,
)

V3 = "#/components/schemas/"


@pytest.mark.parametrize(
    ("schema", "v2", "expected"),
    [
        ({"$ref": "#/$defs/io.k8s.X"}, False, {"$ref": V3 + "io.k8s.X"}),
        ({"$ref": "#/$defs/io.k8s.X"}, True, {"$ref": "#/definitions/io.k8s.X"}),
        ({"type": ["string", "null"]}, False, {"type": "string"}),
        (
            {"type": ["integer", "null"], "format": "int32"},
            False,
            {"type": "integer", "format": "int32"},
        ),
        (
            {"oneOf": [{"type": ["string", "null"]}, {"type": ["integer", "null"]}]},
            False,
            {"type": "string", "format": "int-or-string"},
        ),
        (  # pydantic's `int | str` (a CloneSet's maxConcurrentResizes)
            {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            True,
            {"type": "string", "format": "int-or-string"},
        ),
        (
            {"$ref": "#/$defs/io.k8s.X", "description": "d"},
            True,
            {"allOf": [{"$ref": "#/definitions/io.k8s.X"}], "description": "d"},
        ),
        ({"$schema": "x", "$id": "y", "type": "object"}, False, {"type": "object"}),
        (
            {
                "properties": {"type": {"type": ["string", "null"]}},
                "x-kubernetes-patch-merge-key": "name",
            },
            False,
            {"properties": {"type": {"type": "string"}}, "x-kubernetes-patch-merge-key": "name"},
        ),
    ],
)
def test_convert(schema: dict[str, Any], v2: bool, expected: dict[str, Any]) -> None:
    assert convert(schema, "#/definitions/" if v2 else V3, v2=v2) == expected


def test_reachable_follows_refs_transitively() -> None:
    defs = {
        "a": {"properties": {"b": {"$ref": "#/$defs/b"}}},
        "b": {"items": {"$ref": "#/$defs/c"}},
        "c": {"type": "string"},
        "d": {"type": "string"},
    }
    assert reachable(["a"], defs) == ["a", "b", "c"]


def _patch_ops(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [item["patch"] for item in doc["paths"].values() if "patch" in item]


def test_every_patch_advertises_field_validation_for_its_kind() -> None:
    """kubectl's QueryParamVerifierV3 reads this to send fieldValidation=Strict itself."""
    doc = v3_document("api/v1")
    ops = _patch_ops(doc)
    kinds = {op["x-kubernetes-group-version-kind"]["kind"] for op in ops}
    assert {"Pod", "ResourceQuota", "LimitRange"} <= kinds
    for op in ops:
        assert "fieldValidation" in {p["name"] for p in op["parameters"] if p["in"] == "query"}


def test_core_document_carries_kubernetes_schemas_with_patch_keys() -> None:
    schemas = v3_document("api/v1")["components"]["schemas"]
    containers = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["items"] == {"$ref": V3 + "io.k8s.api.core.v1.Container"}
    assert "readinessProbe" in schemas["io.k8s.api.core.v1.Container"]["properties"]
    assert schemas["io.k8s.api.core.v1.Pod"]["x-kubernetes-group-version-kind"] == [
        {"group": "", "kind": "Pod", "version": "v1"}
    ]
    text = json.dumps(schemas)
    assert '"null"' not in text and "#/$defs/" not in text


def test_cloneset_document_points_its_template_at_kubernetes_pod_template() -> None:
    doc = v3_document("apis/apps.inplace.dev/v1alpha1")
    schemas = doc["components"]["schemas"]
    spec_ref = schemas[CLONESET_DEFINITION]["properties"]["spec"]["$ref"]
    spec = schemas[spec_ref.removeprefix(V3)]
    assert spec["properties"]["template"]["$ref"] == V3 + "io.k8s.api.core.v1.PodTemplateSpec"
    assert "io.k8s.api.core.v1.PodSpec" in schemas
    assert any(p.endswith("/clonesets/{name}") for p in doc["paths"])


def test_v2_and_root_documents() -> None:
    v2 = v2_document()
    assert v2["swagger"] == "2.0"
    assert "/api/v1/namespaces/{namespace}/pods/{name}/resize" in v2["paths"]
    docs = OpenAPIDocuments()
    root = json.loads(docs.v3_root())
    body, digest = docs.v3("api/v1") or (b"", "")
    assert root["paths"]["api/v1"]["serverRelativeURL"] == f"/openapi/v3/api/v1?hash={digest}"
    assert json.loads(body)["openapi"] == "3.0.0"
    assert docs.v3("apis/nope/v1") is None
