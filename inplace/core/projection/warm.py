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

from collections import OrderedDict
from typing import Generic, Protocol, TypeVar

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
    """At most `capacity` objects by key, the least recently remembered forgotten first."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._items: OrderedDict[NsName, T] = OrderedDict()
        self._capacity = max(1, capacity)

    def version(self, key: NsName) -> int:
        """The resourceVersion the remembered object carries; -1 (no row has it) if none."""
        obj = self._items.get(key)
        return -1 if obj is None else int(obj.metadata.resource_version or 0)

    def take(self, key: NsName) -> T:
        """The remembered object, handed over: it is the batch's to change now."""
        return self._items.pop(key)

    def remember(self, key: NsName, obj: T | None) -> None:
        """`obj` as this batch leaves it (None: it no longer exists)."""
        self._items.pop(key, None)
        if obj is None:
            return
        self._items[key] = obj
        if len(self._items) > self._capacity:
            self._items.popitem(last=False)
