"""Consuming the log: records become typed `Record`s; malformed ones are dead-lettered."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
from aiokafka.structs import ConsumerRecord

from inplace.core.bus.auth import aiokafka_options
from inplace.core.bus.headers import TYPE_HEADER, Accept, header
from inplace.core.bus.producer import EventProducer, Position
from inplace.core.observability.metrics import DEAD_LETTERS, EVENTS_CONSUMED, EVENTS_SKIPPED
from schemas.envelope import Envelope, MalformedEvent, decode
from schemas.events import DEAD_LETTER

log = logging.getLogger(__name__)
# A fetch the broker may hold back (LogFollower's `fetch_wait_ms`) returns once this much is
# there: ~100 pod records.
FULL_FETCH_BYTES = 65536

RawRecord = ConsumerRecord  # type: ignore[type-arg]


def held_fetches(wait_ms: int) -> dict[str, int]:
    """Consumer options for a reader that can wait `wait_ms` (> 0): the broker answers a fetch
    once FULL_FETCH_BYTES are there or after that long (fewer, fuller fetches); 0: each fetch
    returns as soon as there is a record (aiokafka's defaults: 1 byte, else after 500 ms)."""
    if wait_ms > 0:
        return {"fetch_min_bytes": FULL_FETCH_BYTES, "fetch_max_wait_ms": wait_ms}
    return {"fetch_min_bytes": 1, "fetch_max_wait_ms": 500}


def fetch_as(consumer: AIOKafkaConsumer, wait_ms: int) -> None:
    """Make `consumer`'s next fetch requests as `held_fetches(wait_ms)` says (a fetch the
    broker holds now still ends as it was asked). aiokafka takes both options only when the
    consumer is made; its Fetcher reads them afresh for every request it builds (0.11 to
    0.14, the versions pyproject allows), so they are set there."""
    options = held_fetches(wait_ms)
    fetcher = consumer._fetcher
    fetcher._fetch_min_bytes = options["fetch_min_bytes"]
    fetcher._fetch_max_wait_ms = options["fetch_max_wait_ms"]


def follow_flow(consumer: AIOKafkaConsumer, wait_ms: int, flowing: bool) -> None:
    """For a reader with held fetches (`wait_ms` > 0): held while records flow; once a poll
    found none, the next fetch waits at the broker for the first record (a held one would
    come back empty every `wait_ms`: 10 fetches a second of an idle reader at 100 ms)."""
    if wait_ms > 0:
        fetch_as(consumer, wait_ms if flowing else 0)


@dataclass(frozen=True)
class Record:
    """One decoded event with its position in the log."""

    position: Position
    envelope: Envelope


@dataclass(frozen=True)
class Malformed:
    """A record no one could parse, with the one-line reason."""

    position: Position
    raw: RawRecord
    reason: str


def decode_record(raw: RawRecord) -> Record | Malformed:
    position = Position(raw.topic, raw.partition, raw.offset)
    try:
        return Record(position, decode(raw.value))
    except MalformedEvent as exc:
        return Malformed(position, raw, str(exc))


class DeadLetters:
    """Parks malformed records on the dead-letter topic with where they came from and why."""

    def __init__(self, producer: EventProducer, role: str) -> None:
        self._producer = producer
        self._role = role

    async def park(self, bad: Malformed) -> Position:
        log.warning("dead-lettered %s (%s): %s", bad.position, self._role, bad.reason)
        DEAD_LETTERS.labels(self._role, bad.position.topic).inc()
        headers = [
            ("source-topic", bad.position.topic.encode()),
            ("source-partition", str(bad.position.partition).encode()),
            ("source-offset", str(bad.position.offset).encode()),
            ("consumer", self._role.encode()),
            ("reason", bad.reason.encode()),
        ]
        return await self._producer.send_raw(
            self._producer.topic(DEAD_LETTER), bad.raw.value, key=bad.raw.key, headers=headers
        )


@dataclass
class Batch:
    """What one poll returned: decoded records in log order per partition, the malformed
    ones, and where each partition continues (past malformed records too)."""

    records: list[Record] = field(default_factory=list)
    malformed: list[Malformed] = field(default_factory=list)
    next_offsets: dict[TopicPartition, int] = field(default_factory=dict)
    start_offsets: dict[TopicPartition, int] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.next_offsets)


async def decode_batch(
    raw: dict[TopicPartition, list[RawRecord]],
    role: str,
    dead_letters: DeadLetters | None,
    accept: Accept | None = None,
    applied: Mapping[TopicPartition, int] | None = None,
) -> Batch:
    """`accept`: decode only the records it takes (judged by key and headers, before any
    parsing); the others still advance their partition's position. `applied`: where the
    reader's state already is on each partition; a record before that (the reader's own
    write, applied from its bytes on the broker's ack) is counted by its type header and not
    decoded again."""
    batch = Batch()
    consumed: Counter[str] = Counter()
    skipped = 0
    for tp, items in raw.items():
        floor = applied.get(tp, 0) if applied is not None else 0
        for item in items:
            if accept is not None and not accept(item):
                skipped += 1
                continue
            if item.offset < floor:
                consumed[header(item, TYPE_HEADER) or "unknown"] += 1
                continue
            decoded = decode_record(item)
            if isinstance(decoded, Malformed):
                if dead_letters:
                    await dead_letters.park(decoded)
                batch.malformed.append(decoded)
            else:
                consumed[decoded.envelope.type] += 1
                batch.records.append(decoded)
        if items:
            batch.start_offsets[tp] = items[0].offset
            batch.next_offsets[tp] = items[-1].offset + 1
    # One labels() lookup per event type and batch, not per record (it was ~10% of a rebuild).
    for kind, n in consumed.items():
        EVENTS_CONSUMED.labels(role, kind).inc(n)
    if skipped:
        EVENTS_SKIPPED.labels(role).inc(skipped)
    return batch


SeekFn = Callable[[list[TopicPartition]], Awaitable[dict[TopicPartition, int]]]


class _SeekOnAssign(ConsumerRebalanceListener):  # type: ignore[misc]
    """Positions newly assigned partitions where the caller's own store says (exactly-once)."""

    def __init__(self, consumer: AIOKafkaConsumer, seek: SeekFn) -> None:
        self._consumer = consumer
        self._seek = seek

    async def on_partitions_revoked(self, revoked: list[TopicPartition]) -> None:
        return None

    async def on_partitions_assigned(self, assigned: list[TopicPartition]) -> None:
        positions = await self._seek(list(assigned))
        for tp in assigned:
            self._consumer.seek(tp, positions.get(tp, 0))


