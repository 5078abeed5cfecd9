"""LIST pages (`limit` and `continue`), as kube-apiserver serves them: at most `limit` items in
key order, and while more remain an opaque `continue` token naming the list's resourceVersion
and the last key served; the next page starts after that key. kubectl (`--chunk-size`, 500)
and client-go's pager ask for pages; a page decodes only the objects it looks at.

Later pages are read from the objects as they are now, not from a snapshot at the first
page's resourceVersion (kube-apiserver reads etcd at it): a client that watches from that
resourceVersion afterwards (an informer) gets every change since, so it converges alike.
"""

from __future__ import annotations

import base64
import binascii
import json
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, overload

from inplace.core.projection.entries import list_key
from services.apiserver import errors

Obj = dict[str, Any]
_VERSION = "meta.k8s.io/v1"


def key_of(obj: Obj) -> str:
    """An object's list key: `namespace/name`, or its name when cluster-scoped."""
    meta = obj.get("metadata") or {}
    namespace, name = meta.get("namespace"), meta.get("name") or ""
    return f"{namespace}/{name}" if namespace else name


class JoinedKeys(Sequence[str]):
    """The list keys of (namespace, name) pairs already in their order, each joined only when
    a page looks at it (a page bisects to its start: a few dozen of 150,000)."""

    def __init__(self, pairs: Sequence[tuple[str, str]]) -> None:
        self._pairs = pairs

    def __len__(self) -> int:
        return len(self._pairs)

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[str]: ...
    def __getitem__(self, i: int | slice) -> str | Sequence[str]:
        if isinstance(i, slice):
            return [list_key(pair) for pair in self._pairs[i]]
        return list_key(self._pairs[i])


@dataclass(frozen=True)
class Listing:
    """A LIST's candidates: their keys in order, and each object fetched when looked at."""

    keys: Sequence[str]
    fetch: Callable[[int], Obj]

    @classmethod
    def of(cls, objects: Sequence[Obj]) -> Listing:
        keyed = sorted(((key_of(o), o) for o in objects), key=lambda pair: pair[0])
        return cls([k for k, _ in keyed], lambda i: keyed[i][1])

    def all(self) -> list[Obj]:
        return [self.fetch(i) for i in range(len(self.keys))]


@dataclass(frozen=True)
class Page:
    items: list[Obj]
    last: str | None  # the last key looked at, when keys remain after it
    remaining: int  # keys after it


def page(listing: Listing, match: Callable[[Obj], bool], limit: int | None, after: str) -> Page:
    """Up to `limit` matching objects with keys after `after` (all with no limit). A page may
    come back short with a token: the keys left may not match (as kube-apiserver's does)."""
    keys, items = listing.keys, []
    i = bisect_right(keys, after) if after else 0
    while i < len(keys) and (limit is None or len(items) < limit):
        obj = listing.fetch(i)
        i += 1
        if match(obj):
            items.append(obj)
    more = i < len(keys)
    return Page(items, keys[i - 1] if more else None, len(keys) - i if more else 0)


def continue_token(resource_version: str, last: str) -> str:
    text = json.dumps({"v": _VERSION, "rv": int(resource_version), "start": last + "\x00"})
    return base64.urlsafe_b64encode(text.encode()).decode()


def parse_continue(token: str) -> tuple[str, str]:
    """(resourceVersion, the key to start after) of a token; a 400 for a bad one."""
    try:
        decoded = json.loads(base64.urlsafe_b64decode(token.encode()))
        if decoded.get("v") != _VERSION:
            raise ValueError(f"unsupported version {decoded.get('v')!r}")
        rv, start = int(decoded["rv"]), str(decoded["start"])
    except (ValueError, KeyError, TypeError, AttributeError, binascii.Error) as exc:
        raise errors.bad_request(f"invalid continue token: {exc}") from None
    return str(rv), start.removesuffix("\x00")
