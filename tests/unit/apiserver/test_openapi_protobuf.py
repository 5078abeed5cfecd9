"""/openapi/v2 in gnostic's protobuf (`openapi.v2.Document`), as kubectl and client-go read it,
and the Accept negotiation that picks it."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from schemas.k8sproto.openapiv2 import OpenAPIv2_pb2 as openapi_v2
from services.apiserver.openapi import JSON, OpenAPIDocuments, v2_document, v2_media_type
from services.apiserver.openapiproto import MEDIA_TYPE, to_message

CLIENT_GO = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"  # what kubectl asks


def _named(pairs: Any) -> dict[str, Any]:
    return {pair.name: pair.value for pair in pairs}


def _extensions(message: Any) -> dict[str, Any]:
    return {pair.name: yaml.safe_load(pair.value.yaml) for pair in message.vendor_extension}


def test_every_definition_keeps_its_properties_refs_and_extensions() -> None:
    """kubectl finds a kind by its definition's x-kubernetes-group-version-kind (YAML in an
    Any) and validates by its properties: each definition of the JSON document is there."""
    source = v2_document()
    body, _ = OpenAPIDocuments().v2(MEDIA_TYPE)
    document = openapi_v2.Document.FromString(body)
    assert document.swagger == "2.0"
    assert document.info.title == source["info"]["title"]
    definitions = _named(document.definitions.additional_properties)
    assert definitions.keys() == source["definitions"].keys()
    for name, schema in source["definitions"].items():
        message = definitions[name]
        assert _extensions(message) == {k: v for k, v in schema.items() if k.startswith("x-")}
        properties = _named(message.properties.additional_properties)
        assert properties.keys() == schema.get("properties", {}).keys(), name
        assert list(message.required) == schema.get("required", [])
        for key, prop in schema.get("properties", {}).items():
            converted = properties[key]
            assert converted._ref == prop.get("$ref", "")
            assert [s._ref for s in converted.all_of] == [s["$ref"] for s in prop.get("allOf", [])]
            kind = prop.get("type")
            assert list(converted.type.value) == ([kind] if isinstance(kind, str) else kind or [])
    pod = definitions["io.k8s.api.core.v1.Pod"]
    assert _extensions(pod)["x-kubernetes-group-version-kind"] == [
        {"group": "", "kind": "Pod", "version": "v1"}
    ]


def test_paths_parameters_and_security_take_their_oneof_branch() -> None:
    source = v2_document()
    document = openapi_v2.Document.FromString(OpenAPIDocuments().v2(MEDIA_TYPE)[0])
    paths = _named(document.paths.path)
    assert paths.keys() == source["paths"].keys()
    resize = paths["/api/v1/namespaces/{namespace}/pods/{name}/resize"]
    patch = resize.patch
    assert _extensions(patch)["x-kubernetes-group-version-kind"]["kind"] == "Pod"
    body = [p.parameter.body_parameter for p in patch.parameters if p.parameter.body_parameter.name]
    assert body[0].schema._ref == "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
    queries = [
        p.parameter.non_body_parameter.query_parameter_sub_schema.name for p in patch.parameters
    ]
    assert "fieldValidation" in queries
    path_names = [p.parameter.non_body_parameter.path_parameter_sub_schema.name
                  for p in resize.parameters]  # fmt: skip
    assert path_names == ["namespace", "name"]
    ok = _named(patch.responses.response_code)["200"].response
    assert ok.schema.schema._ref == "#/definitions/io.k8s.api.core.v1.Pod"
    scheme = _named(document.security_definitions.additional_properties)["BearerToken"]
    assert scheme.api_key_security.name == "authorization"
    assert getattr(scheme.api_key_security, "in") == "header"


def test_a_key_swagger_does_not_have_is_refused_not_dropped() -> None:
    with pytest.raises(ValueError, match="no field for 'anyOf'"):
        to_message(openapi_v2.Schema.DESCRIPTOR, {"anyOf": [{"type": "integer"}]})


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        (CLIENT_GO, MEDIA_TYPE),
        (MEDIA_TYPE, MEDIA_TYPE),
        (None, JSON),
        ("application/json", JSON),
        ("*/*", JSON),
        (f"application/json;q=0.5, {CLIENT_GO}", MEDIA_TYPE),
        (f"{CLIENT_GO};q=0, application/json", JSON),
        ("application/xml", None),
        ("application/vnd.kubernetes.protobuf", None),
    ],
)
def test_accept_picks_the_form(accept: str | None, expected: str | None) -> None:
    assert v2_media_type(accept) == expected
