"""The Swagger 2.0 document in gnostic's protobuf (`openapi.v2.Document`), the form in which
kubectl and client-go read `/openapi/v2` (Accept: one of `ACCEPTED`; answered as `MEDIA_TYPE`).

kubectl validates a manifest against `/openapi/v3` and falls back to `/openapi/v2` for a kind
v3 does not have (a Deployment, a Service, a custom resource): it asks for this form and
parses the answer as protobuf whatever its content type, so the JSON document made it fail
with "proto: cannot parse invalid wire-format data". With this form a kind the document lacks
is not validated client-side, and the request then fails as on any cluster that does not
serve it ("no matches for kind").

gnostic compiles the JSON document into its messages by rules of its own: a JSON object with
free keys becomes a message of `Named*` pairs, `x-` keys become `vendor_extension`s, a value
of any JSON type an `Any` holding it as YAML, `$ref` the field `_ref`, and a few fields are
a oneof chosen by the JSON's content (a parameter by its `in`, a security scheme by its
`type`). `to_message` follows them over the generated message descriptors
(`schemas/k8sproto/openapiv2`, from gnostic-models); a key the messages have no field for is
an error, so the document cannot be served with part of it silently dropped.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass

from schemas.k8sproto.openapiv2 import OpenAPIv2_pb2 as openapi_v2

__all__ = ["ACCEPTED", "MEDIA_TYPE", "to_message", "to_protobuf"]

# kube-openapi answers with the first; client-go asks for the second, the older spelling.
MEDIA_TYPE = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
ACCEPTED = (MEDIA_TYPE, "application/com.github.proto-openapi.spec.v2@v1.0+protobuf")

_NON_BODY = {
    "header": "header_parameter_sub_schema",
    "formData": "form_data_parameter_sub_schema",
    "query": "query_parameter_sub_schema",
    "path": "path_parameter_sub_schema",
}
_OAUTH2 = {
    "implicit": "oauth2_implicit_security",
    "password": "oauth2_password_security",
    "application": "oauth2_application_security",
    "accessCode": "oauth2_access_code_security",
}
_PAIRS = {"Paths": "path", "Responses": "response_code"}  # their field of non-`x-` keys
_CAMEL = re.compile(r"(?<!^)([A-Z])")


def to_protobuf(document: dict[str, Any]) -> bytes:
    """The Swagger document's `openapi.v2.Document`, serialized."""
    message = to_message(openapi_v2.Document.DESCRIPTOR, document)
    return message.SerializeToString(deterministic=True)


def to_message(descriptor: Descriptor, value: Any) -> Message:
    """`value` (the JSON of one part of a Swagger document) as the message `descriptor` names."""
    message = GetMessageClass(descriptor)()
    name = descriptor.name
    if name == "Any":
        message.yaml = yaml.safe_dump(value, sort_keys=False)
    elif name in ("TypeItem", "StringArray"):
        message.value.extend([value] if isinstance(value, str) else value)
    elif name == "ItemsItem":
        _put(message, "schema", [value] if isinstance(value, dict) else value)
    elif name in ("Paths", "Responses"):
        for key, item in value.items():
            field = "vendor_extension" if key.startswith("x-") else _PAIRS[name]
            _put(message, field, [_named(message, field, key, item)])
    elif [f.name for f in descriptor.fields] == ["additional_properties"]:
        pairs = [_named(message, "additional_properties", k, v) for k, v in value.items()]
        _put(message, "additional_properties", pairs)
    elif descriptor.oneofs_by_name.get("oneof") is not None:
        _put(message, _branch(name, value), value)
    else:
        _fill(message, value)
    return message


def _branch(name: str, value: Any) -> str:
    """Which field of a oneof message the JSON `value` is (gnostic decides it by content)."""
    if name == "AdditionalPropertiesItem":
        return "boolean" if isinstance(value, bool) else "schema"
    if name in ("ParametersItem", "ResponseValue"):
        if "$ref" in value:
            return "json_reference"
        return "parameter" if name == "ParametersItem" else "response"
    if name == "Parameter":
        return "body_parameter" if value.get("in") == "body" else "non_body_parameter"
    if name == "NonBodyParameter":
        return _NON_BODY[value["in"]]
    if name == "SchemaItem":
        return "file_schema" if value.get("type") == "file" else "schema"
    if name == "SecurityDefinitionsItem":
        kind = value.get("type")
        if kind == "basic":
            return "basic_authentication_security"
        if kind == "apiKey":
            return "api_key_security"
        return _OAUTH2[value["flow"]]
    raise ValueError(f"openapi.v2.{name}: no rule for its oneof")


def _named(message: Message, field: str, key: str, value: Any) -> Message:
    """One `Named*` pair of a map-like field: the key and its value's message (or string)."""
    pair = GetMessageClass(message.DESCRIPTOR.fields_by_name[field].message_type)()
    pair.name = key
    _put(pair, "value", value)
    return pair


def _fill(message: Message, value: dict[str, Any]) -> None:
    """A plain message from a JSON object, key by key."""
    fields = message.DESCRIPTOR.fields_by_name
    for key, item in value.items():
        if key.startswith("x-") and "vendor_extension" in fields:
            _put(message, "vendor_extension", [_named(message, "vendor_extension", key, item)])
            continue
        field = "_ref" if key == "$ref" else _CAMEL.sub(r"_\1", key).lower()
        if field not in fields:
            raise ValueError(f"openapi.v2.{message.DESCRIPTOR.name} has no field for {key!r}")
        _put(message, field, item)


def _put(message: Message, name: str, value: Any) -> None:
    """Set field `name` of `message` from JSON (a list for a repeated field)."""
    field: FieldDescriptor = message.DESCRIPTOR.fields_by_name[name]
    if field.message_type is None:
        if field.is_repeated:
            getattr(message, name).extend(value)
        elif field.type in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
            setattr(message, name, float(value))
        else:
            setattr(message, name, value)
        return
    if field.is_repeated:
        items = [v if isinstance(v, Message) else to_message(field.message_type, v) for v in value]
        getattr(message, name).extend(items)
    elif isinstance(value, Message):
        getattr(message, name).CopyFrom(value)
    else:
        getattr(message, name).CopyFrom(to_message(field.message_type, value))
