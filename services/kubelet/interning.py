"""One held object per distinct value, for what a kubelet keeps per pod for as long as it runs.

Pods of one shape (a workload's replicas) have equal requests and equal CRI values; holding
one immutable object for all of them instead of one each is most of a node's memory for those
fields at 50,000 pods. The values must be read-only: callers never write into what they get.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class InternTable(Generic[K, V]):
    """Key → the first value held for it. Bounded: past `limit` keys, it starts again (a
    value held before stays valid, it is only no longer shared with newcomers)."""

    __slots__ = ("_held", "_limit")

    def __init__(self, limit: int = 4096) -> None:
        self._held: dict[K, V] = {}
        self._limit = limit

    def held(self, key: K, value: V) -> V:
        """The value held for `key`, or `value`, now held for it."""
        found = self._held.get(key)
        if found is not None:
            return found
        if len(self._held) >= self._limit:
            self._held.clear()
        self._held[key] = value
        return value
