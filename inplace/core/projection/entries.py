"""What the stores that hold objects as JSON share: the key a LIST orders them by, and (PodStore)
keys that are their entries' (an object decoded or not is there all the same)."""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import Any, TypeVar

Key = TypeVar("Key")
Obj = TypeVar("Obj")


def list_key(key: tuple[str, str]) -> str:
    """The key a LIST orders and pages namespaced objects by: "namespace/name" (etcd's)."""
    return f"{key[0]}/{key[1]}"


class HeldAsEntries(MutableMapping[Key, Obj]):
    """A mapping whose keys are those of `_entries` (one per object held, decoded or not)."""

    _entries: dict[Key, Any]

    def __iter__(self) -> Iterator[Key]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries
