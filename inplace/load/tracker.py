"""Following every resize of a run through the log, by correlation id.

The apiserver writes ResizeProposed with the request's `X-Correlation-Id` (the `log` driver
sets it itself); the kubelet writes Allocated, ResizeStatusChanged and Actuated with the
proposal as their cause, so they carry the same id (an Allocated the runtime applied first
carries its actual resources and the cleared status: one record, every milestone).
Latencies are differences of envelope times (every producer runs on this machine, one
clock). `observe` is pure: tests feed it synthetic envelopes; `follow` feeds it from a
LogFollower over the `pods` topic.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

import asyncpg

from inplace.core.bus.consumer import LogFollower, LogReader
from inplace.core.bus.headers import of_types
from inplace.core.projection.store import ProjectionStore
from inplace.core.settings import Settings
from schemas import events as ev
from schemas.envelope import Envelope
from schemas.k8s import ResourceRequirements
from schemas.keys import object_key

Milestone = Literal[
    "proposed", "allocated", "in_progress", "actuated", "cleared", "deferred", "infeasible"
]
Outcome = Literal["completed", "deferred", "infeasible", "superseded", "pending"]
SETTLED: tuple[Outcome, ...] = ("completed", "deferred", "infeasible")

# name → (from, to) milestones; latency = time(to) - time(from), when both happened.
STAGES: dict[str, tuple[Milestone, Milestone]] = {
    "admit": ("proposed", "allocated"),
    "actuate": ("allocated", "actuated"),
    "clear": ("actuated", "cleared"),
    "end_to_end": ("proposed", "actuated"),
    "complete": ("proposed", "cleared"),
    "defer": ("proposed", "deferred"),
    "infeasible": ("proposed", "infeasible"),
}
_STATUS: dict[str | None, Milestone] = {
    "InProgress": "in_progress",
    "Deferred": "deferred",
    "Infeasible": "infeasible",
    None: "cleared",
}

_RESIZE_EVENTS = (ev.ResizeProposed, ev.Allocated, ev.ResizeStatusChanged, ev.Actuated)
# Every type `observe` reads (the phase: pods Running or Failed); `follow` skips the rest of
# `pods` undecoded (PodCreated, the largest records, among them).
TRACKED: frozenset[str] = frozenset(t.TYPE for t in (*_RESIZE_EVENTS, ev.PodPhaseChanged))

Signature = tuple[tuple[str, int | None, int | None, int | None, int | None], ...]


def signature(containers: Iterable[tuple[str, ResourceRequirements]]) -> Signature:
    """cpu (milli) and memory (bytes) requests and limits per container, comparable by value."""

    def get(rl: Mapping[str, object] | None, name: str, milli: bool) -> int | None:
        q = (rl or {}).get(name)
        if q is None:
            return None
        return q.milli_value() if milli else q.value()  # type: ignore[attr-defined]

    return tuple(
        sorted(
            (
                name,
                get(r.requests, "cpu", True),
                get(r.limits, "cpu", True),
                get(r.requests, "memory", False),
                get(r.limits, "memory", False),
            )
            for name, r in containers
        )
    )


@dataclass
class Trace:
    """One resize: when each milestone first happened, and how often each did."""

    correlation_id: str
    pod: str
    times: dict[Milestone, float] = field(default_factory=dict)
    counts: Counter[Milestone] = field(default_factory=Counter)
    desired: Signature | None = None
    actual: Signature | None = None
    superseded: bool = False
    settled: bool = False

    def mark(self, milestone: Milestone, at: float) -> None:
        self.counts[milestone] += 1
        self.times.setdefault(milestone, at)

    @property
    def outcome(self) -> Outcome:
        if "cleared" in self.times and "allocated" in self.times:
            return "completed"
        waiting = [m for m in ("deferred", "infeasible") if m in self.times]
        if waiting:
            latest = max(waiting, key=lambda m: self.times[m])
            return "deferred" if latest == "deferred" else "infeasible"
        return "superseded" if self.superseded else "pending"

    def latency(self, stage: str) -> float | None:
        start, end = STAGES[stage]
        if start in self.times and end in self.times:
            return self.times[end] - self.times[start]
        return None


@dataclass(frozen=True)
class StageStats:
    count: int
    p50: float
    p90: float
    p99: float
    max: float
    mean: float

    def as_ms(self) -> dict[str, float | int]:
        return {
            "count": self.count,
            "p50_ms": round(self.p50 * 1000, 2),
            "p90_ms": round(self.p90 * 1000, 2),
            "p99_ms": round(self.p99 * 1000, 2),
            "max_ms": round(self.max * 1000, 2),
            "mean_ms": round(self.mean * 1000, 2),
        }


def percentile(ordered: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default) on sorted values."""
    if not ordered:
        return 0.0
    rank = (len(ordered) - 1) * q
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def stage_stats(values: Iterable[float]) -> StageStats:
    ordered = sorted(values)
    if not ordered:
        return StageStats(0, 0.0, 0.0, 0.0, 0.0, 0.0)
    return StageStats(
        len(ordered),
        percentile(ordered, 0.50),
        percentile(ordered, 0.90),
        percentile(ordered, 0.99),
        ordered[-1],
        sum(ordered) / len(ordered),
    )


