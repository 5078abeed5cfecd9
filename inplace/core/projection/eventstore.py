"""Kubernetes Events as a read model holds them: their JSON, decoded on demand (issue 16).

A decoded Event takes ~4.7 KB of heap, its JSON ~0.6 KB, and the apiserver holds every Event
of the last hour (its event TTL): a Scheduled for each pod, the kubelet's for each container
it starts and each resize, hundreds of thousands at 50,000 pods. Beside each Event's JSON the
store keeps when it was last written, so the TTL sweep decodes only the expired ones. The
`hot` Events written or read last stay decoded: a repeated Event aggregates on one just
written, and each is serialized once (the watch's JSON, `settle`, or when it leaves the set).

The store also knows which Events are about which object (by involvedObject.name): `kubectl
describe pod` lists the Events of one pod, and parsing every Event of a namespace of 50,000 pods
to find its four took seconds (`keys_of(namespace, involved=...)`).

Out of the hot set an Event's JSON is held compressed (zlib from a preset dictionary of a
typical Event's JSON: ~740 bytes become ~187), each once as it leaves the set or comes from a
snapshot row; a LIST's page and the TTL sweep decompress what they read.

As in PodStore, every change goes through `store[key] = event` (the reducer returns a new
object): a decoded Event changed in place and not put back keeps its change only while hot.
"""

from __future__ import annotations

import zlib
from collections import OrderedDict
from collections.abc import Iterator
from datetime import UTC, datetime

from inplace.core.projection.entries import HeldAsEntries, list_key
from schemas.k8s import Event, ObjectMeta
from schemas.kubeevents import event_about, last_written, reference

NsName = tuple[str, str]

DEFAULT_HOT = 1024


class _Entry:
    """One Event: its JSON (None while the decoded one in the hot set is newer), its
    resourceVersion, when it was last written and the name of the object it is about."""

    __slots__ = ("involved", "raw", "rv", "written")

    def __init__(self, raw: bytes | None, rv: int, written: datetime | None, involved: str) -> None:
        self.raw = raw
        self.rv = rv
        self.written = written
        self.involved = involved


def event_json(event: Event) -> bytes:
    """An Event's Kubernetes JSON, in one pass."""
    raw: bytes = event.__pydantic_serializer__.to_json(event, by_alias=True, exclude_none=True)
    return raw


def _typical() -> bytes:
    """The preset dictionary: what most Events' JSON repeats (keys, the kubelet's words)."""
    at = datetime(2026, 1, 1, tzinfo=UTC)
    pod = ObjectMeta(name="web-0", namespace="default", uid="00000000-0000-0000-0000-000000000000")
    words = [
        ("Scheduled", "Successfully assigned default/web-0 to node-0", None),
        ("Started", "Started container app", "node-0"),
        ("ResizeStarted", 'Pod resize started: {"containers":[{"name":"app","resources":'
         '{"limits":{"cpu":"100m","memory":"128Mi"},"requests":{"cpu":"100m","memory":'
         '"128Mi"}}}],"generation":2}', "node-0"),
    ]  # fmt: skip
    return b"".join(
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
    )


# Fastest level, a 2 KiB window (the dictionary fits), little memory: each Event is packed
# alone, from a copy of a (de)compressor that has read the dictionary already (~12 µs to pack,
# ~5 to unpack; a fresh one per Event re-reads the dictionary).
_WBITS = 11
_PACKER = zlib.compressobj(1, zlib.DEFLATED, _WBITS, 4, zdict=_typical())
_UNPACKER = zlib.decompressobj(_WBITS, zdict=_typical())


def _pack(raw: bytes) -> bytes:
    """An Event's JSON as held out of the hot set; packed JSON stays as it is (a zlib stream
    never starts with "{")."""
    if raw[:1] != b"{":
        return raw
    packer = _PACKER.copy()
    return packer.compress(raw) + packer.flush()


def _unpack(held: bytes) -> bytes:
    """The JSON of an Event held packed (or not)."""
    if held[:1] == b"{":
        return held
    unpacker = _UNPACKER.copy()
    return unpacker.decompress(held) + unpacker.flush()


