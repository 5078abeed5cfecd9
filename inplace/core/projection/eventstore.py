"""Kubernetes Events as a read model holds them: their JSON, decoded on demand (issue 16).

A decoded Event takes ~4.7 KB of heap, its JSON ~0.6 KB, and the apiserver holds every Event
of the last hour (its event TTL): a Scheduled for each pod, the kubelet's for each container
it starts and each resize, hundreds of thousands at 50,000 pods. Beside each Event's JSON the
store keeps when it was last written, so the TTL sweep decodes only the expired ones. The
`hot` Events written or read last stay decoded: a repeated Event aggregates on one just
written, and each is serialized once (the watch's JSON, `settle`, or when it leaves the set).

As in PodStore, every change goes through `store[key] = event` (the reducer returns a new
object): a decoded Event changed in place and not put back keeps its change only while hot.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from inplace.core.projection.entries import HeldAsEntries
from schemas.k8s import Event
from schemas.kubeevents import last_written

NsName = tuple[str, str]

DEFAULT_HOT = 1024


class _Entry:
    """One Event: its JSON (None while the decoded one in the hot set is newer), its
    resourceVersion and when it was last written."""

    __slots__ = ("raw", "rv", "written")

    def __init__(self, raw: bytes | None, rv: int, written: datetime | None) -> None:
        self.raw = raw
        self.rv = rv
        self.written = written


def event_json(event: Event) -> bytes:
    """An Event's Kubernetes JSON, in one pass."""
    raw: bytes = event.__pydantic_serializer__.to_json(event, by_alias=True, exclude_none=True)
    return raw


class EventStore(HeldAsEntries[NsName, Event]):
    def __init__(self, hot: int = DEFAULT_HOT) -> None:
        self.hot = hot
        self._entries: dict[NsName, _Entry] = {}
        self._decoded: OrderedDict[NsName, Event] = OrderedDict()  # LRU order

    # --- the mapping ------------------------------------------------------------------------

    def __getitem__(self, key: NsName) -> Event:
        event = self._decoded.get(key)
        if event is not None:
            self._decoded.move_to_end(key)
            return event
        event = self._read(key)
        self._admit(key, event)
        return event

    def __setitem__(self, key: NsName, event: Event) -> None:
        rv, written = int(event.metadata.resource_version or 0), last_written(event)
        entry = self._entries.get(key)
        if entry is None:
            self._entries[key] = _Entry(None, rv, written)
        else:
            entry.raw, entry.rv, entry.written = None, rv, written
        self._decoded.pop(key, None)
        self._admit(key, event)

    def __delitem__(self, key: NsName) -> None:
        del self._entries[key]
        self._decoded.pop(key, None)

    def items(self) -> Iterator[tuple[NsName, Event]]:  # type: ignore[override]
        """Every Event, decoded for reading; the hot set is left as it was."""
        for key in list(self._entries):
            yield key, self._read(key)

    def values(self) -> Iterator[Event]:  # type: ignore[override]
        for _, event in self.items():
            yield event

    # --- without decoding -------------------------------------------------------------------

    def documents(self, namespace: str | None = None) -> Iterator[tuple[NsName, dict[str, Any]]]:
        """Every Event (of `namespace`) as its Kubernetes JSON parsed (what a LIST serves), no
        model built; those of other namespaces are not parsed."""
        for key, entry in list(self._entries.items()):
            if namespace is not None and key[0] != namespace:
                continue
            if entry.raw is not None:
                yield key, json.loads(entry.raw)
            else:
                yield key, self._decoded[key].to_k8s()

    def written_before(self, cutoff: datetime) -> list[Event]:
        """The Events last written at or before `cutoff` (the TTL sweep's), decoded; the
        others are not."""
        return [
            self._read(key)
            for key, entry in list(self._entries.items())
            if entry.written is not None and entry.written <= cutoff
        ]

    def put_json(self, key: NsName, raw: bytes, *, rv: int, written: datetime | None) -> None:
        """Hold an Event as its JSON (a snapshot row), undecoded."""
        self._decoded.pop(key, None)
        self._entries[key] = _Entry(raw, rv, written)

    def newest_resource_version(self) -> int:
        return max((entry.rv for entry in self._entries.values()), default=0)

    def settle(self, key: NsName, raw: bytes) -> None:
        """`raw` is the JSON of the Event as it is now (a watch snapshot just taken of it):
        kept, so the Event leaves the hot set without being serialized again."""
        entry = self._entries.get(key)
        if entry is not None:
            entry.raw = raw

    # --- the hot set ------------------------------------------------------------------------

    def _read(self, key: NsName) -> Event:
        event = self._decoded.get(key)
        if event is None:
            event = Event.model_validate_json(self._entries[key].raw or b"")
        return event

    def _admit(self, key: NsName, event: Event) -> None:
        self._decoded[key] = event
        while len(self._decoded) > self.hot:
            old_key, old = self._decoded.popitem(last=False)
            entry = self._entries.get(old_key)
            if entry is not None and entry.raw is None:
                entry.raw = event_json(old)