class EventConsumer:
    """A consumer-group member for one role.

    With `seek` the role keeps its own offsets (the projector keeps them in Postgres, in the
    same transaction as its rows); without, offsets are committed to Kafka after each batch.
    """

    def __init__(
        self,
        bootstrap: str,
        *,
        role: str,
        topics: tuple[str, ...] | list[str],
        group_id: str | None = None,
        seek: SeekFn | None = None,
        dead_letters: DeadLetters | None = None,
        max_records: int = 5000,
        linger_ms: int = 0,
    ) -> None:
        self.role = role
        self._linger_ms = linger_ms
        self._linger = linger_ms / 1000
        self._topics = list(topics)
        self._seek = seek
        self._dead_letters = dead_letters
        self._max_records = max_records
        self._consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            **aiokafka_options(),
            group_id=group_id or role,
            client_id=role,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            isolation_level="read_committed",
            max_poll_records=max_records,
            # A lingering role also lets the broker hold each fetch until it is worth
            # answering: a fetch per new record (fetch.min.bytes 1) cost the broker and the
            # role a round trip each, only for the records to wait out the linger here.
            **held_fetches(linger_ms),
        )

    async def start(self) -> None:
        await self._consumer.start()
        listener = _SeekOnAssign(self._consumer, self._seek) if self._seek else None
        if listener:
            self._consumer.subscribe(self._topics, listener=listener)
        else:
            self._consumer.subscribe(self._topics)

    async def stop(self) -> None:
        await self._consumer.stop()

    async def batches(self, timeout_ms: int = 500) -> AsyncIterator[Batch]:
        """Yield decoded batches forever (empty ones on idle); malformed records are parked."""
        while True:
            raw = await self._consumer.getmany(timeout_ms=timeout_ms, max_records=self._max_records)
            follow_flow(self._consumer, self._linger_ms, bool(raw))  # held for the linger too
            if raw and self._linger:
                await self._gather(raw)
            batch = await decode_batch(raw, self.role, self._dead_letters)
            yield batch

    async def _gather(self, raw: dict[TopicPartition, list[RawRecord]]) -> None:
        """Add what arrives within the linger to `raw`: a role for which latency matters less
        than cost per event (the projector: one transaction per batch) gets fuller batches."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._linger
        count = sum(len(items) for items in raw.values())
        while count < self._max_records and (left := deadline - loop.time()) > 0:
            more = await self._consumer.getmany(
                timeout_ms=max(1, int(left * 1000)), max_records=self._max_records - count
            )
            for tp, items in more.items():
                raw.setdefault(tp, []).extend(items)  # polls continue each partition in order
                count += len(items)

    def seek(self, positions: dict[TopicPartition, int]) -> None:
        for tp, offset in positions.items():
            self._consumer.seek(tp, offset)

    async def commit(self) -> None:
        """Commit positions to Kafka (roles without their own offset store)."""
        await self._consumer.commit()


class LogReader:
    """Reads partitions from given offsets up to a fixed end (replay, history, rebuild)."""

    def __init__(self, bootstrap: str, *, role: str = "replay", max_records: int = 5000) -> None:
        self._role = role
        self._max_records = max_records
        self._consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            **aiokafka_options(),
            group_id=None,
            enable_auto_commit=False,
            isolation_level="read_committed",
            max_poll_records=max_records,
        )

    async def __aenter__(self) -> LogReader:
        await self._consumer.start()
        # Let the consumer's own tasks run once: its stop() awaits a task it cancels, and one
        # that never started raises CancelledError into whoever stops it (aiokafka 0.14).
        await asyncio.sleep(0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._consumer.stop()

    async def partitions(self, topics: tuple[str, ...] | list[str]) -> list[TopicPartition]:
        tps: list[TopicPartition] = []
        for topic in topics:
            parts = self._consumer.partitions_for_topic(topic)
            if parts is None:
                await self._consumer._client.force_metadata_update()  # first use of topic
                parts = self._consumer.partitions_for_topic(topic) or set()
            tps.extend(TopicPartition(topic, p) for p in sorted(parts))
        return tps

    async def end_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        return dict(await self._consumer.end_offsets(tps))

    async def read(
        self,
        start: dict[TopicPartition, int],
        end: dict[TopicPartition, int],
        accept: Accept | None = None,
    ) -> AsyncIterator[Batch]:
        """Batches covering [start, end) for every partition (the records `accept` takes),
        then stop."""
        todo = {tp: off for tp, off in end.items() if start.get(tp, 0) < off}
        if not todo:
            return
        self._consumer.assign(list(todo))
        for tp in todo:
            self._consumer.seek(tp, start.get(tp, 0))
        while todo:
            raw = await self._consumer.getmany(
                *todo, timeout_ms=1000, max_records=self._max_records
            )
            clipped = {
                tp: [r for r in items if r.offset < todo[tp]]
                for tp, items in raw.items()
                if tp in todo
            }
            batch = await decode_batch(clipped, self._role, None, accept)
            # position(), not the last record's offset: transaction markers take offsets too.
            for tp in list(todo):
                if await self._consumer.position(tp) >= todo[tp]:
                    del todo[tp]
            if batch:
                yield batch


class LogFollower:
    """Follows whole topics forever, without a consumer group, from offset 0 or from where a
    snapshot ends: every reader (an apiserver replica's read model) sees every partition in
    order."""

    def __init__(
        self,
        bootstrap: str,
        topics: list[str],
        *,
        role: str,
        accept: Accept | None = None,
        fetch_wait_ms: int = 0,
        hold_while: Callable[[], bool] | None = None,
    ) -> None:
        """`fetch_wait_ms` > 0: while records flow the broker answers a fetch once
        FULL_FETCH_BYTES are there or after this long, so a follower fetches fewer, fuller
        batches at up to that much more lag (for roles no user waits on; 0: each fetch returns
        what there is at once); while none come, a fetch waits for the first (`batches`).
        `hold_while`: and only while it says so (asked after each poll)."""
        self._topics = topics
        self._role = role
        self._accept = accept
        self._wait_ms = fetch_wait_ms
        self._hold_while = hold_while
        self._consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            **aiokafka_options(),
            group_id=None,
            enable_auto_commit=False,
            isolation_level="read_committed",
            max_poll_records=5000,
            **held_fetches(fetch_wait_ms if self._holding() else 0),
        )
        # End offsets over a connection of their own: a broker answers one connection's
        # requests in order, and behind the follower's long-poll fetch (the broker holds it up
        # to fetch.max.wait.ms, 500 ms by default, while nothing is new) a lookup waited ~1 s
        # at every start and every node takeover.
        self._offsets = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            **aiokafka_options(),
            group_id=None,
            enable_auto_commit=False,
            isolation_level="read_committed",  # the end a read_committed follower reaches
        )

    async def start(self, resume: dict[TopicPartition, int] | None = None) -> list[TopicPartition]:
        """Assign every partition; each starts at its `resume` offset, or at the beginning.
        A start that fails (no broker, a missing topic) leaves no connection open."""
        try:
            await self._offsets.start()
            # Learn where the partitions live now: a client that tracks no topic found no
            # leader at its first end-offsets lookup and waited for a metadata refresh
            # (~0.5 s of every role's start).
            await self._offsets._client.set_topics(self._topics)
            return await self._assign(resume)
        except BaseException:
            await self.stop()
            raise

    async def _assign(self, resume: dict[TopicPartition, int] | None) -> list[TopicPartition]:
        await self._consumer.start()
        tps: list[TopicPartition] = []
        await self._consumer._client.force_metadata_update()
        for topic in self._topics:
            parts = self._consumer.partitions_for_topic(topic)
            if not parts:
                raise RuntimeError(f"topic {topic} does not exist: run `inplace topics`")
            tps.extend(TopicPartition(topic, p) for p in sorted(parts))
        self._consumer.assign(tps)
        await self._seek(resume or {}, tps)
        return tps

    async def _seek(self, offsets: dict[TopicPartition, int], tps: list[TopicPartition]) -> None:
        """Each of `tps` from its offset in `offsets`, or from the beginning when absent."""
        from_start = [tp for tp in tps if tp not in offsets]
        if from_start:
            await self._consumer.seek_to_beginning(*from_start)
        for tp in tps:
            if tp in offsets:
                self._consumer.seek(tp, offsets[tp])

    def pause(self, tps: list[TopicPartition]) -> None:
        """Fetch nothing of `tps` until `resume_at`."""
        self._consumer.pause(*tps)

    async def resume_at(
        self, offsets: dict[TopicPartition, int], tps: list[TopicPartition]
    ) -> None:
        """Fetch `tps` again, each from its offset in `offsets` (the beginning when absent)."""
        await self._seek(offsets, tps)
        self._consumer.resume(*tps)

    def hold_fetches(self, wait_ms: int) -> None:
        """From the next fetch on, let the broker hold fetches up to `wait_ms` while records
        flow (0: never; a fetch the broker holds now still ends as it was asked)."""
        self._wait_ms = wait_ms
        fetch_as(self._consumer, wait_ms if self._holding() else 0)

    def _holding(self) -> bool:
        """May fetches be held now (`hold_while`)?"""
        return self._hold_while is None or self._hold_while()

    async def end_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        return dict(await self._offsets.end_offsets(tps))

    async def stop(self) -> None:
        try:
            await self._consumer.stop()
        finally:
            await self._offsets.stop()

    async def batches(
        self, timeout_ms: int = 200, applied: Mapping[TopicPartition, int] | None = None
    ) -> AsyncIterator[Batch]:
        """`applied`: the reader's position per partition, read afresh for each batch; what
        lies before it is not decoded (`decode_batch`)."""
        while True:
            raw = await self._consumer.getmany(timeout_ms=timeout_ms, max_records=5000)
            follow_flow(self._consumer, self._wait_ms, bool(raw) and self._holding())
            yield await decode_batch(raw, self._role, None, self._accept, applied)

    async def position(self, tp: TopicPartition) -> int:
        return await self._consumer.position(tp)
