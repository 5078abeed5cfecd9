"""Decoded objects kept for reuse: the most recently used ones, and those mid-resize.

A holder of many objects keeps them in a compact stored form (JSON, a row) and decodes the
ones it works on. The `capacity` used last stay decoded. One that leaves them while `holds`
says its next change is already on its way (a pod mid-resize: its Allocated, its Actuated)
is held decoded beyond them, up to `held` of them, oldest let go first: under a load that
runs ahead of the kubelet a resize's steps reach a role seconds apart, long enough for
thousands of other objects to pass through the recent ones, and each step then decoded the
object again and serialized it again when it left (~45% of the scheduler's and quota's CPU
at 1,000 nodes / 50,000 pods; the projector's reads of rows it had just written).

`PodStore` and the projector's `Warm` both keep their decoded objects here.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from schemas.k8s import Pod

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")

# Beyond the recent ones, at most ~18 KB each (a decoded pod); transient: a held object goes
# back to the recent ones at its next step.
DEFAULT_HELD = 4096


def resize_in_flight(pod: Pod) -> bool:
    """A resize asked for and not yet allocated, or allocated and not yet actuated: its next
    step is on its way to every role that folds it."""
    status = pod.status
    return status is not None and status.resize in ("Proposed", "InProgress")


class RecentObjects(Generic[K, T]):
    def __init__(
        self, capacity: int, held: int = 0, holds: Callable[[T], bool] | None = None
    ) -> None:
        self._recent: OrderedDict[K, T] = OrderedDict()
        self._capacity = max(1, capacity)
        self._held: OrderedDict[K, T] = OrderedDict()
        self._held_capacity = held if holds is not None else 0
        self._holds = holds

    def touch(self, key: K) -> T | None:
        """The object if it is one of the recent ones, now the most recent of them (the hot
        path: no admission, nothing let go)."""
        obj = self._recent.get(key)
        if obj is not None:
            self._recent.move_to_end(key)
        return obj

    def find(self, key: K) -> T | None:
        """The object, recent or held, leaving both orders as they are."""
        obj = self._recent.get(key)
        return obj if obj is not None else self._held.get(key)

    def pop(self, key: K) -> T | None:
        """Forget the object (recent or held); it, if there was one."""
        obj = self._recent.pop(key, None)
        held = self._held.pop(key, None)
        return obj if obj is not None else held

    def put(self, key: K, obj: T) -> list[tuple[K, T]]:
        """`obj` as the most recent; the objects this lets go (for their owner to serialize
        or drop), oldest first."""
        recent = self._recent
        recent[key] = obj
        recent.move_to_end(key)
        self._held.pop(key, None)
        gone: list[tuple[K, T]] = []
        while len(recent) > self._capacity:
            old_key, old = recent.popitem(last=False)
            if self._held_capacity > 0 and self._holds is not None and self._holds(old):
                self._held[old_key] = old
                if len(self._held) <= self._held_capacity:
                    continue
                old_key, old = self._held.popitem(last=False)
            gone.append((old_key, old))
        return gone
