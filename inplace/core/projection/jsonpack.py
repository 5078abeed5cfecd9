"""JSON objects of one kind packed small, one at a time, for a store that holds many (issue 16).

Each object is compressed alone (raw deflate) from a preset dictionary of what objects of its
kind repeat: their keys and usual words, taken from a few typical ones. JSON comes in two
spellings, and one dictionary packs only its own well: ours (compact, fields in the model's
order) and the text PostgreSQL prints a jsonb value as (", " and ": ", each object's keys
shortest first), which every object read from the projection at a start has. An Event of that
spelling packed with our spelling's dictionary took ~205 bytes; with its own ~105, as ours do
(~570 and ~610 bytes unpacked). A first byte says which dictionary packed an object.
"""

from __future__ import annotations

import json
import zlib
from typing import Any

COMPACT, JSONB = 0, 1  # the spellings, each with its dictionary (the packed form's first byte)

# Raw deflate (no zlib header, dictionary id or checksum: 10 bytes of ~125), level 3 (~9 bytes
# fewer than the fastest, as fast on one object), a 4 KiB window (a dictionary fits), little
# memory. Each object is packed from a copy of a (de)compressor that has read its dictionary
# already (an Event: ~12 µs to pack, ~5 to unpack; a fresh one per object re-reads it).
_LEVEL, _WBITS, _MEMLEVEL = 3, -12, 4


def jsonb_text(value: Any) -> str:
    """`value` as PostgreSQL prints a jsonb: keys by length, then bytes; ", " and ": "."""
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: (len(k.encode()), k.encode()))
        return "{" + ", ".join(f"{json.dumps(k)}: {jsonb_text(value[k])}" for k in keys) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(jsonb_text(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def spelling(raw: bytes) -> int:
    """JSONB when `raw` is spelled as PostgreSQL prints a jsonb (a space after the first
    key's colon), else COMPACT."""
    return JSONB if b'": ' in raw[: raw.find(b",") + 1 or 64] else COMPACT


class JsonPacker:
    """Packs and unpacks the JSON of one kind of object, from `typical` ones (ours)."""

    def __init__(self, typical: list[bytes]) -> None:
        dictionaries = (
            b"".join(typical),
            b"".join(jsonb_text(json.loads(raw)).encode() for raw in typical),
        )
        self._packers = [
            zlib.compressobj(_LEVEL, zlib.DEFLATED, _WBITS, _MEMLEVEL, zdict=d)
            for d in dictionaries
        ]
        self._unpackers = [zlib.decompressobj(_WBITS, zdict=d) for d in dictionaries]

    def pack(self, raw: bytes) -> bytes:
        """The JSON `raw` as held; what is packed already stays as it is (JSON starts with
        "{", a packed object with its dictionary's number)."""
        if raw[:1] != b"{":
            return raw
        form = spelling(raw)
        packer = self._packers[form].copy()
        return bytes((form,)) + packer.compress(raw) + packer.flush()

    def unpack(self, held: bytes) -> bytes:
        """The JSON of an object held packed (or not)."""
        if held[:1] == b"{":
            return held
        unpacker = self._unpackers[held[0]].copy()
        return unpacker.decompress(memoryview(held)[1:]) + unpacker.flush()