SettledHook = Callable[[str, Outcome], None]


class Tracker:
    """Traces of this run's resizes (correlation ids starting with `prefix`) and the phase of
    this run's pods (namespace `namespace`)."""

    def __init__(self, prefix: str, namespace: str, on_settled: SettledHook | None = None) -> None:
        self.prefix = prefix
        self.namespace = namespace
        self.on_settled = on_settled
        self.traces: dict[str, Trace] = {}
        self.current: dict[str, str] = {}  # pod key → correlation id of its newest proposal
        self.running: set[str] = set()
        self.failed: dict[str, str] = {}
        self.delays: list[float] = []  # receipt - event time, this run's resize events
        self.lag: list[tuple[float, int]] = []  # (wall time, records behind the log's end)
        self.events = 0

    # --- pure part ----------------------------------------------------------------------------

    def observe(self, envelope: Envelope, received: float | None = None) -> None:
        payload = envelope.payload
        if not isinstance(payload, ev.PodEvent):
            return
        key = object_key(payload.namespace, payload.name)
        if payload.namespace == self.namespace and isinstance(payload, ev.PodPhaseChanged):
            if payload.phase == "Running":
                self.running.add(key)
            elif payload.phase == "Failed":
                self.running.discard(key)
                self.failed[key] = payload.message or payload.reason or "Failed"
        cid = envelope.correlation_id
        if not cid.startswith(self.prefix) or not isinstance(payload, _RESIZE_EVENTS):
            return
        self.events += 1
        at = envelope.time.timestamp()
        if received is not None:
            self.delays.append(received - at)
        trace = self.traces.get(cid)
        if trace is None:
            trace = self.traces[cid] = Trace(cid, key)
        if isinstance(payload, ev.ResizeProposed):
            previous = self.current.get(key)
            if previous is not None and previous != cid:
                old = self.traces[previous]
                if old.outcome == "pending":
                    old.superseded = True  # newest desired wins (KEP-1287)
            self.current[key] = cid
            trace.desired = signature((c.name, c.resources) for c in payload.containers)
            trace.mark("proposed", at)
        elif isinstance(payload, ev.Allocated):
            trace.mark("allocated", at)
        applied = ev.applied(payload)  # an Actuated's, or an Allocated's applied with it
        if applied is not None:
            trace.actual = signature((c.name, c.resources) for c in applied.containers)
            trace.counts["actuated"] += 1
            if trace.actual == trace.desired:
                trace.times.setdefault("actuated", at)
        change = ev.resize_change(payload)
        if change is not None:  # on its own, or set with the Allocated / Actuated
            trace.mark(_STATUS[change.resize], at)
        outcome = trace.outcome
        if not trace.settled and outcome in SETTLED:
            trace.settled = True
            if self.on_settled is not None:
                self.on_settled(cid, outcome)

    # --- results ------------------------------------------------------------------------------

    def has_proposal(self, cid: str) -> bool:
        """Whether the ResizeProposed of `cid` is on the log (seen by this tracker)."""
        trace = self.traces.get(cid)
        return trace is not None and "proposed" in trace.times

    def proposed(self) -> list[Trace]:
        return [t for t in self.traces.values() if "proposed" in t.times]

    def outcomes(self) -> Counter[str]:
        return Counter(t.outcome for t in self.proposed())

    def stages(self) -> dict[str, StageStats]:
        traces = self.proposed()
        result = {}
        for stage in STAGES:
            values = [v for t in traces if (v := t.latency(stage)) is not None]
            result[stage] = stage_stats(values)
        return result

    def window(self) -> tuple[float, float] | None:
        """(first proposal, last settling event) in epoch seconds."""
        traces = self.proposed()
        if not traces:
            return None
        first = min(t.times["proposed"] for t in traces)
        ends = [max(t.times.values()) for t in traces if t.outcome in SETTLED]
        return first, max(ends, default=first)

    # --- following the log --------------------------------------------------------------------

    async def follow(self, bootstrap: str, topic: str, ready: asyncio.Event | None = None) -> None:
        """Apply every record of `topic` from offset 0 until cancelled; sample the lag."""
        follower = LogFollower(bootstrap, [topic], role="load-tracker", accept=of_types(TRACKED))
        tps = await follower.start()
        if ready is not None:
            ready.set()
        history = await follower.end_offsets(tps)  # what was there before the run
        caught_up = False
        sampled = 0.0
        try:
            async for batch in follower.batches(timeout_ms=100):
                now = time.time()
                for record in batch.records:
                    self.observe(record.envelope, now)
                if now - sampled < 1.0:
                    continue
                sampled = now
                positions = {tp: await follower.position(tp) for tp in tps}
                # Reading the log's history is not lag: sample once past it.
                caught_up = caught_up or all(positions[tp] >= history[tp] for tp in tps)
                if caught_up:
                    ends = await follower.end_offsets(tps)
                    behind = sum(max(0, ends[tp] - positions[tp]) for tp in tps)
                    self.lag.append((now, behind))
        finally:
            await follower.stop()


