"""Replaying the log: rebuild projections, one pod's timeline, state as of a position."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import asyncpg
from aiokafka import TopicPartition

from inplace.core.bus.consumer import Batch, LogReader, Record
from inplace.core.bus.partitioning import partition_of
from inplace.core.bus.producer import Position
from inplace.core.projection.state import ClusterState
from inplace.core.projection.store import (
    CHECKSUM_TABLES,
    ProjectionStore,
    combine_checksums,
    dead_letter_rows,
    history_rows,
)
from inplace.core.store.migrations import drop_schema, migrate
from schemas import events as ev
from schemas.events import EVENT_TOPICS, PODS
from schemas.keys import object_key

# pod history rows per COPY: big enough to amortise a round trip, small enough that Postgres
# starts working early and the rows held in memory stay few.
COPY_ROWS = 5_000


@dataclass
class RebuildReport:
    events: int = 0
    seconds: float = 0.0
    live_checksum: str | None = None
    rebuilt_checksum: str = ""
    offsets: dict[TopicPartition, int] = field(default_factory=dict)
    replaced: bool = False

    @property
    def events_per_second(self) -> float:
        return self.events / self.seconds if self.seconds else 0.0


async def _live_snapshot(
    conn: asyncpg.Connection, live: ProjectionStore
) -> tuple[dict[TopicPartition, int], str] | None:
    """The live projection's offsets and checksum, read in one consistent snapshot."""
    if not await live.exists(conn):
        return None
    async with conn.transaction(isolation="repeatable_read", readonly=True):
        return await live.offsets(conn), await live.checksum(conn)


async def rebuild(
    dsn: str,
    bootstrap: str,
    *,
    live_schema: str = "projection",
    shadow_schema: str = "projection_rebuild",
    replace: bool = False,
    consumer: str = "projector",
    max_rounds: int = 20,
    topic_prefix: str = "",
) -> RebuildReport:
    """Replay the log from offset 0 into `shadow_schema` up to exactly the live projection's
    offsets, and checksum both. With `replace`, swap the rebuilt schema in (under a lock on the
    live offsets, catching up again if the live projector moved meanwhile).

    The shadow schema is ours alone, so none of the live projector's per-batch machinery is
    needed: the whole log folds in memory, pod history streams out with COPY while the next
    polls are decoded, and each object is written once per round (with COPY) at its end."""
    if shadow_schema == live_schema:
        raise ValueError("the rebuild schema must differ from the live projection's schema")
    report = RebuildReport()
    live = ProjectionStore(live_schema, consumer)
    shadow = ProjectionStore(shadow_schema, consumer)
    started = time.perf_counter()
    conn = await asyncpg.connect(dsn)
    pipe = _CopyPipeline(conn, shadow)
    # Every poll's decoded envelopes survive long enough to be promoted, and each promotion
    # triggered full collections walking the whole folded state: half the rebuild's CPU. The
    # fold makes almost no reference cycles (a few hundred objects per 57k events), so the
    # cyclic collector pauses for the rebuild; reference counting still frees the rest.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        await drop_schema(conn, shadow_schema)
        await migrate(conn, shadow_schema)
        async with LogReader(bootstrap, role="rebuild") as reader:
            tps = await reader.partitions([topic_prefix + t for t in EVENT_TOPICS])
            done: dict[TopicPartition, int] = {}
            next_offsets: dict[TopicPartition, int] = {}
            # Each record's history row is built before it is folded, and nothing else reads
            # it afterwards: the fold may keep its payload.
            state, fresh = ClusterState(adopt_payloads=True), True
            for _ in range(max_rounds):
                snapshot = await _live_snapshot(conn, live)
                if snapshot is None:  # nothing projected yet: rebuild the whole log
                    target, report.live_checksum = await reader.end_offsets(tps), None
                else:
                    stored, report.live_checksum = snapshot
                    target = {tp: stored.get(tp, 0) for tp in tps}
                async for batch in reader.read(done, target):
                    pipe.add(batch)
                    for record in batch.records:
                        state.apply(record)
                    next_offsets.update(batch.next_offsets)
                    report.events += len(batch.records) + len(batch.malformed)
                    if pipe.pending >= COPY_ROWS:
                        await pipe.send()
                    # A poll already fetched comes back without suspending: yield anyway, so
                    # the loop flushes the COPY in flight to Postgres between polls.
                    await asyncio.sleep(0)
                await pipe.send()
                await pipe.wait()
                report.rebuilt_checksum = await _write_objects_and_checksum(
                    dsn, conn, shadow, state, next_offsets, fresh=fresh
                )
                fresh = False
                done = dict(target)
                report.offsets = target
                if not replace or snapshot is None:
                    break
                if await _swap(conn, live, shadow, target):
                    report.replaced = True
                    break
        if replace and snapshot is None:
            await drop_schema(conn, live_schema)
            await conn.execute(f"ALTER SCHEMA {shadow_schema} RENAME TO {live_schema}")
            report.replaced = True
    finally:
        await pipe.close()
        await conn.close()
        if gc_was_enabled:
            gc.enable()
    report.seconds = time.perf_counter() - started
    return report


