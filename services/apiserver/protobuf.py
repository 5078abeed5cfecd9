"""Reading Kubernetes' protobuf encoding, for the bodies kubectl's typed commands send as
protobuf (`kubectl auth can-i` posts a SelfSubjectAccessReview that way).

The wire format is four magic bytes `k8s\\0`, then a `runtime.Unknown` message whose field 2
is the object's own message. We decode the fields of the messages we accept by number, from
k8s.io/api's generated.proto; answers go back as JSON, which every client reads.
"""

from __future__ import annotations

from collections.abc import Iterator

MAGIC = b"k8s\x00"
MEDIA_TYPE = "application/vnd.kubernetes.protobuf"


class ProtobufError(ValueError):
    """Not a valid message; one line."""


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise ProtobufError("truncated varint")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7


def fields(data: bytes) -> Iterator[tuple[int, bytes | int]]:
    """(field number, value) of one message: bytes for length-delimited fields, int for
    varints; fixed-width fields are skipped."""
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = _varint(data, at)
            yield number, value
        elif wire == 2:
            size, at = _varint(data, at)
            if at + size > len(data):
                raise ProtobufError("truncated field")
            yield number, data[at : at + size]
            at += size
        elif wire in (1, 5):
            at += 8 if wire == 1 else 4
        else:
            raise ProtobufError(f"unsupported wire type {wire}")


def _strings(data: bytes, names: dict[int, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for number, value in fields(data):
        if number in names and isinstance(value, bytes):
            out[names[number]] = value.decode("utf-8", "replace")
    return out


def unwrap(body: bytes) -> tuple[str, str, bytes]:
    """(apiVersion, kind, raw object message) of an enveloped body."""
    if not body.startswith(MAGIC):
        raise ProtobufError("missing the k8s protobuf magic prefix")
    api_version = kind = ""
    raw = b""
    for number, value in fields(body[len(MAGIC) :]):
        if number == 1 and isinstance(value, bytes):
            meta = _strings(value, {1: "apiVersion", 2: "kind"})
            api_version, kind = meta.get("apiVersion", ""), meta.get("kind", "")
        elif number == 2 and isinstance(value, bytes):
            raw = value
    return api_version, kind, raw


_RESOURCE_ATTRIBUTES = {
    1: "namespace",
    2: "verb",
    3: "group",
    4: "version",
    5: "resource",
    6: "subresource",
    7: "name",
}
_NON_RESOURCE_ATTRIBUTES = {1: "path", 2: "verb"}


def self_subject_access_review(body: bytes) -> dict[str, object]:
    """A protobuf SelfSubjectAccessReview as the JSON object it stands for."""
    api_version, kind, raw = unwrap(body)
    if kind != "SelfSubjectAccessReview":
        raise ProtobufError(f"expected a SelfSubjectAccessReview, got {kind or 'no kind'}")
    spec: dict[str, object] = {}
    for number, value in fields(raw):
        if number != 2 or not isinstance(value, bytes):
            continue
        for part, inner in fields(value):
            if part == 1 and isinstance(inner, bytes):
                spec["resourceAttributes"] = _strings(inner, _RESOURCE_ATTRIBUTES)
            elif part == 2 and isinstance(inner, bytes):
                spec["nonResourceAttributes"] = _strings(inner, _NON_RESOURCE_ATTRIBUTES)
    return {"apiVersion": api_version, "kind": kind, "spec": spec}
