"""Reading Kubernetes' protobuf encoding, for the bodies kubectl's typed commands send as
protobuf (`kubectl run`, `kubectl create namespace|quota`, `kubectl auth can-i [--list]`).

The wire format is four magic bytes `k8s\\0`, then a `runtime.Unknown` message: its type meta
(apiVersion, kind) and the object's own message. The messages are Kubernetes' own, generated
from k8s.io/api's `generated.proto` (`schemas/k8sproto`); the object becomes the JSON it stands
for, as Go's JSON encoding would write it, and takes the JSON path from there. Answers go back
as JSON, which every client reads.
"""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from importlib import resources
from typing import Any

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError, Message

from schemas.k8sproto.k8s.io.api.authorization.v1 import generated_pb2 as authorization_v1
from schemas.k8sproto.k8s.io.api.core.v1 import generated_pb2 as core_v1
from schemas.k8sproto.k8s.io.api.policy.v1 import generated_pb2 as policy_v1
from schemas.k8sproto.k8s.io.apimachinery.pkg.runtime import generated_pb2 as runtime

MAGIC = b"k8s\x00"
MEDIA_TYPE = "application/vnd.kubernetes.protobuf"

# What a body may be, by its type meta: the kinds this apiserver creates or reviews.
MESSAGES: dict[tuple[str, str], type[Message]] = {
    ("v1", "Pod"): core_v1.Pod,
    ("v1", "Namespace"): core_v1.Namespace,
    ("v1", "ResourceQuota"): core_v1.ResourceQuota,
    ("v1", "LimitRange"): core_v1.LimitRange,
    ("v1", "Node"): core_v1.Node,
    ("v1", "Event"): core_v1.Event,
    ("v1", "Binding"): core_v1.Binding,
    ("policy/v1", "Eviction"): policy_v1.Eviction,
    ("policy/v1", "PodDisruptionBudget"): policy_v1.PodDisruptionBudget,
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): (
        authorization_v1.SelfSubjectAccessReview
    ),
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"): authorization_v1.SelfSubjectRulesReview,
}

_APIMACHINERY = "k8s.io.apimachinery.pkg"
QUANTITY = f"{_APIMACHINERY}.api.resource.Quantity"
TIME = f"{_APIMACHINERY}.apis.meta.v1.Time"
MICRO_TIME = f"{_APIMACHINERY}.apis.meta.v1.MicroTime"
DURATION = f"{_APIMACHINERY}.apis.meta.v1.Duration"
INT_OR_STRING = f"{_APIMACHINERY}.util.intstr.IntOrString"
RAW_EXTENSION = f"{_APIMACHINERY}.runtime.RawExtension"


class ProtobufError(ValueError):
    """Not a message we read; one line."""


def decode(body: bytes) -> dict[str, Any]:
    """The JSON object an enveloped protobuf body stands for."""
    if not body.startswith(MAGIC):
        raise ProtobufError("missing the k8s protobuf magic prefix")
    unknown = runtime.Unknown()
    _parse(unknown, body[len(MAGIC) :])
    api_version, kind = unknown.typeMeta.apiVersion, unknown.typeMeta.kind
    message_type = MESSAGES.get((api_version, kind))
    if message_type is None:
        raise ProtobufError(f"no {kind or 'kind'} ({api_version or 'no apiVersion'}) is read here")
    message = message_type()
    _parse(message, unknown.raw)
    return {"apiVersion": api_version, "kind": kind, **_object(message)}


def _parse(message: Message, data: bytes) -> None:
    try:
        message.ParseFromString(data)
    except DecodeError as exc:
        raise ProtobufError(f"not a valid {message.DESCRIPTOR.name}: {exc}") from None


def _rfc3339(seconds: int, nanos: int, micro: bool) -> str:
    at = datetime.fromtimestamp(seconds, UTC)
    if micro:
        return at.strftime("%Y-%m-%dT%H:%M:%S") + f".{nanos // 1000:06d}Z"
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def _special(message: Any, name: str) -> Any:
    """Apimachinery's types whose JSON is not their message's shape."""
    if name == QUANTITY:
        return message.string
    if name in (TIME, MICRO_TIME):
        if not message.seconds and not message.nanos:
            return None  # the zero time: Go writes no value
        return _rfc3339(message.seconds, message.nanos, name == MICRO_TIME)
    if name == INT_OR_STRING:
        return message.intVal if message.type == 0 else message.strVal
    if name == DURATION:
        return f"{message.duration / 1e9:g}s"
    try:  # RAW_EXTENSION: an embedded object, JSON already
        return json.loads(message.raw) if message.raw else None
    except ValueError:
        raise ProtobufError("an embedded object is not JSON") from None


_SPECIAL = frozenset({QUANTITY, TIME, MICRO_TIME, DURATION, INT_OR_STRING, RAW_EXTENSION})
# Fields whose message Go's JSON inlines into the parent (a Probe's handler, a Volume's
# source), by message; generated beside the modules from the `json:",inline"` tags.
INLINE: dict[str, frozenset[int]] = {
    message: frozenset(numbers)
    for message, numbers in json.loads(
        resources.files("schemas.k8sproto").joinpath("inline.json").read_text()
    ).items()
}


def _empty(value: Any) -> bool:
    # Go's `omitempty`: empty strings, lists, maps and structs are left out. Numbers and
    # booleans are kept: proto2 marks them present only when Go wrote them.
    return value is None or (isinstance(value, (str, list, dict)) and not value)


def _object(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {}
    inline = INLINE.get(message.DESCRIPTOR.full_name, frozenset())
    for field, value in message.ListFields():
        converted = _field(field, value)
        if field.number in inline and isinstance(converted, dict):
            out.update(converted)
        elif not _empty(converted):
            out[field.json_name] = converted
    return out


def _field(field: FieldDescriptor, value: Any) -> Any:
    message_type = field.message_type
    if message_type is not None and message_type.GetOptions().map_entry:
        inner = message_type.fields_by_name["value"]
        return {key: _single(inner, item) for key, item in value.items()}
    if field.is_repeated:
        return [_single(field, item) for item in value]
    return _single(field, value)


def _single(field: FieldDescriptor, value: Any) -> Any:
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        name = field.message_type.full_name
        return _special(value, name) if name in _SPECIAL else _object(value)
    if field.type == FieldDescriptor.TYPE_BYTES:
        return base64.b64encode(value).decode("ascii")
    return value
