"""Writes: one event to the log, then wait until the read model has applied it."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable, Hashable

from inplace.core.bus.producer import Position
from inplace.core.logwriter import LogWriter
from inplace.core.projection.reducers import locate
from schemas.envelope import EventPayload
from services.apiserver import dryrun, errors
from services.apiserver.auth.identity import current_user

# How many times an update is decided again after another replica's write to its object came
# first (kube's EvictionsRetry has 20 steps; its GuaranteedUpdate retries until its deadline).
UPDATE_ATTEMPTS = 20


class Writer:
    def __init__(self, log: LogWriter) -> None:
        self.log = log
        # One write at a time per object in this replica: check-then-write stays atomic.
        self._locks: defaultdict[Hashable, asyncio.Lock] = defaultdict(asyncio.Lock)
        # Namespaces this replica is emptying before it deletes them (namespaces.py).
        self.terminating: set[str] = set()

    def lock(self, key: Hashable) -> asyncio.Lock:
        return self._locks[key]

    async def commit(
        self, payload: EventPayload, correlation_id: str | None = None
    ) -> Position | None:
        """The event on the log, applied by this replica's read model; in a dry run nothing is
        written (None) and the handlers read what it would have made (`dryrun.result`)."""
        if dryrun.active():
            collection, key = locate(payload)
            dryrun.fold(payload, self.log.model.get(collection, key), current_user())
            return None
        try:
            return await self.log.write(payload, correlation_id=correlation_id, user=current_user())
        except TimeoutError:
            raise errors.timeout(
                "the write is in the log but not yet visible; retry the read"
            ) from None

    def refused(self, positions: list[Position]) -> bool:
        """Was any of these writes folded to nothing (its precondition: another replica's
        write to its object came first)? Asked once this replica has applied them."""
        return any(self.log.model.refused(position) for position in positions)

    async def update(
        self,
        decide: Callable[[], EventPayload | None],
        kind: str,
        correlation_id: str | None = None,
    ) -> Position | None:
        """An update decided from the object as this replica holds it (`decide` returns it
        with its `precondition`, the version it read; None: nothing to write), written on the
        condition that the object is still that version. When another replica's write came
        first the log folds it to nothing, and it is decided again from the object as it is
        then: kube-apiserver's GuaranteedUpdate, a patch applied to the new version, a stale
        resourceVersion the request names a 409 (`decide` raises it as it does the first
        time). A 409 too once UPDATE_ATTEMPTS writes all lost."""
        name = ""
        for _ in range(UPDATE_ATTEMPTS):
            payload = decide()
            if payload is None:
                return None
            position = await self.commit(payload, correlation_id)
            if position is None or not self.refused([position]):
                return position
            _, key = locate(payload)
            name = key[1] if isinstance(key, tuple) else key
        raise errors.stale(kind, name)

    async def commit_all(self, payloads: list[EventPayload]) -> list[Position]:
        """`commit` for many events decided together (a namespace's content deleted): one
        write, one wait for the last of each partition (LogWriter.write_all). Their
        positions (none in a dry run)."""
        if dryrun.active():
            for payload in payloads:
                await self.commit(payload)
            return []
        try:
            return await self.log.write_all(payloads, user=current_user())
        except TimeoutError:
            raise errors.timeout(
                "the writes are in the log but not yet visible; retry the read"
            ) from None
