"""The objects the projector wrote lately, reused by the next batch that touches them.

A batch reads the rows of the objects it touches, decodes them, folds its events into them
and writes them back. The events of one resize arrive over a few batches, so most of what a
batch reads is what the one before it wrote. A remembered object stands for its row while
the row's resourceVersion is the one the object carries: a resourceVersion is a log
position, and one fold of the log up to it gives one object. Anything else misses and is
read again: a batch whose transaction failed (its objects are ahead of their rows), a row
another member of the group wrote after a rebalance, an object forgotten for room.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

from inplace.core.projection.recent import RecentObjects

NsName = tuple[str, str]
# A few batches' worth (the events of one resize span a few); decoded objects kept longer
# are walked by the cyclic GC for nothing (4,096 pods and Events: the projector's RSS 177 MB,
# 95 MB with 512 under the paced default-shape load).
DEFAULT_CAPACITY = 512


class _Meta(Protocol):
    resource_version: str | None


class _Versioned(Protocol):
    @property
    def metadata(self) -> _Meta: ...


T = TypeVar("T", bound=_Versioned)


class Warm(Generic[T]):
    """At most `capacity` objects by key, the least recently remembered forgotten first;
    beyond them up to `held` more while `holds` says their next change is on its way (a pod
    mid-resize, as PodStore holds one: recent.py)."""

    def __init__(
        self,
        capacity: int = DEFAULT_CAPACITY,
        held: int = 0,
        holds: Callable[[T], bool] | None = None,
    ) -> None:
        self._items: RecentObjects[NsName, T] = RecentObjects(capacity, held, holds)

    def version(self, key: NsName) -> int:
        """The resourceVersion the remembered object carries; -1 (no row has it) if none."""
        obj = self._items.find(key)
        return -1 if obj is None else int(obj.metadata.resource_version or 0)

    def take(self, key: NsName) -> T:
        """The remembered object, handed over: it is the batch's to change now."""
        obj = self._items.pop(key)
        assert obj is not None  # asked only for a key whose version matched its row
        return obj

    def remember(self, key: NsName, obj: T | None) -> None:
        """`obj` as this batch leaves it (None: it no longer exists)."""
        self._items.pop(key)
        if obj is not None:
            self._items.put(key, obj)  # what it lets go is dropped: the rows have it
