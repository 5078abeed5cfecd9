"""A read model: the log folded in memory, plus a watch window per resource.

Each holder (an apiserver replica, the quota service) follows every partition of its topics
from offset 0 without a consumer group, so it is stateless in front of the log. A writer can
wait until its own offset is applied before it answers: read-your-writes (DESIGN.md §6).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import heapq
import json
import logging
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from aiokafka import TopicPartition

from inplace.core.bus.consumer import LogFollower, LogReader, Record
from inplace.core.bus.headers import Accept
from inplace.core.bus.producer import Position
from inplace.core.observability.metrics import (
    FETCH_WAIT,
    MALFORMED,
    OWN_WRITES,
    SNAPSHOT_OBJECTS,
    START_SOURCE,
)
from inplace.core.projection import reducers
from inplace.core.projection.eventstore import EventStore
from inplace.core.projection.podstore import NsName, PodForm, PodStore, pod_json
from inplace.core.projection.reducers import position_of, resource_version
from inplace.core.projection.snapshot import (
    PROJECTED_TOPICS,
    SomePods,
    load_events_snapshot,
    load_pods_in,
    load_pods_on,
    load_snapshot,
)
from inplace.core.projection.state import ClusterState, resource_version_of
from inplace.core.projection.store import PodNamespaces
from inplace.core.settings import Settings
from schemas import events as ev
from schemas.envelope import decode

log = logging.getLogger(__name__)

# The fetch wait of roles no request waits on (the scheduler, the workload controller): each
# fetch costs such a role a round of fixed work (the request, the response, a batch's
# bookkeeping), so fewer, fuller fetches cost less; their view of the log lags by up to this
# much more while records flow (a fetch after a quiet spell returns at the first record).
# 25 ms took a fifth to a third off their CPU per resize (session 13); 100 ms a third (the
# 100-node load) to two thirds (the closed loop) of what was left (README, Performance).
# Quota holds its fetches too, but its admission webhook answers the apiserver from its
# view: a review makes it fetch promptly for PROMPT_FOR_S (`ReadModel.hurry`).
OFF_PATH_FETCH_WAIT_MS = 100
# How long a holder with held fetches fetches promptly after a request waited on its view.
PROMPT_FOR_S = 10.0

# How many refused records (`refused`) are remembered: a writer asks about its own at once.
REFUSALS_KEPT = 1024

# A request answered from another holder's view of the log carries how far the asking one
# has applied it (`ReadModel.progress`): the apiserver calling the quota webhook.
APPLIED_HEADER = "X-Inplace-Applied"

WatchType = Literal["ADDED", "MODIFIED", "DELETED"]
# Each collection and the topic its events travel on: a resourceVersion names a position there.
COLLECTION_TOPICS = {
    "pods": ev.PODS,
    "nodes": ev.NODES,
    "namespaces": ev.POLICY,
    "resourcequotas": ev.POLICY,
    "limitranges": ev.POLICY,
    "poddisruptionbudgets": ev.POLICY,
    "events": ev.K8S_EVENTS,
    "clonesets": ev.WORKLOADS,
}
COLLECTIONS = tuple(COLLECTION_TOPICS)


class TooOld(Exception):
    """The resourceVersion is no longer in the watch window (HTTP 410 Gone)."""


@dataclass(frozen=True)
class WatchEvent:
    """One change as watchers see it. The object is kept as JSON bytes: a window of 50,000
    dict snapshots held millions of objects the cyclic GC walked on every full collection
    (0.4 s pauses in the apiserver), and freed them one by one as they left the window."""

    type: WatchType
    resource_version: int
    namespace: str | None  # the object's metadata.namespace
    raw: bytes

    @classmethod
    def of(
        cls, type_: WatchType, rv: int, namespace: str | None, obj: dict[str, Any]
    ) -> WatchEvent:
        return cls(type_, rv, namespace, json.dumps(obj, separators=(",", ":")).encode())

    @property
    def object(self) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(self.raw)
        return value


@dataclass
class Collection:
    """One resource's change feed: a bounded window for resume, and live subscribers."""

    name: str
    window: deque[WatchEvent]
    subscribers: set[asyncio.Queue[WatchEvent | None]] = field(default_factory=set)
    # resourceVersion of the newest event, whatever its partition: the list resourceVersion.
    last: int = 0
    # resourceVersion of the change just before the window's first one: a watch from it
    # misses nothing.
    base: int = 0

    def publish(self, event: WatchEvent) -> None:
        if self.window and len(self.window) == self.window.maxlen:
            self.base = self.window[0].resource_version
        self.window.append(event)
        self.last = event.resource_version
        for queue in list(self.subscribers):
            # A watcher that cannot keep up is closed (clients re-watch). The last slot is kept
            # for the None that says so: put into a full queue it was lost, and the watcher
            # was left silent, missing every later change, until its timeout.
            if queue.qsize() >= queue.maxsize - 1:
                self.subscribers.discard(queue)
                with contextlib.suppress(asyncio.QueueFull):
                    queue.put_nowait(None)
            else:
                queue.put_nowait(event)

    def skip(self, rv: int) -> None:
        """A change folded while catching up with the log: too old to be watched from (the
        window starts after it), so no snapshot of the object is taken."""
        self.window.clear()
        self.base = self.last = rv

    def since(self, rv: int) -> list[WatchEvent]:
        """Events after the one with resourceVersion `rv`, in this replica's apply order."""
        if rv == self.last:
            return []
        if rv == self.base:
            return list(self.window)
        for i in range(len(self.window) - 1, -1, -1):
            if self.window[i].resource_version == rv:
                return list(self.window)[i + 1 :]
        raise TooOld(f"too old resource version: {rv} ({self.last})")

    def subscribe(self, size: int = 10_000) -> asyncio.Queue[WatchEvent | None]:
        queue: asyncio.Queue[WatchEvent | None] = asyncio.Queue(maxsize=size)
        self.subscribers.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[WatchEvent | None]) -> None:
        self.subscribers.discard(queue)


