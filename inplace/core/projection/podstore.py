"""Pods as a read model holds them: compact Kubernetes JSON, decoded on demand (issue 16).

A running pod decoded into pydantic models takes about 18 KB of heap; its JSON, the form GET,
LIST and watch serve and the projection stores, about 2 KB. A holder of 50,000 pods keeps the
JSON and decodes a pod when a role asks for it. The pods touched lately stay decoded (the
`hot` most recently used ones): the events of one resize fold into one object, and a pod
leaves the hot set serialized once, not once per event.

Beside each pod's JSON the store keeps the two facts readers ask of every pod without
wanting the rest: its resourceVersion (the fold's "applied already?" guard, the watch
window's start) and the node it is bound to (which kubelet process serves it).

Every change goes through `store[key] = pod` (the reducers return the object they changed):
a decoded pod changed in place and not put back keeps its change only while it stays hot.

What a pod leaving the hot set is written down as is the holder's `form`: by default the whole
pod, as GET serves it; a role that reads a few fields of most pods (the scheduler, quota)
keeps only those of them, smaller to hold and quicker to decode and write again. The fold
stays the same (the reducers change a `Pod`, whole or not), and so does every fact beside
the JSON.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator
from typing import TypeVar

from pydantic import BaseModel

from inplace.core.projection.entries import HeldAsEntries
from inplace.core.projection.recent import DEFAULT_HELD, RecentObjects, resize_in_flight
from schemas.k8s import Pod
from schemas.podview import PodResources, controller_kind

NsName = tuple[str, str]
View = TypeVar("View", bound=BaseModel)

DEFAULT_HOT = 2048


class _Entry:
    """One pod: its JSON (None while the decoded pod in the hot set is newer) and facts."""

    __slots__ = ("controller", "node", "raw", "rv")

    def __init__(self, raw: bytes | None, rv: int, node: str, controller: str | None) -> None:
        self.raw = raw
        self.rv = rv
        self.node = node
        self.controller = controller  # None: not known yet (a snapshot row), found on demand


def pod_json(pod: Pod) -> bytes:
    """A pod's Kubernetes JSON, in one pass (no intermediate dict)."""
    return pod.k8s_json()


PodForm = Callable[[Pod], bytes]
"""How a holder writes a pod down: its Kubernetes JSON, whole (`pod_json`) or of the fields
the holder reads; decoding it must give a `Pod` again."""