# Complete once the last history COPY is done, before the round's objects are written.
_LOG_TABLES = ("pod_history", "dead_letters")


async def _write_objects_and_checksum(
    dsn: str,
    conn: asyncpg.Connection,
    shadow: ProjectionStore,
    state: ClusterState,
    next_offsets: dict[TopicPartition, int],
    *,
    fresh: bool,
) -> str:
    """Write the round's objects and offsets, and return the shadow schema's checksum. The
    history checksum (the largest table) runs on a second connection meanwhile: two Postgres
    backends on two cores, while this process mostly waits."""
    side = await asyncpg.connect(dsn)
    logged = asyncio.create_task(shadow.table_checksums(side, _LOG_TABLES))
    try:
        async with conn.transaction():
            await shadow.copy_state(conn, state, fresh=fresh)
            await shadow.save_offsets(conn, next_offsets)
        others = [t for t in CHECKSUM_TABLES if t not in _LOG_TABLES]
        sums = await shadow.table_checksums(conn, others)
        sums.update(await logged)
    finally:
        if not logged.done():
            logged.cancel()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await logged
        await side.close()
    return combine_checksums(sums)


class _CopyPipeline:
    """Pod history and dead letters, COPYed into the shadow schema with at most one COPY in
    flight: Postgres parses and indexes one slice while this process decodes and folds the
    next polls (on 2 cores, the two overlap instead of taking turns)."""

    def __init__(self, conn: asyncpg.Connection, shadow: ProjectionStore) -> None:
        self._conn = conn
        self._shadow = shadow
        self._history: list[tuple[Any, ...]] = []
        self._dead: list[tuple[Any, ...]] = []
        self._inflight: asyncio.Task[None] | None = None

    @property
    def pending(self) -> int:
        return len(self._history) + len(self._dead)

    def add(self, batch: Batch) -> None:
        # Rows are built now, so the batch's records can go as soon as they are folded.
        self._history.extend(history_rows(batch))
        self._dead.extend(dead_letter_rows(batch))

    async def send(self) -> None:
        """Start copying what is pending (after the COPY in flight: one connection)."""
        await self.wait()
        if not self.pending:
            return
        history, dead, self._history, self._dead = self._history, self._dead, [], []
        self._inflight = asyncio.create_task(self._copy(history, dead))

    async def _copy(self, history: list[tuple[Any, ...]], dead: list[tuple[Any, ...]]) -> None:
        await self._shadow.copy_history(self._conn, history)
        await self._shadow.copy_dead_letters(self._conn, dead)

    async def wait(self) -> None:
        if self._inflight is not None:
            task, self._inflight = self._inflight, None
            await task

    async def close(self) -> None:
        """On the way out after an error: stop a COPY in flight before the connection closes."""
        if self._inflight is not None:
            self._inflight.cancel()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await self._inflight
            self._inflight = None


async def _swap(
    conn: asyncpg.Connection,
    live: ProjectionStore,
    shadow: ProjectionStore,
    expected: dict[TopicPartition, int],
) -> bool:
    async with conn.transaction():
        # EXCLUSIVE blocks the projector's SELECT … FOR UPDATE on its offsets until we commit.
        await conn.execute(f"LOCK TABLE {live.schema}.consumer_offsets IN EXCLUSIVE MODE")
        now = await live.offsets(conn)
        if {tp: now.get(tp, 0) for tp in expected} != expected:
            return False  # the live projector moved on; catch up and try again
        await drop_schema(conn, live.schema)
        await conn.execute(f"ALTER SCHEMA {shadow.schema} RENAME TO {live.schema}")
    return True


# --- one pod's history ----------------------------------------------------------------------


