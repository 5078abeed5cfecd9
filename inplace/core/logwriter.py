"""Write an event, then wait until this process's read model has applied it.

Every role that decides from a read model writes through this, so its next decision sees its
own last write (read-your-writes) instead of deciding twice from a stale view.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from prometheus_client import Counter

from inplace.core.bus.podheaders import pod_headers
from inplace.core.bus.producer import EventProducer, Position
from inplace.core.observability.metrics import EVENTS_PRODUCED, LOG_WRITE_SECONDS
from inplace.core.readmodel import ReadModel
from schemas.envelope import Cause, Envelope, EventPayload, UserInfo


@dataclass
class Queued:
    """Events handed to the producer (`LogWriter.queue`), not yet waited for."""

    sent: list[tuple[asyncio.Future[Position], bytes]] = field(default_factory=list)
    started: float = 0.0

    def __add__(self, other: Queued) -> Queued:
        if not self.sent:
            return other
        if not other.sent:
            return self
        return Queued([*self.sent, *other.sent], min(self.started, other.started))


class LogWriter:
    def __init__(
        self, producer: EventProducer, model: ReadModel, role: str, *, tell_own: bool = False
    ) -> None:
        self.producer = producer
        self.model = model
        self.role = role
        # `tell_own`: remember each write until the model applies it, so a listener can tell
        # this process's own writes from others' (`own`), and every one is asked about.
        self._tell_own = tell_own
        self._unapplied: set[Position] = set()
        self._prune_at = 4096
        self._write_seconds = LOG_WRITE_SECONDS.labels(role)
        # The produced counter of each event type, bound once: a labels() lookup per write was
        # 1.3% of the kubelet's CPU at 1,000 nodes.
        self._produced: dict[str, Counter] = {}

    def _remember(self, position: Position) -> None:
        if position in self._unapplied:  # at its ack, then at its settle
            return
        if len(self._unapplied) >= self._prune_at:
            # Ones the model passed over unapplied (a record its filter skipped: a node
            # handed to another process before its write came back) are never asked about.
            self._unapplied = {p for p in self._unapplied if not self.model.holds(p)}
            self._prune_at = max(4096, 2 * len(self._unapplied))
        self._unapplied.add(position)

    def own(self, position: Position) -> bool:
        """Is the record the model applies at `position` one this writer wrote? (Asked once
        per applied record, by a listener of a `tell_own` writer's model.)"""
        if position in self._unapplied:
            self._unapplied.remove(position)
            return True
        return False

    async def write(
        self,
        payload: EventPayload,
        *,
        cause: Envelope | Cause | None = None,
        correlation_id: str | None = None,
        user: UserInfo | None = None,
        within: float = 30.0,
    ) -> Position:
        queued = await self.queue([payload], cause=cause, correlation_id=correlation_id, user=user)
        return (await self.settle(queued, within))[0]

    async def write_all(
        self,
        payloads: list[EventPayload],
        *,
        cause: Envelope | Cause | None = None,
        within: float = 30.0,
        user: UserInfo | None = None,
    ) -> list[Position]:
        """Write events decided together in one go, in order, and wait once: for the last of
        them on each partition this model follows (a partition applies in order), instead of
        a log round trip per event."""
        return await self.settle(await self.queue(payloads, cause=cause, user=user), within)

    async def queue(
        self,
        payloads: list[EventPayload],
        *,
        cause: Envelope | Cause | None = None,
        correlation_id: str | None = None,
        user: UserInfo | None = None,
    ) -> Queued:
        """Hand events to the producer, in order, without waiting: a writer with more to
        write right after (the kubelet actuating the allocation it just decided) sends both
        in one request and waits once (`settle`). What is written later goes after them on
        each partition."""
        started = time.perf_counter()
        sent = [
            await self._send(
                Envelope.wrap(
                    p, producer=self.role, cause=cause, correlation_id=correlation_id, user=user
                )
            )
            for p in payloads
        ]
        return Queued(sent, started)

    async def settle(self, queued: Queued, within: float = 30.0) -> list[Position]:
        """Wait until the broker has `queued` and this process's read model applied it; its
        positions."""
        written = [(await future, encoded) for future, encoded in queued.sent]
        self._write_seconds.observe(time.perf_counter() - queued.started)
        await self._seen(written, within)
        return [position for position, _ in written]

    async def _seen(self, written: list[tuple[Position, bytes]], within: float) -> None:
        """Return once this process's read model holds `written` (read-your-writes): each
        applied at once from its own bytes when the model is at its offset (`apply_own`),
        else waited for, the last of each partition, as the log brings them back."""
        behind: dict[tuple[str, int], Position] = {}
        for position, encoded in written:
            if position.topic not in self.model.topics:  # not followed (e.g. k8s-events)
                continue
            where = (position.topic, position.partition)
            if self._tell_own and not self.model.holds(position):
                self._remember(position)  # if its ack's callback has not run yet
            if where in behind or not self.model.apply_own(position, encoded):
                behind[where] = position
        for position in behind.values():
            await self.model.wait_for(position, within)

    async def _send(self, envelope: Envelope) -> tuple[asyncio.Future[Position], bytes]:
        """Queue one event with the headers readers skip by (podheaders.py), counted."""
        headers = pod_headers(envelope.payload, self.model.state.pods)
        encoded = envelope.encode()
        future = await self.producer.send(envelope, headers=headers, encoded=encoded)
        future.add_done_callback(self._acked)
        produced = self._produced.get(envelope.type)
        if produced is None:
            produced = self._produced[envelope.type] = EVENTS_PRODUCED.labels(
                self.role, envelope.type
            )
        produced.inc()
        return future, encoded

    def _acked(self, future: asyncio.Future[Position]) -> None:
        """Remember the write as soon as the broker acks it, before its waiter resumes: a
        queued write the fetch brings back before `settle` is still told as this writer's
        (`own`). Its error is taken here too, so a write whose wait was dropped (a failed
        step) is not reported as a never-retrieved exception; the waiter still gets it."""
        if future.cancelled() or future.exception() is not None:
            return
        position = future.result()
        if (
            self._tell_own
            and position.topic in self.model.topics
            and not self.model.holds(position)
        ):
            self._remember(position)
