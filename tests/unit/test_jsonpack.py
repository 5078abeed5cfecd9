"""jsonpack: JSON packed with the dictionary of its spelling, and back (an Event's, as
eventpack packs it)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from inplace.core.projection.eventpack import event_json, pack, unpack
from inplace.core.projection.jsonpack import COMPACT, JSONB, jsonb_text, spelling
from tests import factories

AT = datetime(2026, 11, 29, 5, 30, tzinfo=UTC)


def _resize_started(pod: str) -> bytes:
    message = 'Pod resize started: {"containers":[{"name":"app","resources":{}}]}'
    event = factories.kubelet_event(
        pod, AT, namespace="team-a", reason="ResizeStarted", message=message, now=AT
    )
    return event_json(event)


@pytest.mark.parametrize("form", [COMPACT, JSONB])
def test_each_spelling_packs_small_with_its_own_dictionary_and_comes_back(form: int) -> None:
    compact = _resize_started("web-41")
    raw = compact if form == COMPACT else jsonb_text(json.loads(compact)).encode()
    assert spelling(raw) == form
    held = pack(raw)
    assert held[0] == form
    assert unpack(held) == raw
    assert pack(held) is held  # packed already: left as it is
    assert unpack(raw) is raw  # held unpacked (hot, or settled from a watch): as it is
    assert len(held) < len(raw) / 3


def test_jsonb_text_spells_objects_as_postgres_prints_them() -> None:
    value = {"type": "Normal", "a": [1, {"bb": None, "b": "ü"}], "kind": "Event"}
    assert (
        jsonb_text(value) == '{"a": [1, {"b": "ü", "bb": null}], "kind": "Event", "type": "Normal"}'
    )
