"""Which pods a CloneSet controls, kept as the log is folded.

The controller follows every pod event in the cluster, but decides only about pods a CloneSet
controls. Without this index each pod event woke the controller, which then scanned every pod
(orphans) and every pod of each CloneSet's namespace: O(events x pods), a third of a core
under a resize load that had no CloneSet at all.
"""

from __future__ import annotations

from collections.abc import Iterator

from schemas.k8s import Pod
from schemas.workload import KIND

NsName = tuple[str, str]


def controlled(controller: str | None) -> bool:
    """Whether a pod record's `controller` header (podheaders.py) may be a CloneSet's pod:
    the kind, or no header at all (a writer that did not know: decoding is always safe)."""
    return controller is None or controller == KIND


def controller_uid(pod: Pod) -> str | None:
    """The uid of the CloneSet that controls `pod`, if one does."""
    for ref in pod.metadata.owner_references or []:
        if ref.kind == KIND and ref.controller:
            return ref.uid
    return None


class OwnedPods:
    def __init__(self) -> None:
        self._owner: dict[NsName, str] = {}

    def observe(self, key: NsName, pod: Pod | None) -> bool:
        """Record `pod` as it is now (None: deleted). True when a CloneSet controls or
        controlled it, i.e. when the controller has something to look at."""
        owner = controller_uid(pod) if pod is not None else None
        was = self._owner.pop(key, None)
        if owner is not None:
            self._owner[key] = owner
        return owner is not None or was is not None

    def in_namespace(self, namespace: str) -> Iterator[NsName]:
        return (key for key in self._owner if key[0] == namespace)

    def orphans(self, live_uids: set[str | None]) -> list[NsName]:
        """Pods whose controlling CloneSet is gone."""
        return sorted(key for key, uid in self._owner.items() if uid not in live_uids)

    def __len__(self) -> int:
        return len(self._owner)