def locate(record: Record) -> tuple[str, Any]:
    """(collection, key) of the object an event changes (reducers.locate)."""
    return reducers.locate(record.envelope.payload)


def _namespace_of(obj: Any) -> str | None:
    """metadata.namespace, as the watch snapshot has it (a watch in a namespace matches by it)."""
    if isinstance(obj, dict):
        namespace: str | None = obj.get("metadata", {}).get("namespace")
        return namespace
    value: str | None = obj.metadata.namespace
    return value


def _said_if_failed(task: asyncio.Task[None]) -> None:
    """The Events' late load failed: said in the log (what serves Events keeps waiting)."""
    if not task.cancelled() and task.exception() is not None:
        log.error("the Events were not loaded", exc_info=task.exception())


def _newest_rv(objects: Any) -> int:
    if isinstance(objects, PodStore | EventStore):
        return objects.newest_resource_version()  # without decoding every object
    return max((int(resource_version_of(obj) or 0) for obj in objects.values()), default=0)


def as_json(obj: Any, resource_version: str | None = None) -> bytes:
    """The object's Kubernetes JSON; `resource_version` overrides metadata.resourceVersion."""
    if isinstance(obj, dict):
        if resource_version is not None:
            obj = {
                **obj,
                "metadata": {**obj.get("metadata", {}), "resourceVersion": resource_version},
            }
        return json.dumps(obj, separators=(",", ":")).encode()
    if resource_version is not None:
        meta = obj.metadata.model_copy(update={"resource_version": resource_version})
        obj = obj.model_copy(update={"metadata": meta})
    raw: bytes = obj.__pydantic_serializer__.to_json(obj, by_alias=True, exclude_none=True)
    return raw


def _no_pods(_: ClusterState) -> tuple[str, ...]:
    """The namespaces whose pods a snapshot brings to a holder that follows no pods: none."""
    return ()


