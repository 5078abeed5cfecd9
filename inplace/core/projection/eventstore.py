"""Kubernetes Events as a read model holds them: their JSON, decoded on demand (issue 16).

A decoded Event takes ~4.7 KB of heap, its JSON ~0.6 KB, and the apiserver holds every Event
of the last hour (its event TTL): a Scheduled for each pod, the kubelet's for each container
it starts and each resize, hundreds of thousands at 50,000 pods. In front of each Event's JSON
the store keeps when it was last written, so the TTL sweep decodes only the expired ones, and
what it is about, all in one bytes object under its name in its namespace's dict: ~300 bytes
of RSS per Event in all (an entry object, a timestamp, a key tuple each took ~570). The
`hot` Events written or read last stay decoded: a repeated Event aggregates on one just
written, and each is serialized once (the watch's JSON, `settle`, or when it leaves the set).

The store also knows which Events are about which object (by involvedObject.name): `kubectl
describe pod` lists the Events of one pod, and parsing every Event of a namespace of 50,000 pods
to find its four took seconds (`keys_of(namespace, involved=...)`).

Out of the hot set an Event's JSON is held compressed (eventpack.py: ~570 bytes become ~105),
each once as it leaves the set or comes from a snapshot row; a LIST's page and the TTL sweep
decompress what they read.

As in PodStore, every change goes through `store[key] = event` (the reducer returns a new
object): a decoded Event changed in place and not put back keeps its change only while hot.
"""

from __future__ import annotations

import struct
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Iterator, MutableMapping, Sequence
from datetime import UTC, datetime, timedelta
from itertools import accumulate
from typing import overload

from inplace.core.projection.eventpack import event_json, pack, unpack
from schemas.k8s import Event
from schemas.kubeevents import last_written

NsName = tuple[str, str]

DEFAULT_HOT = 1024


# What the store keeps of each Event beside its JSON, in front of it in one bytes object (an
# object per Event for these took ~170 bytes more each): when it was last written, in
# microseconds since the epoch (NO_TIME: it does not say), and its involvedObject.name.
_HEAD = struct.Struct("<qH")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
NO_TIME = -(2**63)


def _micros(at: datetime | None) -> int:
    if at is None:
        return NO_TIME
    return ((at if at.tzinfo else at.replace(tzinfo=UTC)) - _EPOCH) // timedelta(microseconds=1)


def _as_held(written: datetime | None, involved: str, body: bytes) -> bytes:
    """An Event as held: its head, then its JSON (packed or not; empty while the decoded one
    in the hot set is newer)."""
    name = involved.encode()
    return _HEAD.pack(_micros(written), len(name)) + name + body


def _start(held: bytes) -> int:
    """Where an Event's body (its JSON) starts in what is held of it."""
    return _HEAD.size + _HEAD.unpack_from(held)[1]


def _involved(held: bytes) -> str:
    """The involvedObject.name of an Event as held."""
    return held[_HEAD.size : _start(held)].decode()


class KeysInOrder(Sequence[NsName]):
    """Keys in LIST order over each namespace's names in order (namespaces ordered by their
    "namespace/" prefix), a key tuple made only for the index a page looks at."""

    def __init__(self, parts: list[tuple[str, list[str]]]) -> None:
        self._parts = parts
        self._starts = list(accumulate((len(names) for _, names in parts), initial=0))

    def __len__(self) -> int:
        return self._starts[-1]

    @overload
    def __getitem__(self, i: int) -> NsName: ...
    @overload
    def __getitem__(self, i: slice) -> list[NsName]: ...
    def __getitem__(self, i: int | slice) -> NsName | list[NsName]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        part = bisect_right(self._starts, i) - 1
        namespace, names = self._parts[part]
        return namespace, names[i - self._starts[part]]


