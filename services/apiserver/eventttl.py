"""kube-apiserver's `--event-ttl`: an Event is deleted this long after it was last written
(etcd keeps each Event under a lease renewed by every write), so Events of pods long gone do
not pile up in every holder of the log's state.

The apiserver sweeps its read model now and then and writes a KubeEventDeleted for each
expired Event, naming the version it expires: an Event recorded again before the deletion
lands stays (the fold compares), so replicas that sweep the same Event do no harm.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Iterator
from datetime import UTC, datetime, timedelta

from schemas import events as ev
from schemas.envelope import EventPayload
from schemas.k8s import Event
from schemas.kubeevents import last_written

CHUNK = 500  # deletions a write, as a namespace's deletion writes them
log = logging.getLogger(__name__)


def expired(
    events: Iterable[Event], now: datetime, ttl: timedelta
) -> Iterator[ev.KubeEventDeleted]:
    """The deletions of the Events last written `ttl` or longer before `now`."""
    for event in events:
        written = last_written(event)
        if written is not None and now - written >= ttl:
            yield ev.KubeEventDeleted(event=event, expires_version=event.metadata.resource_version)


async def sweep_forever(
    written_before: Callable[[datetime], Iterable[Event]],
    write: Callable[[list[EventPayload]], Awaitable[None]],
    ttl: timedelta,
    every: float,
) -> None:
    """Every `every` seconds, write the deletions of the expired Events (`written_before`:
    those last written at or before a time, EventStore.written_before, which decodes only
    them), CHUNK a write; a failed write is logged and the next sweep tries again."""
    while True:
        await asyncio.sleep(every)
        now = datetime.now(UTC)
        deletions: list[EventPayload] = list(expired(written_before(now - ttl), now, ttl))
        try:
            for start in range(0, len(deletions), CHUNK):
                await write(deletions[start : start + CHUNK])
        except Exception as exc:  # the log unreachable, a timeout: the next sweep retries
            log.warning("expiring %d Events failed: %s", len(deletions), exc)
            continue
        if deletions:
            log.info("expired %d Events last written %s or longer ago", len(deletions), ttl)
