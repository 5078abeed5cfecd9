"""Deleting a namespace deletes what is in it, as kube-apiserver and its namespace controller
do: the namespace turns Terminating (a deletionTimestamp, phase Terminating: every apiserver
replica then refuses new content in it with kube-apiserver's 403, "… because it is being
terminated"), then its CloneSets go first (so no controller makes a replacement pod), then
pods (their kubelets release them and the nodes get the room back), quotas, limit ranges and
the namespace's Events, then the namespace.

Done inside the DELETE; a namespace left Terminating (its apiserver died half way) is finished
by any replica's sweep (`sweep_forever`), as kube's namespace controller would. An Event
recorded after the pass (a kubelet telling of a pod it stopped) stays."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from inplace.core.projection.podstore import NsName
from inplace.core.readmodel import ReadModel
from schemas import events as ev
from services.apiserver import errors
from services.apiserver.auth.identity import controller, set_current_user
from services.apiserver.deletions import deletion
from services.apiserver.writer import Writer


def terminating(held: dict[str, Any] | None) -> bool:
    return held is not None and held.get("status", {}).get("phase") == "Terminating"


def admit_content(model: ReadModel, writer: Writer, namespace: str, kind: str, name: str) -> None:
    """kube-apiserver's NamespaceLifecycle admission, for a create in `namespace`: a 404 when
    it does not exist, a 403 while it terminates (Events excepted: they may tell of the end)."""
    held = model.get("namespaces", namespace)
    if held is None:
        raise errors.not_found("Namespace", namespace)
    if kind != "Event" and (terminating(held) or namespace in writer.terminating):
        resource = kind.lower() + "s"
        raise errors.forbidden(
            f'{resource} "{name}" is forbidden: unable to create new content in namespace '
            f"{namespace} because it is being terminated",
            kind=resource,
            name=name,
        )


log = logging.getLogger(__name__)

# kube-apiserver's NamespaceLifecycle admission keeps these.
IMMORTAL = frozenset({"default", "kube-system", "kube-public"})


def refuse_deletion(namespace: str) -> None:
    if namespace in IMMORTAL:
        raise errors.forbidden(
            f'namespaces "{namespace}" is forbidden: this namespace may not be deleted',
            kind="namespaces",
            name=namespace,
        )


async def terminate(model: ReadModel, writer: Writer, namespace: str) -> dict[str, Any]:
    """Delete `namespace` and its content (above); the namespace as it was, Terminating."""
    writer.terminating.add(namespace)  # this replica's DELETE or sweep has it in hand
    try:
        if not terminating(model.get("namespaces", namespace)):
            await writer.commit(ev.NamespaceTerminating(namespace=namespace))
        final: dict[str, Any] = model.get("namespaces", namespace) or {}
        await _empty(model, writer, namespace)
        await writer.commit(ev.NamespaceDeleted(namespace=namespace))
        return final
    finally:
        writer.terminating.discard(namespace)


def left_terminating(
    namespaces: dict[str, Any], in_hand: set[str], now: datetime, grace: timedelta
) -> list[str]:
    """The namespaces Terminating for `grace` or longer that no DELETE of this replica has in
    hand: a DELETE on another replica finishes its own within seconds, so only one whose
    apiserver died is left that long (and two replicas seldom both finish one)."""
    return [
        name
        for name, held in namespaces.items()
        if terminating(held)
        and name not in in_hand
        and now - _parse_time(held["metadata"].get("deletionTimestamp")) >= grace
    ]


def _parse_time(value: str | None) -> datetime:
    if not value:
        return datetime.min.replace(tzinfo=UTC)
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


async def sweep_forever(model: ReadModel, writer: Writer, every: float) -> None:
    """Every `every` seconds, finish the namespaces left Terminating for at least as long
    (`left_terminating`); a failed pass is retried. Written as kube's namespace controller."""
    set_current_user(controller("namespace-controller"))
    while True:
        await asyncio.sleep(every)
        left = left_terminating(
            dict(model.objects("namespaces")),
            writer.terminating,
            datetime.now(UTC),
            timedelta(seconds=every),
        )
        try:
            for name in left:
                await terminate(model, writer, name)
        except Exception as exc:  # the log unreachable, a timeout: the next pass retries
            log.warning("finishing terminating namespaces failed: %s", exc)
            continue
        if left:
            log.info("finished deleting namespaces left terminating: %s", left)


async def _empty(model: ReadModel, writer: Writer, namespace: str) -> None:
    """Delete everything in `namespace`: CHUNK deletions a write, in `contents` order (a log
    round trip per chunk, not per pod)."""
    await model.events_ready.wait()  # the namespace's Events are deleted too
    items = list(contents(model, namespace))
    for start in range(0, len(items), CHUNK):
        payloads = [
            deletion(collection, key, held)
            for collection, key in items[start : start + CHUNK]
            if (held := model.get(collection, key)) is not None  # not deleted meanwhile
        ]
        if payloads:
            await writer.commit_all(payloads)


# Deleted in this order: CloneSets before their pods; Events last (deleting pods may record
# some).
ORDER = ("clonesets", "pods", "resourcequotas", "limitranges", "poddisruptionbudgets", "events")
CHUNK = 500


def contents(model: ReadModel, namespace: str) -> Iterator[tuple[str, NsName]]:
    """(collection, key) of each object in `namespace`, in deletion order."""
    for collection in ORDER:
        yield from ((collection, k) for k in sorted(model.objects(collection)) if k[0] == namespace)