class EventStore(HeldAsEntries[NsName, Event]):
    def __init__(self, hot: int = DEFAULT_HOT) -> None:
        self.hot = hot
        self._entries: dict[NsName, _Entry] = {}
        self._decoded: OrderedDict[NsName, Event] = OrderedDict()  # LRU order
        # involvedObject.name -> the keys of the Events about it (a list: a few per object)
        self._about: dict[str, list[NsName]] = {}
        # LIST order of each namespace's keys (None: all), kept while no Event comes or goes:
        # a client paging through 150,000 Events no longer sorts them for every page.
        self._listed: dict[str | None, list[NsName]] = {}

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
        involved = event.involved_object.name or ""
        entry = self._entries.get(key)
        if entry is None:
            self._entries[key] = _Entry(None, rv, written, involved)
            self._about.setdefault(involved, []).append(key)
            self._listed.clear()
        else:
            entry.raw, entry.rv, entry.written = None, rv, written
            if entry.involved != involved:
                self._unindex(key, entry.involved)
                self._about.setdefault(involved, []).append(key)
                entry.involved = involved
        self._decoded.pop(key, None)
        self._admit(key, event)

    def __delitem__(self, key: NsName) -> None:
        self._unindex(key, self._entries.pop(key).involved)
        self._decoded.pop(key, None)
        self._listed.clear()

    def _unindex(self, key: NsName, involved: str) -> None:
        keys = self._about[involved]
        keys.remove(key)
        if not keys:
            del self._about[involved]

    def items(self) -> Iterator[tuple[NsName, Event]]:  # type: ignore[override]
        """Every Event, decoded for reading; the hot set is left as it was."""
        for key in list(self._entries):
            yield key, self._read(key)

    def values(self) -> Iterator[Event]:  # type: ignore[override]
        for _, event in self.items():
            yield event

    # --- without decoding -------------------------------------------------------------------

    def keys_of(self, namespace: str | None = None, *, involved: str | None = None) -> list[NsName]:
        """The keys of the Events (of `namespace`; about an object named `involved`), none
        decoded: a LIST's candidates."""
        keys = self._entries if involved is None else self._about.get(involved, ())
        return [key for key in keys if namespace is None or key[0] == namespace]

    def listed(self, namespace: str | None = None) -> list[NsName]:
        """The keys of the Events (of `namespace`) in a LIST's order, "namespace/name" (the
        same list again until an Event comes or goes)."""
        found = self._listed.get(namespace)
        if found is None:
            found = sorted(self.keys_of(namespace), key=list_key)
            self._listed[namespace] = found
        return found

    def json(self, key: NsName) -> bytes:
        """The Event's Kubernetes JSON (what a LIST serves), without building its model."""
        entry = self._entries[key]
        if entry.raw is None:  # the decoded one is newer: serialized once, kept
            entry.raw = event_json(self._decoded[key])
        return _unpack(entry.raw)

    def written_before(self, cutoff: datetime) -> list[Event]:
        """The Events last written at or before `cutoff` (the TTL sweep's), decoded; the
        others are not."""
        return [
            self._read(key)
            for key, entry in list(self._entries.items())
            if entry.written is not None and entry.written <= cutoff
        ]

    def put_json(
        self, key: NsName, raw: bytes, *, rv: int, written: datetime | None, involved: str
    ) -> None:
        """Hold an Event as its JSON (a snapshot row), undecoded; `involved` is its
        involvedObject.name."""
        if key in self._entries:
            del self[key]
        self._entries[key] = _Entry(_pack(raw), rv, written, involved)
        self._about.setdefault(involved, []).append(key)
        self._listed.clear()

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
            event = Event.model_validate_json(_unpack(self._entries[key].raw or b"{}"))
        return event

    def _admit(self, key: NsName, event: Event) -> None:
        self._decoded[key] = event
        while len(self._decoded) > self.hot:
            old_key, old = self._decoded.popitem(last=False)
            entry = self._entries.get(old_key)
            if entry is not None:
                entry.raw = _pack(event_json(old) if entry.raw is None else entry.raw)