class ReadModel:
    def __init__(
        self,
        settings: Settings,
        *,
        role: str,
        topics: tuple[str, ...] = ev.EVENT_TOPICS,
        window: int = 50_000,
        snapshot: bool = False,
        allocations: bool = False,
        claimed: Callable[[NsName], bool] | None = None,
        demands: bool = False,
        open_resizes: bool = False,
        accept: Accept | None = None,
        fetch_wait_ms: int = 0,
        hold_while: Callable[[], bool] | None = None,
        pod_namespaces: PodNamespaces | None = None,
        pod_form: PodForm = pod_json,
    ) -> None:
        """`window` is how many changes each collection keeps for watch resume; 0 means this
        holder serves no watches (only the apiserver does), so no per-change snapshot of the
        object is taken at all: that serialization was the largest cost of following the log
        for every other role.

        `snapshot`: start from the projection in PostgreSQL and read only the log after it
        (falls back to offset 0, saying so, when there is none). Only for holders whose state
        is the objects themselves: a role that derives its own state from every record it
        sees (`on_apply`) must still read them all.

        `allocations`: also keep the kubelet's allocation checkpoint (ClusterState.allocations);
        other holders leave it out and save the memory. `claimed`: the allocations the
        holder keeps elsewhere from now on, no longer kept here (ClusterState.claimed).

        `demands`: a snapshot also brings each placed pod's stored demand (schemas.demand),
        in `snapshot_demands` while the seeders run (the scheduler's), then dropped.
        `open_resizes`: likewise the pods whose row says their resize is open, in
        `snapshot_open_resizes` (the kubelet's); `snapshot_offsets` keeps where it ended.

        `accept`: decode only the records it takes, judged by their headers (a role that folds
        a few event types skips the others unparsed: `headers.of_types`; a kubelet process
        skips other processes' nodes, see `take_pods_on` for taking more later).
        `pod_namespaces`: a snapshot brings only the pods of the namespaces it names from the
        snapshot's other objects (the quota role's; `take_pods_in` takes a namespace's later).
        `pod_form`: what of a pod the holder keeps once it goes cold (PodStore); whole by
        default, as GET, watch and the projection need it.

        `fetch_wait_ms`: for a role no resize waits on (OFF_PATH_FETCH_WAIT_MS), fewer and
        fuller fetches at up to that much more lag (LogFollower). `hold_while`: hold them
        only while this says so, asked after each poll (e.g. while the holder's own work is
        queued, so a record fetched sooner would only wait there); None: while records flow."""
        self.settings = settings
        self.hold_while = hold_while
        override = settings.follow_fetch_wait_ms
        self.fetch_wait_ms = fetch_wait_ms if override is None else override
        self.role = role
        # Counted once per own write: the counters bound once, not looked up per write.
        self._own_waited = OWN_WRITES.labels(role, "waited")
        self._own_applied = OWN_WRITES.labels(role, "applied")
        self.use_snapshot = snapshot
        self.pod_namespaces = pod_namespaces
        self.topics = [settings.topic(t) for t in topics]
        self._pods_topic = settings.topic(ev.PODS)
        self._listeners: list[Callable[[Record], None]] = []
        self._keeping: list[bool] = []  # whether each listener keeps payloads (`on_apply`)
        self._batch_listeners: list[Callable[[], None]] = []
        self._seeders: list[Callable[[], None]] = []
        self.keep_allocations = allocations
        self.claimed = claimed
        self.want_demands = demands
        self.snapshot_demands: dict[NsName, str] = {}
        self.want_open_resizes = open_resizes
        self.snapshot_open_resizes: set[NsName] = set()
        self.snapshot_offsets: dict[TopicPartition, int] = {}
        self.accept = accept
        self.from_snapshot = False  # the state came from the projection, not offset 0
        # The latest records folded to nothing (ev.Conditional), for their writers to ask.
        self._refused: OrderedDict[Position, None] = OrderedDict()
        # Work that must not interleave with applying batches (taking over nodes).
        self._jobs: deque[tuple[Callable[[], Awaitable[None]], asyncio.Future[None]]] = deque()
        # Records are decoded for this model alone: unless a listener sees them too
        # (`on_apply`, which may keep them), the state keeps their payloads' objects instead
        # of deep-copying each one (a few copies per resize in the apiserver).
        self.state = ClusterState(
            pods=PodStore(form=pod_form),
            events=EventStore(),
            allocations={} if allocations else None,
            claimed=claimed,
            adopt_payloads=True,
        )
        self.watchable = window > 0
        self.collections = {n: Collection(n, deque(maxlen=window)) for n in COLLECTIONS}
        self.applied: dict[TopicPartition, int] = {}
        self.ready = asyncio.Event()
        # Writers waiting for their offset, per partition, as a heap by offset: a batch wakes
        # exactly the waiters it satisfies (a Condition woke every waiter on every batch).
        self._waiters: dict[TopicPartition, list[tuple[int, int, asyncio.Future[None]]]] = {}
        self._waiter_seq = 0
        self._follower: LogFollower | None = None
        self._partitions: list[TopicPartition] = []
        self._fetch_wait_now = self.fetch_wait_ms  # 0 while hurried (`hurry`)
        self._prompt_until = 0.0
        FETCH_WAIT.labels(role).set(self.fetch_wait_ms)
        # A snapshot start brings the Kubernetes Events after the rest (`_events_later`), as
        # kube-apiserver's watch cache of each resource fills on its own: the model is ready
        # without them; what serves Events waits for `events_ready`.
        self._events_topic = settings.topic(ev.K8S_EVENTS)
        self._events_catch_up: dict[TopicPartition, int] = {}
        self.events_ready = asyncio.Event()
        self._events_task: asyncio.Task[None] | None = None

    @property
    def pods(self) -> PodStore:
        """The pods, held as JSON (see PodStore)."""
        pods = self.state.pods
        if not isinstance(pods, PodStore):
            raise TypeError("a read model holds its pods in a PodStore")
        return pods

    def objects(self, collection: str) -> dict[Any, Any]:
        objects: dict[Any, Any] = getattr(self.state, collection)
        return objects

    def get(self, collection: str, key: Any) -> Any:
        return self.objects(collection).get(key)

    def pod_as_snapshot(self, key: NsName) -> bool:
        """Is the pod held as the snapshot had it? Its resourceVersion is the position of its
        last record on the pods topic: one before where the snapshot ends on that partition
        was in the snapshot (a pod's records share one partition)."""
        rv = self.pods.resource_version(key)
        if rv is None or not self.from_snapshot:
            return False
        at = position_of(rv, self._pods_topic)
        return at.offset < self.snapshot_offsets.get(TopicPartition(at.topic, at.partition), 0)

    async def _start_from_snapshot(self) -> dict[TopicPartition, int]:
        """Load the projection if asked and possible; the offsets to resume from."""
        if not self.use_snapshot:
            return {}
        s = self.settings
        projected = {s.topic(t) for t in PROJECTED_TOPICS} & set(self.topics)
        later = self._events_topic in projected  # the Events come after the rest
        # A holder that follows no pods (hotplug) would hold the snapshot's pods unchanged
        # forever, 1.7 KB each at 50,000 pods: it takes none.
        pod_namespaces = self.pod_namespaces if self._pods_topic in projected else _no_pods
        found = await load_snapshot(
            s.postgres_dsn,
            s.projection_schema,
            projected,
            allocations=self.keep_allocations,
            demands=self.want_demands,
            open_resizes=self.want_open_resizes,
            events=False,
            pod_namespaces=pod_namespaces,
            pod_form=self.pods.form,  # the rows' pods are whole; what goes cold keeps this form
        )
        if isinstance(found, str):
            log.warning("%s: no snapshot (%s): reading the log from offset 0", self.role, found)
            START_SOURCE.labels(self.role, "log").set(1)
            return {}
        self.state = found.state
        self.state.adopt_payloads = not any(self._keeping)
        self.state.claimed = self.claimed
        self.from_snapshot = True
        resume = found.offsets
        if later:  # their partitions wait for their own snapshot (`_events_later`)
            self.state.events = EventStore()
            resume = {tp: n for tp, n in resume.items() if tp.topic != self._events_topic}
        self.applied.update(resume)
        for collection in self.collections.values():
            collection.skip(_newest_rv(self.objects(collection.name)))
        log.info(
            "%s: started from the projection: %d objects, the log after %d offsets",
            self.role,
            found.objects,
            sum(found.offsets.values()),
        )
        START_SOURCE.labels(self.role, "snapshot").set(1)
        SNAPSHOT_OBJECTS.labels(self.role).set(found.objects)
        self.snapshot_demands, self.snapshot_open_resizes = found.demands, found.open_resizes
        self.snapshot_offsets = dict(found.offsets)
        try:
            for seed in self._seeders:
                seed()
        finally:
            self.snapshot_demands, self.snapshot_open_resizes = {}, set()
        return resume

    async def run(self) -> None:
        resume = await self._start_from_snapshot()
        follower = LogFollower(
            self.settings.kafka_bootstrap,
            self.topics,
            role=self.role,
            accept=self.accept,
            fetch_wait_ms=self._fetch_wait_now,
            hold_while=self.hold_while,
        )
        tps = await follower.start(resume)
        self._follower, self._partitions = follower, tps
        follower.hold_fetches(self._fetch_wait_now)  # hurried while it started
        deferred = [tp for tp in tps if tp.topic == self._events_topic and self.from_snapshot]
        if deferred:
            follower.pause(deferred)
            self._events_task = asyncio.create_task(self._events_later(follower, deferred))
            self._events_task.add_done_callback(_said_if_failed)
        else:
            self.events_ready.set()
        try:
            catch_up = await follower.end_offsets(tps)
            for tp in deferred:
                del catch_up[tp]  # ready without them
            self._check_ready(catch_up)
            # Own writes applied on their ack come back below `applied`: not decoded again.
            async for batch in follower.batches(applied=self.applied):
                for bad in batch.malformed:
                    # The projector's consumer group parks it on the dead-letter topic once;
                    # every reader says so in its own log and metrics.
                    log.warning(
                        "%s skipped malformed record %s: %s", self.role, bad.position, bad.reason
                    )
                    MALFORMED.labels(self.role, bad.position.topic).inc()
                applied = self.applied
                for record in batch.records:
                    self._apply(record)
                self.batch_applied()
                for tp, nxt in batch.next_offsets.items():
                    if nxt > applied.get(tp, 0):
                        applied[tp] = nxt
                        self._release(tp, nxt)
                self._check_ready(catch_up)
                if self._events_catch_up:
                    self._check_events_ready()
                while self._jobs:
                    job, done = self._jobs.popleft()
                    try:
                        await job()
                    except Exception as exc:  # the caller hears of it, the model goes on
                        if not done.done():
                            done.set_exception(exc)
                    else:
                        if not done.done():
                            done.set_result(None)
        finally:
            if self._events_task is not None:
                self._events_task.cancel()
            await follower.stop()

    async def _events_later(self, follower: LogFollower, tps: list[TopicPartition]) -> None:
        """Load the projection's Events with their topic's offsets (one consistent read of
        their own), put them in, and follow their partitions from there; `events_ready` once
        the log after them is applied too. Without a snapshot of them, from offset 0."""
        started = time.perf_counter()
        s = self.settings
        found = await load_events_snapshot(s.postgres_dsn, s.projection_schema, self._events_topic)
        if isinstance(found, str):
            log.warning("%s: no snapshot of the Events (%s): from offset 0", self.role, found)
            events, offsets = EventStore(), {}
        else:
            events, offsets = found.events, found.offsets
        # Nothing of their topic was applied while paused (they stay paused until resumed
        # below), and no other topic folds Events: the swap needs no merge.
        self.state.events = events
        for tp in tps:
            self.applied[tp] = offsets.get(tp, 0)
        self.collections["events"].skip(_newest_rv(events))
        await follower.resume_at(offsets, tps)
        self._events_catch_up = await follower.end_offsets(tps)
        self._check_events_ready()
        log.info(
            "%s: %d Events loaded from the projection in %.1f s, their log after %d offsets",
            self.role,
            len(events),
            time.perf_counter() - started,
            sum(offsets.values()),
        )

    def _check_events_ready(self) -> None:
        if all(self.applied.get(tp, 0) >= end for tp, end in self._events_catch_up.items()):
            self._events_catch_up = {}
            self.events_ready.set()

    def _check_ready(self, catch_up: dict[TopicPartition, int]) -> None:
        if not self.ready.is_set() and all(
            self.applied.get(tp, 0) >= end for tp, end in catch_up.items()
        ):
            self.ready.set()
            # What catch-up built lives as long as the process: keep it out of every future
            # cyclic collection (gen2 pauses grew with the log). Refcounting still frees it.
            gc.freeze()
            log.info("read model caught up with the log")

    def on_snapshot(self, seed: Callable[[], None]) -> None:
        """Call `seed` once the state was loaded from a snapshot: a holder that indexes what it
        sees in `on_apply` builds the same index from the objects instead."""
        self._seeders.append(seed)

    def on_batch(self, listener: Callable[[], None]) -> None:
        """Call `listener` once each batch's records are applied: what its reader's `accept`
        saw while the batch was decoded (before any of it was applied) acts in log order."""
        self._batch_listeners.append(listener)

    def batch_applied(self) -> None:
        for listener in self._batch_listeners:
            listener()

    def on_apply(self, listener: Callable[[Record], None], *, keeps_payloads: bool = True) -> None:
        """Call `listener` after each record is applied (e.g. to release a reservation); not
        after one folded to nothing (`refused`).

        `keeps_payloads`: the listener may keep the record's payload past the call, so the
        state copies what it takes from payloads (deep copies: ~18 µs a pod record). False:
        it reads the record during the call and keeps no more than its ids (a `Cause`), so
        the state may keep the payload's objects, as a holder without listeners does."""
        self._listeners.append(listener)
        self._keeping.append(keeps_payloads)
        self.state.adopt_payloads = not any(self._keeping)

    def _apply(self, record: Record) -> None:
        if not self._apply_record(record):
            return  # folded to nothing: no listener hears of a change that did not happen
        for listener in self._listeners:
            listener(record)

    def _apply_record(self, record: Record) -> bool:
        """Fold the record (and publish the change to watchers); False when its precondition
        refused it (`refused`)."""
        if not record.envelope.payload.CHANGES_STATE:
            return True  # a record of something refused: no object changed, nothing to watch
        if not self.watchable or not self.ready.is_set():
            if not self.state.apply(record):
                self._refuse(record.position)
                return False
            self.state.touched.clear()
            if self.watchable:
                # Catching up after a start: like kube-apiserver's watch cache, the window
                # begins at the state we start serving (older resourceVersions get 410 Gone and
                # clients relist). Snapshotting every historic change made restarts take minutes.
                collection, _ = locate(record)
                self.collections[collection].skip(resource_version(record.position))
            return True
        collection, key = locate(record)
        objects = self.objects(collection)
        before = objects.get(key)
        if not self.state.apply(record):
            self._refuse(record.position)
            return False  # folded to nothing (its precondition): no change to watch
        self.state.touched.clear()
        after = objects.get(key)
        rv = resource_version(record.position)
        if after is None and before is None:
            return True
        if after is None:
            snapshot = as_json(before, resource_version=str(rv))
            kind: WatchType = "DELETED"
        else:
            snapshot = as_json(after)
            kind = "ADDED" if before is None else "MODIFIED"
            if isinstance(objects, PodStore | EventStore):
                objects.settle(key, snapshot)  # the stored form, serialized once
        self.collections[collection].publish(
            WatchEvent(kind, rv, _namespace_of(after if after is not None else before), snapshot)
        )
        return True

    def _refuse(self, position: Position) -> None:
        self._refused[position] = None
        if len(self._refused) > REFUSALS_KEPT:
            self._refused.popitem(last=False)

    def refused(self, position: Position) -> bool:
        """Was the record at `position` folded to nothing, its precondition failing (another
        write to its object came first)? Asked by its writer once the model applied it."""
        return position in self._refused

    def hurry(self, seconds: float = PROMPT_FOR_S) -> None:
        """A request waits on this view (the quota webhook catching up to the apiserver that
        calls it): fetch promptly for the next `seconds`, then held again. Only for a holder
        with held fetches (`fetch_wait_ms` > 0); the others fetch promptly anyway."""
        if self.fetch_wait_ms <= 0:
            return
        self._prompt_until = max(self._prompt_until, time.monotonic() + seconds)
        if self._fetch_wait_now != 0:
            self._set_fetch_wait(0)
            asyncio.get_running_loop().call_later(seconds, self._hold_again)

    def _hold_again(self) -> None:
        remaining = self._prompt_until - time.monotonic()
        if remaining > 0:  # hurried again since: prompt until the last one's time is up
            asyncio.get_running_loop().call_later(remaining, self._hold_again)
        else:
            self._set_fetch_wait(self.fetch_wait_ms)

    def _set_fetch_wait(self, wait_ms: int) -> None:
        self._fetch_wait_now = wait_ms
        FETCH_WAIT.labels(self.role).set(wait_ms)
        if self._follower is not None:
            self._follower.hold_fetches(wait_ms)

    async def not_older_than(self, collection: str, rv: int, within: float = 3.0) -> None:
        """Return once this model has applied the change `rv` of `collection` names: what
        another replica wrote (read-your-writes across apiserver replicas, the NotOlderThan
        semantics of a read with resourceVersion). TimeoutError when it does not come."""
        topic = self.settings.topic(COLLECTION_TOPICS[collection])
        await self.wait_for(position_of(rv, topic), within=within)

    def holds(self, position: Position) -> bool:
        """Has the record at `position` been applied (or passed over) already?"""
        return self.applied.get(TopicPartition(position.topic, position.partition), 0) > (
            position.offset
        )

    def apply_own(self, position: Position, encoded: bytes) -> bool:
        """Apply this process's own write as soon as the broker acked it, when everything
        before it on its partition is applied already (so the order is the log's): the writer
        sees its write without waiting for the fetch that brings it back, which is then
        skipped. False (nothing done, nothing decoded) otherwise: the caller waits."""
        tp = TopicPartition(position.topic, position.partition)
        if not self.ready.is_set() or self.applied.get(tp, 0) != position.offset:
            self._own_waited.inc()
            return False
        self._apply(Record(position, decode(encoded)))
        self.applied[tp] = position.offset + 1
        self._release(tp, position.offset + 1)
        self._own_applied.inc()
        return True

    async def wait_for(self, position: Position, within: float = 30.0) -> None:
        """Return once the event at `position` is applied (read-your-writes)."""
        tp = TopicPartition(position.topic, position.partition)
        if self.applied.get(tp, 0) > position.offset:
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiter_seq += 1
        heapq.heappush(
            self._waiters.setdefault(tp, []), (position.offset, self._waiter_seq, waiter)
        )
        try:
            async with asyncio.timeout(within):
                await waiter
        finally:
            waiter.cancel()  # a timed-out waiter is skipped when its offset comes

    def progress(self, topic: str) -> str:
        """How far this model has applied `topic` ("partition:next_offset,…"), for another
        holder of the same log to catch up to before it answers for this one
        (`catch_up_to`; sent as the APPLIED_HEADER)."""
        return ",".join(
            f"{tp.partition}:{nxt}" for tp, nxt in sorted(self.applied.items()) if tp.topic == topic
        )

    async def catch_up_to(self, topic: str, progress: str, within: float) -> None:
        """Return once this model has applied `topic` as far as `progress` (`progress()` of
        another model) says; TimeoutError after `within`, ValueError for a malformed one."""
        ends: list[Position] = []
        for part in filter(None, progress.split(",")):
            partition, _, nxt = part.partition(":")
            ends.append(Position(topic, int(partition), int(nxt) - 1))
        async with asyncio.timeout(within):
            for end in ends:
                if end.offset >= 0:
                    await self.wait_for(end, within=within)

    def after_batch(self, job: Callable[[], Awaitable[None]]) -> asyncio.Future[None]:
        """Queue `job` to run in the follower's loop between two batches (nothing is applied
        while it runs: it may read the log or the database and apply what it found); the
        future is done when it has. Callable from a listener, within a batch."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._jobs.append((job, done))
        return done

    async def between_batches(self, job: Callable[[], Awaitable[None]]) -> None:
        """Run `job` between two batches (`after_batch`) and return once it has."""
        await self.after_batch(job)

    async def take_pods_on(self, nodes: list[str], accept: Accept) -> str:
        """Take over the pods of `nodes` (records of them were skipped until now): their
        projected state, then the log from the projection's offsets to this model's position,
        each pod event applied once (a pod's resourceVersion orders its events). Run between
        batches. `accept` takes the records of those nodes. Returns where the pods came from,
        for the log."""
        s = self.settings
        return await self._take_pods(
            await load_pods_on(s.postgres_dsn, s.projection_schema, nodes), accept
        )

    async def take_pods_in(self, namespace: str, accept: Accept) -> str:
        """Take over the pods of `namespace` as `take_pods_on` takes a node's (`accept` takes
        that namespace's records)."""
        s = self.settings
        return await self._take_pods(
            await load_pods_in(s.postgres_dsn, s.projection_schema, namespace), accept
        )

    def forget_pods_in(self, namespace: str) -> None:
        """Hold the pods of `namespace` no more (their records are skipped from now on)."""
        pods = self.pods
        for key in pods.keys_in(namespace):
            del pods[key]

    async def _take_pods(self, found: SomePods | str, accept: Accept) -> str:
        s = self.settings
        pods_topic = self._pods_topic
        start: dict[TopicPartition, int] = {}
        source = f"the log from offset 0 ({found})" if isinstance(found, str) else "the projection"
        if not isinstance(found, str):
            start = {tp: n for tp, n in found.offsets.items() if tp.topic == pods_topic}
            allocations = self.state.allocations
            for key in self.pods.take_newer(found.pods):
                if allocations is not None and key in found.allocations:
                    allocations[key] = found.allocations[key]
        here = {tp: self.applied.get(tp, 0) for tp in self._partitions if tp.topic == pods_topic}
        read = 0
        if all(start.get(tp, 0) >= end for tp, end in here.items()):
            return f"{source}, nothing on the log after it"
        async with LogReader(s.kafka_bootstrap, role=self.role) as reader:
            async for batch in reader.read(start, here, accept):
                for record in batch.records:
                    self._apply(record)
                read += len(batch.records)
        return f"{source} and {read} records of the log after it"

    async def caught_up(self, within: float = 60.0) -> None:
        """Return once everything on the log now has been applied: a holder taking over work
        another process did (a kubelet given a node in a rebalance) sees all it wrote."""
        if self._follower is None:
            raise RuntimeError("the read model is not following the log yet")
        ends = await self._follower.end_offsets(self._partitions)
        async with asyncio.timeout(within):
            for tp, end in ends.items():
                if end > 0:
                    await self.wait_for(Position(tp.topic, tp.partition, end - 1), within=within)

    def _release(self, tp: TopicPartition, next_offset: int) -> None:
        waiters = self._waiters.get(tp)
        while waiters and waiters[0][0] < next_offset:
            _, _, waiter = heapq.heappop(waiters)
            if not waiter.done():
                waiter.set_result(None)