class PodStore(HeldAsEntries[NsName, Pod]):
    def __init__(
        self, hot: int = DEFAULT_HOT, held: int = DEFAULT_HELD, form: PodForm = pod_json
    ) -> None:
        self._entries: dict[NsName, _Entry] = {}
        self.form = form
        # The `hot` pods used last, and up to `held` more mid-resize (recent.py).
        self._decoded_pods: RecentObjects[NsName, Pod] = RecentObjects(hot, held, resize_in_flight)

    # --- the mapping ------------------------------------------------------------------------

    def __getitem__(self, key: NsName) -> Pod:
        pod = self._decoded_pods.touch(key)
        if pod is not None:
            return pod
        pod = self._decoded_pods.find(key)
        if pod is None:
            pod = Pod.model_validate_json(self._entries[key].raw or b"")
        self._admit(key, pod)
        return pod

    def get(self, key: NsName, default: Pod | None = None) -> Pod | None:  # type: ignore[override]
        if key in self._entries:
            return self[key]
        return default

    def __setitem__(self, key: NsName, pod: Pod) -> None:
        rv, node = int(pod.metadata.resource_version or 0), pod.spec.node_name or ""
        entry = self._entries.get(key)
        if entry is None:
            self._entries[key] = _Entry(None, rv, node, controller_kind(pod))
        else:
            entry.raw, entry.rv, entry.node = None, rv, node
        self._admit(key, pod)

    def __delitem__(self, key: NsName) -> None:
        del self._entries[key]
        self._decoded_pods.pop(key)

    def values(self) -> Iterator[Pod]:  # type: ignore[override]
        """Every pod, decoded for reading: a walk over all pods leaves the hot set as it was
        (a pod decoded here and changed in place keeps no change unless it is put back)."""
        for _, pod in self.items():
            yield pod

    def items(self) -> Iterator[tuple[NsName, Pod]]:  # type: ignore[override]
        for key, entry in list(self._entries.items()):
            hot = self._decoded(key)
            yield key, hot if hot is not None else Pod.model_validate_json(entry.raw or b"")

    def views(
        self,
        keys: Iterable[NsName] | None = None,
        view: type[View] = PodResources,  # type: ignore[assignment]
    ) -> Iterator[tuple[NsName, View | Pod]]:
        """Every pod's (or those of `keys`) fields `view` names (by default `PodResources`,
        read from its JSON without decoding the rest), or the decoded pod where the hot set
        holds one (it may be newer than the JSON; a view's fields are Pod's). For a walk over
        many pods (seeding a role's own state); the hot set is left as it was."""
        entries = self._entries
        chosen = list(entries.items()) if keys is None else [(k, entries[k]) for k in keys]
        for key, entry in chosen:
            hot = self._decoded(key)
            yield key, hot if hot is not None else view.model_validate_json(entry.raw or b"")

    # --- the stored form and the facts --------------------------------------------------------

    def put_json(self, key: NsName, raw: bytes, *, rv: int, node: str) -> None:
        """Hold a pod as its JSON (a snapshot row), undecoded."""
        self._decoded_pods.pop(key)
        self._entries[key] = _Entry(raw, rv, node, None)

    def take_newer(self, other: PodStore) -> list[NsName]:
        """Hold `other`'s pods (as their JSON and facts, undecoded) where they are newer than
        what this store holds, or unknown to it; the keys taken."""
        taken = []
        for key, theirs in other._entries.items():
            held = self._entries.get(key)
            if held is None or held.rv < theirs.rv:
                self._decoded_pods.pop(key)
                raw = other.json(key)
                self._entries[key] = _Entry(raw, theirs.rv, theirs.node, theirs.controller)
                taken.append(key)
        return taken

    def private(self, key: NsName) -> Pod | None:
        """A decoded copy of the pod that nobody else holds (a decision's input must not change
        under it while the fold goes on): decoded from its JSON, serialized first only if the
        hot pod changed since. Cheaper than a deep copy of the hot pod (~23 vs ~60 us), and the
        JSON stays current until the pod's next change, so later copies only decode."""
        raw = self.json(key)
        return Pod.model_validate_json(raw) if raw is not None else None

    def json(self, key: NsName) -> bytes | None:
        """The pod's JSON in the holder's form (as GET serves it, by default; None: no such
        pod). Serializes a changed hot pod once and keeps the result."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry.raw is None:
            decoded = self._decoded(key)
            assert decoded is not None  # no JSON: the decoded pod is newer, and held
            entry.raw = self.form(decoded)
        return entry.raw

    def settle(self, key: NsName, raw: bytes) -> None:
        """`raw` is the JSON of the pod as it is now (a watch snapshot just taken of it): keep
        it, so the pod leaves the hot set without being serialized again."""
        entry = self._entries.get(key)
        if entry is not None:
            entry.raw = raw

    def resource_version(self, key: NsName) -> int | None:
        entry = self._entries.get(key)
        return entry.rv if entry is not None else None

    def newest_resource_version(self) -> int:
        return max((e.rv for e in self._entries.values()), default=0)

    def node_of(self, key: NsName) -> str | None:
        """The node the pod is bound to ("" = unbound), or None for an unknown pod."""
        entry = self._entries.get(key)
        return entry.node if entry is not None else None

    def controller_of(self, key: NsName) -> str | None:
        """The kind of the pod's controlling owner ("" = none), or None for an unknown pod;
        decoded once per pod at most (owner references never change)."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry.controller is None:
            entry.controller = controller_kind(self[key])
        return entry.controller

    def keys_on(self, nodes: Collection[str]) -> list[NsName]:
        """The pods bound to any of `nodes`, undecoded."""
        return [key for key, entry in self._entries.items() if entry.node in nodes]

    def keys_in(self, namespace: str) -> list[NsName]:
        """The pods of `namespace`, undecoded."""
        return [key for key in self._entries if key[0] == namespace]

    # --- the hot set ----------------------------------------------------------------------------

    def _decoded(self, key: NsName) -> Pod | None:
        """The decoded pod, hot or held, without changing either's order."""
        return self._decoded_pods.find(key)

    def _admit(self, key: NsName, pod: Pod) -> None:
        for old_key, old in self._decoded_pods.put(key, pod):
            self._let_go(old_key, old)

    def _let_go(self, key: NsName, pod: Pod) -> None:
        """The pod leaves the decoded ones: serialized, if it changed since its JSON."""
        entry = self._entries.get(key)
        if entry is not None and entry.raw is None:
            entry.raw = self.form(pod)