class EventStore(MutableMapping[NsName, Event]):
    def __init__(self, hot: int = DEFAULT_HOT) -> None:
        self.hot = hot
        # namespace -> name -> the Event as held (`_as_held`); no key tuple per Event
        self._held: dict[str, dict[str, bytes]] = {}
        self._decoded: OrderedDict[NsName, Event] = OrderedDict()  # LRU order
        # namespace -> involvedObject.name -> the names of the Events about it (a few for a
        # pod, thousands for a CloneSet that made thousands of pods)
        self._about: dict[str, dict[str, list[str]]] = {}
        # Each namespace's names in LIST order, kept while none of its Events comes or goes: a
        # client paging through 150,000 Events no longer sorts them for every page.
        self._listed: dict[str, list[str]] = {}
        self._newest = 0  # the greatest resourceVersion put (a start's watch window begins there)

    # --- the mapping ------------------------------------------------------------------------

    def __getitem__(self, key: NsName) -> Event:
        event = self._decoded.get(key)
        if event is not None:
            self._decoded.move_to_end(key)
            return event
        event = self._read(key)
        self._admit(key, event)
        return event

    def get(self, key: NsName, default: Event | None = None) -> Event | None:  # type: ignore[override]
        # Without Mapping.get's KeyError: most Events are new, so most lookups miss (the
        # read model asks before and after each fold), and the raise and catch cost ~10 µs.
        if key in self:
            return self[key]
        return default

    def __setitem__(self, key: NsName, event: Event) -> None:
        self._newest = max(self._newest, int(event.metadata.resource_version or 0))
        self._hold(key, last_written(event), event.involved_object.name or "", b"")
        self._decoded.pop(key, None)
        self._admit(key, event)

    def __delitem__(self, key: NsName) -> None:
        namespace, name = key
        held = self._held[namespace].pop(name)
        if not self._held[namespace]:
            del self._held[namespace]
        self._unindex(key, _involved(held))
        self._decoded.pop(key, None)
        self._listed.pop(namespace, None)

    def __iter__(self) -> Iterator[NsName]:
        for namespace, names in list(self._held.items()):
            for name in list(names):
                yield namespace, name

    def __len__(self) -> int:
        return sum(len(names) for names in self._held.values())

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, tuple) or len(key) != 2:
            return False
        names = self._held.get(key[0])
        return names is not None and key[1] in names

    def _hold(self, key: NsName, written: datetime | None, involved: str, body: bytes) -> None:
        """Hold an Event at `key` (`_as_held`), indexing the object it is about."""
        namespace, name = key
        names = self._held.setdefault(namespace, {})
        before = names.get(name)
        names[name] = _as_held(written, involved, body)
        if before is None:
            self._listed.pop(namespace, None)
        else:
            was = _involved(before)
            if was == involved:
                return
            self._unindex(key, was)
        self._about.setdefault(namespace, {}).setdefault(involved, []).append(name)

    def _unindex(self, key: NsName, involved: str) -> None:
        namespace, name = key
        about = self._about[namespace]
        about[involved].remove(name)
        if not about[involved]:
            del about[involved]
            if not about:
                del self._about[namespace]

    def items(self) -> Iterator[tuple[NsName, Event]]:  # type: ignore[override]
        """Every Event, decoded for reading; the hot set is left as it was."""
        for key in self:
            yield key, self._read(key)

    def values(self) -> Iterator[Event]:  # type: ignore[override]
        for _, event in self.items():
            yield event

    # --- without decoding -------------------------------------------------------------------

    def keys_of(self, namespace: str | None = None, *, involved: str | None = None) -> list[NsName]:
        """The keys of the Events (of `namespace`; about an object named `involved`), none
        decoded: a LIST's candidates."""
        spaces = list(self._held) if namespace is None else [namespace]
        if involved is None:
            return [(ns, name) for ns in spaces for name in self._held.get(ns, ())]
        about = ((ns, self._about.get(ns, {}).get(involved, ())) for ns in spaces)
        return [(ns, name) for ns, names in about for name in names]

    def listed(self, namespace: str | None = None) -> KeysInOrder:
        """The keys of the Events (of `namespace`) in a LIST's order, "namespace/name"; each
        namespace's order is kept until one of its Events comes or goes."""
        spaces = sorted(self._held, key=lambda ns: ns + "/") if namespace is None else [namespace]
        return KeysInOrder([(ns, self._names_listed(ns)) for ns in spaces if ns in self._held])

    def _names_listed(self, namespace: str) -> list[str]:
        found = self._listed.get(namespace)
        if found is None:
            found = self._listed[namespace] = sorted(self._held[namespace])
        return found

    def json(self, key: NsName) -> bytes:
        """The Event's Kubernetes JSON (what a LIST serves), without building its model."""
        namespace, name = key
        held = self._held[namespace][name]
        start = _start(held)
        if len(held) == start:  # the decoded one is newer: serialized once, kept
            raw = event_json(self._decoded[key])
            self._held[namespace][name] = held + raw
            return raw
        return unpack(held[start:])

    def written_before(self, cutoff: datetime) -> list[Event]:
        """The Events last written at or before `cutoff` (the TTL sweep's), decoded; the
        others are not."""
        before = _micros(cutoff)
        return [
            self._read((namespace, name))
            for namespace, names in list(self._held.items())
            for name, held in list(names.items())
            if NO_TIME < _HEAD.unpack_from(held)[0] <= before
        ]

    def put_json(
        self, key: NsName, raw: bytes, *, rv: int, written: datetime | None, involved: str
    ) -> None:
        """Hold an Event as its JSON (a snapshot row), undecoded; `involved` is its
        involvedObject.name."""
        self._newest = max(self._newest, rv)
        self._hold(key, written, involved, pack(raw))
        self._decoded.pop(key, None)

    def newest_resource_version(self) -> int:
        return self._newest

    def settle(self, key: NsName, raw: bytes) -> None:
        """`raw` is the JSON of the Event as it is now (a watch snapshot just taken of it):
        kept, so the Event leaves the hot set without being serialized again."""
        held = self._held.get(key[0], {}).get(key[1])
        if held is not None:
            self._held[key[0]][key[1]] = held[: _start(held)] + raw

    # --- the hot set ------------------------------------------------------------------------

    def _read(self, key: NsName) -> Event:
        event = self._decoded.get(key)
        if event is None:
            held = self._held[key[0]][key[1]]
            event = Event.model_validate_json(unpack(held[_start(held) :]))
        return event

    def _admit(self, key: NsName, event: Event) -> None:
        self._decoded[key] = event
        while len(self._decoded) > self.hot:
            (namespace, name), old = self._decoded.popitem(last=False)
            held = self._held.get(namespace, {}).get(name)
            if held is not None:
                start = _start(held)
                body = event_json(old) if len(held) == start else held[start:]
                self._held[namespace][name] = held[:start] + pack(body)