@dataclass(frozen=True)
class HistoryEntry:
    record: Record
    since_previous: float | None  # seconds since the pod's previous event
    # Folded to nothing: an update decided from a version of the pod that another write had
    # replaced by the time it reached the log (ev.Conditional).
    refused: bool = False


async def key_history(bootstrap: str, topic: str, key: str, topic_prefix: str = "") -> list[Record]:
    """Every event of one key (a pod's `namespace/name`, a node's name) in log order: only
    the partition the key hashes to is read."""
    found: list[Record] = []
    async with LogReader(bootstrap, role="history") as reader:
        tps = await reader.partitions([topic_prefix + topic])
        tp = TopicPartition(topic_prefix + topic, partition_of(key, len(tps)))
        end = await reader.end_offsets([tp])
        async for batch in reader.read({tp: 0}, end):
            found.extend(r for r in batch.records if r.envelope.key == key)
    return found


async def pods_on_node(bootstrap: str, node: str, topic_prefix: str = "") -> list[Record]:
    """Pod events that concern `node`: evictions from it, resize decisions it made (Deferred /
    Infeasible with their inputs) and its allocations. Reads the whole `pods` topic."""
    found: list[Record] = []
    async with LogReader(bootstrap, role="history") as reader:
        tps = await reader.partitions([topic_prefix + PODS])
        end = await reader.end_offsets(tps)
        async for batch in reader.read(dict.fromkeys(tps, 0), end):
            found.extend(r for r in batch.records if _concerns(r, node))
    found.sort(key=lambda r: r.envelope.time)
    return found


def _concerns(record: Record, node: str) -> bool:
    p = record.envelope.payload
    if isinstance(p, ev.PodEvicted | ev.Allocated):
        return p.node_name == node
    return (
        isinstance(p, ev.ResizeStatusChanged) and p.decision is not None and p.decision.node == node
    )


async def pod_history(
    bootstrap: str, namespace: str, name: str, topic_prefix: str = ""
) -> list[HistoryEntry]:
    records = await key_history(bootstrap, PODS, object_key(namespace, name), topic_prefix)
    entries: list[HistoryEntry] = []
    previous: datetime | None = None
    pod = ClusterState(allocations=None)  # a pod's events fold alone: they are all it reads
    for record in records:
        t = record.envelope.time
        since = (t - previous).total_seconds() if previous else None
        entries.append(HistoryEntry(record, since, refused=not pod.apply(record)))
        previous = t
    return entries


# --- state as of a position -------------------------------------------------------------------


def parse_position(text: str) -> Position:
    try:
        topic, partition, offset = text.rsplit(":", 2)
        position = Position(topic, int(partition), int(offset))
    except ValueError:
        raise ValueError(f"position {text!r} is not <topic>:<partition>:<offset>") from None
    if topic not in EVENT_TOPICS or position.partition < 0 or position.offset < 0:
        raise ValueError(f"position {text!r}: topic must be one of {', '.join(EVENT_TOPICS)}")
    return position


async def state_at(
    bootstrap: str, at: Position, topic_prefix: str = ""
) -> tuple[ClusterState, datetime]:
    """Fold the log up to `at`: that partition up to and including the offset, every other
    partition up to the time of the event at `at` (the log has no global order; time is the
    cut that matches what an observer saw)."""
    target = TopicPartition(topic_prefix + at.topic, at.partition)
    async with LogReader(bootstrap, role="state") as reader:
        tps = await reader.partitions([topic_prefix + t for t in EVENT_TOPICS])
        if target not in tps:
            raise ValueError(f"no partition {at.topic}:{at.partition} in the log")
        end = await reader.end_offsets(tps)
        if at.offset >= end[target]:
            raise ValueError(f"{at} is past the end of the log (next offset {end[target]})")
        cut: datetime | None = None
        async for batch in reader.read({target: at.offset}, {target: at.offset + 1}):
            for record in batch.records:
                cut = record.envelope.time
        if cut is None:
            raise ValueError(f"{at} is not an event (malformed or a transaction marker)")
        state = ClusterState()
        async for batch in reader.read({}, {**end, target: at.offset + 1}):
            # Each object's key lives in one partition, and batches keep partition order.
            for r in batch.records:
                in_target = TopicPartition(r.position.topic, r.position.partition) == target
                if in_target or r.envelope.time <= cut:
                    state.apply(r)
    return state, cut
