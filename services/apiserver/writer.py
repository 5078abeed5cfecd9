"""Writes: one event to the log, then wait until the read model has applied it."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Hashable

from inplace.core.bus.producer import Position
from inplace.core.logwriter import LogWriter
from inplace.core.projection.reducers import locate
from schemas.envelope import EventPayload
from services.apiserver import dryrun, errors
from services.apiserver.auth.identity import current_user


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

    async def commit_all(self, payloads: list[EventPayload]) -> None:
        """`commit` for many events decided together (a namespace's content deleted): one
        write, one wait for the last of each partition (LogWriter.write_all)."""
        if dryrun.active():
            for payload in payloads:
                await self.commit(payload)
            return
        try:
            await self.log.write_all(payloads, user=current_user())
        except TimeoutError:
            raise errors.timeout(
                "the writes are in the log but not yet visible; retry the read"
            ) from None
