"""The key a namespaced object goes by: its partition key on the log, and its key in the maps
that key pods by a string (the kubelet's checkpoint and runtime, the scheduler's cache, the
load's tracker), so they agree. (Read models key objects by a `(namespace, name)` tuple.)

Interned: a role keeps each pod's key in several maps for as long as the pod lives, and a key
built anew each time would be a copy apiece (Python 3.11 frees interned strings no longer used).
"""

from __future__ import annotations

import sys
from typing import Protocol

__all__ = ["object_key", "pod_key"]


class _Names(Protocol):
    @property
    def namespace(self) -> str | None: ...

    @property
    def name(self) -> str | None: ...


class _Named(Protocol):
    @property
    def metadata(self) -> _Names: ...


def object_key(namespace: str | None, name: str | None) -> str:
    """`namespace/name`; a pod without a namespace is in `default`, as the apiserver files it."""
    return sys.intern(f"{namespace or 'default'}/{name}")


def pod_key(pod: _Named) -> str:
    """The key of a pod (or its view): `object_key` of its metadata."""
    return object_key(pod.metadata.namespace, pod.metadata.name)