# --- the projector's lag ----------------------------------------------------------------------


async def projected_offsets(settings: Settings) -> dict[tuple[str, int], int]:
    """The live projection's stored next offsets (empty before its first batch)."""
    conn = await asyncpg.connect(settings.postgres_dsn)
    try:
        stored = await ProjectionStore(settings.projection_schema).offsets(conn)
    except asyncpg.UndefinedTableError:
        return {}
    finally:
        await conn.close()
    return {(tp.topic, tp.partition): off for tp, off in stored.items()}


async def sample_projector_lag(
    settings: Settings, into: list[tuple[float, int]], interval: float = 1.0
) -> None:
    """Every `interval` seconds, how many records of the event topics the projector has not
    applied yet; until cancelled. Silent when the database or projection is not there."""
    async with LogReader(settings.kafka_bootstrap, role="load-lag") as reader:
        tps = await reader.partitions(settings.event_topics())
        while True:
            try:
                ends = await reader.end_offsets(tps)
                stored = await projected_offsets(settings)
            except (OSError, asyncpg.PostgresError):
                stored = None
            if stored is not None:
                behind = sum(
                    max(0, end - stored.get((tp.topic, tp.partition), 0))
                    for tp, end in ends.items()
                )
                into.append((time.time(), behind))
            await asyncio.sleep(interval)
