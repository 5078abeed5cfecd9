"""Write an event, then wait until this process's read model has applied it.

Every role that decides from a read model writes through this, so its next decision sees its
own last write (read-your-writes) instead of deciding twice from a stale view.
"""

from __future__ import annotations

import asyncio

from inplace.core.bus.podheaders import pod_headers
from inplace.core.bus.producer import EventProducer, Position
from inplace.core.observability.metrics import EVENTS_PRODUCED
from inplace.core.readmodel import ReadModel
from schemas.envelope import Cause, Envelope, EventPayload, UserInfo


class LogWriter:
    def __init__(self, producer: EventProducer, model: ReadModel, role: str) -> None:
        self.producer = producer
        self.model = model
        self.role = role

    async def write(
        self,
        payload: EventPayload,
        *,
        cause: Envelope | Cause | None = None,
        correlation_id: str | None = None,
        user: UserInfo | None = None,
        within: float = 30.0,
    ) -> Position:
        envelope = Envelope.wrap(
            payload, producer=self.role, cause=cause, correlation_id=correlation_id, user=user
        )
        position = await (await self._send(envelope))
        if position.topic in self.model.topics:  # a topic it follows (not e.g. k8s-events)
            await self.model.wait_for(position, within)
        return position

    async def write_all(
        self,
        payloads: list[EventPayload],
        *,
        cause: Envelope | Cause | None = None,
        within: float = 30.0,
    ) -> list[Position]:
        """Write events decided together in one go, in order, and wait once: for the last of
        them on each partition this model follows (a partition applies in order), instead of
        a log round trip per event."""
        sent = [
            await self._send(Envelope.wrap(p, producer=self.role, cause=cause)) for p in payloads
        ]
        positions = [await future for future in sent]
        last: dict[tuple[str, int], Position] = {}
        for position in positions:
            if position.topic in self.model.topics:
                last[(position.topic, position.partition)] = position
        for position in last.values():
            await self.model.wait_for(position, within)
        return positions

    async def _send(self, envelope: Envelope) -> asyncio.Future[Position]:
        """Queue one event with the headers readers skip by (podheaders.py), counted."""
        headers = pod_headers(envelope.payload, self.model.state.pods)
        future = await self.producer.send(envelope, headers=headers)
        EVENTS_PRODUCED.labels(self.role, envelope.type).inc()
        return future
