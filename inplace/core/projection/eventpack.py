"""An Event's JSON packed small, as an EventStore holds it out of its hot set (issue 16).

Each Event is compressed alone (zlib, fastest level) from a preset dictionary of what most
Events' JSON repeats: the keys and the scheduler's and kubelet's words. Events come in two
spellings, and one dictionary packs only its own well: ours (compact, the fields in the
model's order) and the text PostgreSQL prints a jsonb value as (", " and ": ", each object's
keys shortest first), which every Event read from the projection at a start has. Packed with
the dictionary of the other spelling a snapshot's Event took ~205 bytes; with its own ~105,
as ours do (~570 and ~610 bytes unpacked). A first byte says which dictionary packed it.
"""

from __future__ import annotations

import json
import zlib
from datetime import UTC, datetime
from typing import Any

from schemas.k8s import Event, ObjectMeta
from schemas.kubeevents import event_about, reference


def event_json(event: Event) -> bytes:
    """An Event's Kubernetes JSON, in one pass."""
    raw: bytes = event.__pydantic_serializer__.to_json(event, by_alias=True, exclude_none=True)
    return raw


def jsonb_text(value: Any) -> str:
    """`value` as PostgreSQL prints a jsonb: keys by length, then bytes; ", " and ": "."""
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: (len(k.encode()), k.encode()))
        return "{" + ", ".join(f"{json.dumps(k)}: {jsonb_text(value[k])}" for k in keys) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(jsonb_text(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def _typical() -> list[bytes]:
    """The JSON of a few typical Events: a pod scheduled, a container started, a resize."""
    at = datetime(2026, 1, 1, tzinfo=UTC)
    pod = ObjectMeta(name="web-0", namespace="default", uid="00000000-0000-0000-0000-000000000000")
    words = [
        ("Scheduled", "Successfully assigned default/web-0 to node-0", None),
        ("Started", "Started container app", "node-0"),
        ("ResizeStarted", 'Pod resize started: {"containers":[{"name":"app","resources":'
         '{"limits":{"cpu":"100m","memory":"128Mi"},"requests":{"cpu":"100m","memory":'
         '"128Mi"}}}],"generation":2}', "node-0"),
    ]  # fmt: skip
    return [
        event_json(
            event_about(
                reference("Pod", pod),
                name="web-0.1",
                namespace="default",
                reason=reason,
                message=message,
                component="kubelet" if host else "default-scheduler",
                instance=host or "default-scheduler",
                host=host,
                now=at,
                counted=host is not None,
            )
        )
        for reason, message, host in words
    ]


COMPACT, JSONB = 0, 1  # the spellings, each with its dictionary (the packed form's first byte)
_DICTIONARIES = (
    b"".join(_typical()),
    b"".join(jsonb_text(json.loads(raw)).encode() for raw in _typical()),
)

# Raw deflate (no zlib header, dictionary id or checksum: 10 bytes of ~125), level 3 (~9 bytes
# fewer than the fastest, as fast on one Event), a 4 KiB window (a dictionary fits), little
# memory. Each Event is packed from a copy of a (de)compressor that has read its dictionary
# already (~12 µs to pack, ~5 to unpack; a fresh one per Event re-reads the dictionary).
_WBITS = -12
_PACKERS = [zlib.compressobj(3, zlib.DEFLATED, _WBITS, 4, zdict=d) for d in _DICTIONARIES]
_UNPACKERS = [zlib.decompressobj(_WBITS, zdict=d) for d in _DICTIONARIES]


def spelling(raw: bytes) -> int:
    """JSONB when `raw` is spelled as PostgreSQL prints a jsonb (a space after the first
    key's colon), else COMPACT."""
    return JSONB if b'": ' in raw[: raw.find(b",") + 1 or 64] else COMPACT


def pack(raw: bytes) -> bytes:
    """An Event's JSON as held out of the hot set; what is packed already stays as it is
    (JSON starts with "{", a packed Event with its dictionary's number)."""
    if raw[:1] != b"{":
        return raw
    form = spelling(raw)
    packer = _PACKERS[form].copy()
    return bytes((form,)) + packer.compress(raw) + packer.flush()


def unpack(held: bytes) -> bytes:
    """The JSON of an Event held packed (or not)."""
    if held[:1] == b"{":
        return held
    unpacker = _UNPACKERS[held[0]].copy()
    return unpacker.decompress(memoryview(held)[1:]) + unpacker.flush()
