"""Deleting a namespace deletes what is in it, as kube-apiserver's namespace controller does
before the namespace goes: CloneSets first (so no controller makes a replacement pod), then
pods (their kubelets release them and the nodes get the room back), quotas, limit ranges and
the namespace's Events. Until the namespace is gone, this replica refuses new content in it
with kube-apiserver's 403 ("… because it is being terminated"), Events excepted: one recorded
after the pass (a kubelet telling of a pod it stopped) stays, where kube's namespace controller
would pass again.

Done inside the DELETE, namespace last: an apiserver that dies half way leaves the namespace
and the rest of its content, and a second DELETE finishes. Another replica does not know the
namespace is terminating until it is gone, so it may still create in it meanwhile."""

from __future__ import annotations

from collections.abc import Iterator

from inplace.core.projection.podstore import NsName
from inplace.core.readmodel import ReadModel
from services.apiserver import errors
from services.apiserver.deletions import deletion
from services.apiserver.writer import Writer


def admit_content(model: ReadModel, writer: Writer, namespace: str, kind: str, name: str) -> None:
    """kube-apiserver's NamespaceLifecycle admission, for a create in `namespace`: a 404 when
    it does not exist, a 403 while this replica empties it (Events excepted: they may tell of
    the end)."""
    if model.get("namespaces", namespace) is None:
        raise errors.not_found("Namespace", namespace)
    if kind != "Event" and namespace in writer.terminating:
        resource = kind.lower() + "s"
        raise errors.forbidden(
            f'{resource} "{name}" is forbidden: unable to create new content in namespace '
            f"{namespace} because it is being terminated",
            kind=resource,
            name=name,
        )


# kube-apiserver's NamespaceLifecycle admission keeps these.
IMMORTAL = frozenset({"default", "kube-system", "kube-public"})


def refuse_deletion(namespace: str) -> None:
    if namespace in IMMORTAL:
        raise errors.forbidden(
            f'namespaces "{namespace}" is forbidden: this namespace may not be deleted',
            kind="namespaces",
            name=namespace,
        )


async def empty(model: ReadModel, writer: Writer, namespace: str) -> None:
    """Delete everything in `namespace` (above), holding new content off meanwhile: CHUNK
    deletions a write, in `contents` order (a log round trip per chunk, not per pod)."""
    writer.terminating.add(namespace)
    try:
        items = list(contents(model, namespace))
        for start in range(0, len(items), CHUNK):
            payloads = [
                deletion(collection, key, held)
                for collection, key in items[start : start + CHUNK]
                if (held := model.get(collection, key)) is not None  # not deleted meanwhile
            ]
            if payloads:
                await writer.commit_all(payloads)
    finally:
        writer.terminating.discard(namespace)


# Deleted in this order: CloneSets before their pods; Events last (deleting pods may record
# some).
ORDER = ("clonesets", "pods", "resourcequotas", "limitranges", "events")
CHUNK = 500


def contents(model: ReadModel, namespace: str) -> Iterator[tuple[str, NsName]]:
    """(collection, key) of each object in `namespace`, in deletion order."""
    for collection in ORDER:
        yield from ((collection, k) for k in sorted(model.objects(collection)) if k[0] == namespace)
