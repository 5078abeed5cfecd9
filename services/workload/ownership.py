"""Which pods a CloneSet controls, kept as the log is folded; which CloneSets this process
decides about.

The controller follows every pod event in the cluster, but decides only about pods a CloneSet
controls. Without this index each pod event woke the controller, which then scanned every pod
(orphans) and every pod of each CloneSet's namespace: O(events x pods), a third of a core
under a resize load that had no CloneSet at all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from inplace.core.bus.partitioning import partition_of
from schemas.k8s import OwnerReference, Pod
from schemas.keys import object_key
from schemas.workload import KIND

NsName = tuple[str, str]


def decides(namespace: str, name: str, partitions: set[int] | None, count: int) -> bool:
    """Whether this process decides about CloneSet `namespace/name`: the `workloads`
    partition its events are keyed to is one the consumer group gave this process
    (`partitions` None: no group, one process decides about every CloneSet)."""
    if partitions is None:
        return True
    return count > 0 and partition_of(object_key(namespace, name), count) in partitions


def controlled(controller: str | None) -> bool:
    """Whether a pod record's `controller` header (podheaders.py) may be a CloneSet's pod:
    the kind, or no header at all (a writer that did not know: decoding is always safe)."""
    return controller is None or controller == KIND


def controller_ref(pod: Pod) -> OwnerReference | None:
    """The reference to the CloneSet that controls `pod`, if one does."""
    for ref in pod.metadata.owner_references or []:
        if ref.kind == KIND and ref.controller:
            return ref
    return None


def controller_uid(pod: Pod) -> str | None:
    """The uid of the CloneSet that controls `pod`, if one does."""
    ref = controller_ref(pod)
    return ref.uid if ref is not None else None


class OwnedPods:
    def __init__(self) -> None:
        self._owner: dict[NsName, tuple[str, str]] = {}  # pod → its CloneSet's (uid, name)

    def observe(self, key: NsName, pod: Pod | None) -> bool:
        """Record `pod` as it is now (None: deleted). True when a CloneSet controls or
        controlled it, i.e. when the controller has something to look at."""
        ref = controller_ref(pod) if pod is not None else None
        was = self._owner.pop(key, None)
        if ref is not None:
            self._owner[key] = (ref.uid, ref.name)
        return ref is not None or was is not None

    def in_namespace(self, namespace: str) -> Iterator[NsName]:
        return (key for key in self._owner if key[0] == namespace)

    def orphans(
        self, live_uids: set[str | None], mine: Callable[[str, str], bool] = lambda ns, n: True
    ) -> list[NsName]:
        """Pods whose controlling CloneSet is gone, among those of the CloneSets (namespace,
        name) `mine` says this process decides about."""
        return sorted(
            key
            for key, (uid, owner) in self._owner.items()
            if uid not in live_uids and mine(key[0], owner)
        )

    def __len__(self) -> int:
        return len(self._owner)
