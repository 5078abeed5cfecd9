"""Reading Kubernetes' protobuf encoding, for the bodies kubectl's typed commands send as
protobuf (`kubectl auth can-i` posts a SelfSubjectAccessReview that way, `--list` a
SelfSubjectRulesReview).

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


def self_subject_rules_review(body: bytes) -> dict[str, object]:
    """A protobuf SelfSubjectRulesReview (`kubectl auth can-i --list`) as the JSON object it
    stands for: its spec (field 2) holds the namespace (field 1)."""
    api_version, kind, raw = unwrap(body)
    if kind != "SelfSubjectRulesReview":
        raise ProtobufError(f"expected a SelfSubjectRulesReview, got {kind or 'no kind'}")
    spec: dict[str, object] = {}
    for number, value in fields(raw):
        if number == 2 and isinstance(value, bytes):
            spec = dict(_strings(value, {1: "namespace"}))
    return {"apiVersion": api_version, "kind": kind, "spec": spec}


def _map(entries: list[bytes]) -> dict[str, str]:
    """A protobuf map<string, string>: repeated entries of key (1) and value (2)."""
    out: dict[str, str] = {}
    for entry in entries:
        item = _strings(entry, {1: "key", 2: "value"})
        out[item.get("key", "")] = item.get("value", "")
    return out


def _object_meta(data: bytes) -> dict[str, object]:
    """The ObjectMeta fields a create carries: name (1), generateName (2), namespace (3),
    labels (11) and annotations (12); the server sets the rest."""
    meta: dict[str, object] = dict(_strings(data, {1: "name", 2: "generateName", 3: "namespace"}))
    labels = [v for n, v in fields(data) if n == 11 and isinstance(v, bytes)]
    annotations = [v for n, v in fields(data) if n == 12 and isinstance(v, bytes)]
    if labels:
        meta["labels"] = _map(labels)
    if annotations:
        meta["annotations"] = _map(annotations)
    return meta


def namespace(body: bytes) -> dict[str, object]:
    """A protobuf Namespace (`kubectl create namespace`) as the JSON object it stands for:
    its metadata (field 1); a new namespace's spec and status are the server's."""
    api_version, kind, raw = unwrap(body)
    if kind != "Namespace":
        raise ProtobufError(f"expected a Namespace, got {kind or 'no kind'}")
    meta: dict[str, object] = {}
    for number, value in fields(raw):
        if number == 1 and isinstance(value, bytes):
            meta = _object_meta(value)
    return {"apiVersion": api_version or "v1", "kind": kind, "metadata": meta}
