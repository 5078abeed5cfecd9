"""The scheduler role: resize-aware placement of pending pods (issue 6).

A read model follows `pods` and `nodes` from offset 0 and, after every record, folds the changed
pod or node into the SchedulerCache: one pod re-priced, one node's sums adjusted, never a
re-sum. Each record may also leave work behind: a pod that waits for a node, or a change that
may let a parked pod in (a node added or grown, a pod deleted or evicted, a resize that
shrinks: the queueing hints of NodeResourcesFit, KEP-3953 included).
The decision loop wakes on that work, never on a timer.

Level-triggered, so a SIGKILL at any point is harmless: after a restart the model is replayed
before any decision, and a pod whose PodBound is in the log has a nodeName and is never bound
again. A binding is assumed in the cache the moment it is decided, as kube-scheduler assumes
before it binds, so the next decision sees the room it takes before the PodBound comes back.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from datetime import UTC, datetime

from prometheus_client import Counter, Gauge

from inplace.core.bus.consumer import Record
from inplace.core.bus.headers import of_types
from inplace.core.bus.leases import PartitionLeases
from inplace.core.bus.podheaders import pod_headers
from inplace.core.bus.producer import EventProducer, Position
from inplace.core.observability.metrics import EVENTS_PRODUCED
from inplace.core.readmodel import OFF_PATH_FETCH_WAIT_MS, ReadModel
from inplace.core.service import RoleServer
from inplace.core.settings import Settings
from schemas import events as ev
from schemas.demand import PodDemand, priced_row
from schemas.envelope import Cause, Envelope, EventPayload
from schemas.events import NODES, PODS
from schemas.k8s import Event, EventType, Pod
from schemas.keys import object_key
from schemas.kubeevents import event_about, occurrence_name, reference
from schemas.podview import PodLike, is_terminal
from schemas.resources import is_resize_infeasible
from services.scheduler.cache import ClusterChange, SchedulerCache
from services.scheduler.config import SchedulerConfig
from services.scheduler.metrics import LEADING
from services.scheduler.placement import Bound, pending_to_retry, schedule
from services.scheduler.reads import READS, placed_json

ROLE = "scheduler"
INPUT_TOPICS = (PODS, NODES)
# The name kube-scheduler answers to (spec.schedulerName) and reports its events as.
DEFAULT_SCHEDULER = "default-scheduler"
# Decisions are sent without waiting for each acknowledgement; every this many, the loop waits
# for the broker and lets the read model and the HTTP server run.
SEND_WINDOW = 500
YIELD_EVERY = 256
LEADER_PARTITION = 0  # of the group's topic (`nodes`): its holder binds
REVOKE_TIMEOUT = 30.0  # s: a rebalance waits this long for the binding in hand

log = logging.getLogger(__name__)

# kube-scheduler's metric names: attempts by result, and pods waiting by queue ("active": not
# tried yet; "unschedulable": parked until a change may let them in).
SCHEDULE_ATTEMPTS = Counter(
    "scheduler_schedule_attempts_total",
    "Attempts to schedule pods, by result (scheduled, unschedulable, error)",
    ["result"],
)
PENDING_PODS = Gauge("scheduler_pending_pods", "Pods waiting to be scheduled, by queue", ["queue"])


def _unschedulable_message(pod: Pod) -> str | None:
    """The message of the pod's PodScheduled=False condition, as the log last said it."""
    for condition in pod.status.conditions or []:
        if condition.type == "PodScheduled" and condition.status == "False":
            return condition.message
    return None


def scheduling_event(
    pod: Pod, *, type_: EventType, reason: str, action: str, message: str, now: datetime
) -> Event:
    """An Event about `pod` as kube-scheduler's events/v1 recorder writes it, in its core/v1
    view: named `<pod>.<unix nanos in hex>`, reported by default-scheduler."""
    return event_about(
        reference("Pod", pod.metadata),
        name=occurrence_name(pod.metadata.name or "", now),
        namespace=pod.metadata.namespace,
        reason=reason,
        message=message,
        type_=type_,
        action=action,
        now=now,
        component=DEFAULT_SCHEDULER,
        instance=f"{DEFAULT_SCHEDULER}-{socket.gethostname()}",
    )


# Events that change neither a pod's requests nor its node nor its phase: pricing the pod again
# (pod_demand, a third of the scheduler's CPU under a resize load) can only give the same answer,
# unless its resize became or stopped being Infeasible (KEP-1287 then counts only what the node
# granted).
_STATUS_ONLY = (ev.ResizeStatusChanged, ev.ContainerRestarted, ev.PodUpdated, ev.PodUnschedulable)


class Scheduler:
    """The cache kept by the read model's records, and the loop that decides from it."""

    def __init__(self, model: ReadModel, producer: EventProducer) -> None:
        self.model = model
        self.producer = producer
        self.cache = SchedulerCache()
        # Pods to try, first come first served, each with the cause of the record that made it
        # pending (ids only, not the record). A hint: the pod is re-read when its turn comes.
        self._queue: dict[str, Cause | None] = {}  # None: seeded from a snapshot
        # Changes that may let parked pods in, in arrival order (duplicates collapse).
        self._changes: dict[ClusterChange, Cause] = {}
        # The unschedulable message last published per pod, until its echo is in the model.
        self._reported: dict[str, str] = {}
        # Whether each pod's resize is Infeasible, as last priced (see _STATUS_ONLY).
        self._infeasible: dict[str, bool] = {}
        self._wake = asyncio.Event()
        # Active/standby through a consumer group (`leads`): None, no group (always active).
        self.partitions: set[int] | None = None
        self._acting = asyncio.Lock()  # held while binding: a revocation waits for it
        self._yielding = False  # a revocation is waiting: stop after the pod in hand
        # Of a record it keeps its cause, not its payload: the model may adopt payloads.
        model.on_apply(self._observe, keeps_payloads=False)
        model.on_snapshot(self._seed)

    # -- active / standby ------------------------------------------------------------------------

    def share(self) -> None:
        """Join a group of schedulers: bind only while leading (none until assigned)."""
        self.partitions = set()

    @property
    def leads(self) -> bool:
        """The scheduler that holds partition LEADER_PARTITION of its group's topic binds;
        the others keep their cache warm and bind nothing. Placement shares every node's
        free room, so it does not split by key the way nodes or CloneSets do: one decides."""
        return self.partitions is None or LEADER_PARTITION in self.partitions

    async def assigned(self, partitions: set[int]) -> None:
        """The group's assignment: leading, first apply everything the last leader wrote."""
        await self.model.ready.wait()
        if LEADER_PARTITION in partitions:
            await self.model.caught_up()
        self.partitions = set(partitions)
        LEADING.set(1 if self.leads else 0)
        log.info("scheduler %s", "leading" if self.leads else "standing by")
        self._wake.set()

    async def revoked(self, partitions: set[int]) -> None:
        self._yielding = True  # a long backlog must not outlast the rebalance timeout
        try:
            async with self._acting:  # the binding in hand ends first
                self.partitions = (self.partitions or set()) - partitions
        finally:
            self._yielding = False
        LEADING.set(1 if self.leads else 0)

    # -- the read model's records -> cache and work ---------------------------------------------

    def _observe(self, record: Record) -> None:
        payload = record.envelope.payload
        cause = record.envelope.as_cause()
        if isinstance(payload, ev.PodEvent):
            changes = self._observe_pod(payload, cause)
        elif isinstance(payload, ev.NodeEvent):
            changes = self._observe_node(payload)
        else:
            return
        # Before the model has caught up, a change means nothing: the first pass after it
        # tries every pending pod anyway.
        if self.model.ready.is_set():
            for change in changes:
                self._changes.setdefault(change, cause)
        if self._queue or self._changes:
            self._wake.set()

    def _observe_pod(self, payload: ev.PodEvent, cause: Cause) -> list[ClusterChange]:
        key = object_key(payload.namespace, payload.name)
        pod: Pod | None = self.model.get("pods", (payload.namespace, payload.name))
        changes: list[ClusterChange | None] = []
        if pod is None:  # deleted
            self._queue.pop(key, None)
            self._reported.pop(key, None)
            self._infeasible.pop(key, None)
            changes.append(self.cache.remove_pod(key))
            return [c for c in changes if c is not None]
        if isinstance(payload, ev.PodEvicted):
            # Failed on its node (KEP-3953 unplug): the node gets the room back.
            changes.append(self.cache.remove_pod(key))
        changes += self._track(key, pod, cause, reprice=not isinstance(payload, _STATUS_ONLY))
        return [c for c in changes if c is not None]

    def _track(
        self, key: str, pod: PodLike, cause: Cause | None, *, reprice: bool
    ) -> list[ClusterChange | None]:
        """Count `pod` in the cache (priced again only when it may have changed) and queue it
        when it waits for a node."""
        changes: list[ClusterChange | None] = []
        infeasible = is_resize_infeasible(pod)
        flipped = self._infeasible.get(key) != infeasible
        self._infeasible[key] = infeasible
        if flipped or reprice:
            changes.append(self.cache.upsert_pod(pod))
        if pod.spec.node_name is not None or is_terminal(pod):
            self._queue.pop(key, None)
            self._reported.pop(key, None)
        elif (
            pod.spec.scheduler_name in (None, DEFAULT_SCHEDULER)
            and self.cache.placed_node(key) is None  # assumed, its PodBound on the way
            and self.cache.pending(key) is None  # parked: a change will bring it back
        ):
            self._queue.setdefault(key, cause)
        return changes

    def _seed(self) -> None:
        """Started from a snapshot: the cache and the queue from the objects (nodes first, so
        every bound pod finds its node). A placed pod counts what the projection stored for
        it (schemas.demand, priced by the same rule when it was projected); one without a
        stored demand is priced here from its resource fields."""
        for node in self.model.objects("nodes").values():
            self.cache.upsert_node(node)
        pods, priced = self.model.pods, self.model.snapshot_demands
        # Pods of one template store the same row: each distinct row is parsed once, and its
        # (frozen) demand shared by all of them.
        parsed: dict[str, tuple[PodDemand, bool]] = {}
        rest = []
        for key in pods:
            row = priced.get(key)
            node = pods.node_of(key)
            if row is None or not node:
                rest.append(key)
                continue
            if row not in parsed:
                parsed[row] = priced_row(row)
            demand, infeasible = parsed[row]
            name = object_key(*key)
            self._infeasible[name] = infeasible
            self.cache.place(name, node, demand)
        for (namespace, name), view in pods.views(rest):
            # A placed pod is priced from its resource fields; a pending one, decoded whole,
            # waits in the queue with what placing it reads (selectors, affinity, tolerations).
            pod = view if view.spec.node_name is not None else pods[(namespace, name)]
            self._track(object_key(namespace, name), pod, None, reprice=True)
        if self._queue:
            self._wake.set()

    def _observe_node(self, payload: ev.NodeEvent) -> list[ClusterChange]:
        node = self.model.get("nodes", payload.name)
        if node is None:
            self.cache.remove_node(payload.name)
            return []
        change = self.cache.upsert_node(node)
        return [change] if change is not None else []

    # -- decisions ------------------------------------------------------------------------------

    def _gauges(self) -> None:
        PENDING_PODS.labels("active").set(len(self._queue))
        PENDING_PODS.labels("unschedulable").set(self.cache.pending_count())

    async def run(self) -> None:
        await self.model.ready.wait()
        log.info(
            "caught up: %d pods to schedule, %d nodes", len(self._queue), len(self.cache.nodes())
        )
        while True:
            self._gauges()
            await self._wake.wait()
            self._wake.clear()
            async with self._acting:
                if self.leads:
                    await self._drain()

    async def _drain(self) -> None:
        """Work until nothing is left: retries for the changes first (those pods have waited
        longest), then the pods not tried yet."""
        sends: list[asyncio.Future[Position]] = []
        steps = 0
        while (self._changes or self._queue) and not self._yielding:
            steps += 1
            if steps % YIELD_EVERY == 0:
                await asyncio.sleep(0)  # a long backlog must not starve the read model
            if self._changes:
                change = next(iter(self._changes))
                cause = self._changes.pop(change)
                for key in pending_to_retry(self.cache, change):
                    await self._attempt(key, cause, sends)
            else:
                key = next(iter(self._queue))
                await self._attempt(key, self._queue.pop(key), sends)
            if len(sends) >= SEND_WINDOW:
                await self._flush(sends)
        await self._flush(sends)

    async def _flush(self, sends: list[asyncio.Future[Position]]) -> None:
        try:
            await asyncio.gather(*sends)
        finally:
            sends.clear()
        self._gauges()

    async def _attempt(
        self, key: str, cause: Cause | None, sends: list[asyncio.Future[Position]]
    ) -> None:
        namespace, name = key.split("/", 1)
        pod: Pod | None = self.model.get("pods", (namespace, name))
        if (
            pod is None
            or pod.spec.node_name is not None
            or is_terminal(pod)
            or self.cache.placed_node(key) is not None
        ):
            return  # level-triggered: only a pod pending now is scheduled
        try:
            outcome = schedule(self.cache, pod)
        except Exception:
            SCHEDULE_ATTEMPTS.labels("error").inc()
            log.exception("scheduling %s failed", key)
            return
        now = datetime.now(UTC)
        uid = pod.metadata.uid or ""
        if isinstance(outcome, Bound):
            SCHEDULE_ATTEMPTS.labels("scheduled").inc()
            self.cache.assume(pod, outcome.node_name)
            self._reported.pop(key, None)
            message = f"Successfully assigned {key} to {outcome.node_name}"
            await self._send(
                sends,
                cause,
                ev.PodBound(namespace=namespace, name=name, uid=uid, node_name=outcome.node_name),
                ev.KubeEventRecorded(
                    event=scheduling_event(
                        pod,
                        type_="Normal",
                        reason="Scheduled",
                        action="Binding",
                        message=message,
                        now=now,
                    )
                ),
            )
            return
        SCHEDULE_ATTEMPTS.labels("unschedulable").inc()
        self.cache.mark_unschedulable(pod)
        # Say it once per distinct reason: a pod retried into the same answer stays quiet
        # (after a restart too: the log's PodScheduled condition is the memory).
        if self._reported.get(key, _unschedulable_message(pod)) == outcome.message:
            return
        self._reported[key] = outcome.message
        await self._send(
            sends,
            cause,
            ev.PodUnschedulable(
                namespace=namespace,
                name=name,
                uid=uid,
                message=outcome.message,
                record=outcome.record,
            ),
            ev.KubeEventRecorded(
                event=scheduling_event(
                    pod,
                    type_="Warning",
                    reason="FailedScheduling",
                    action="Scheduling",
                    message=outcome.message,
                    now=now,
                )
            ),
        )

    async def _send(
        self,
        sends: list[asyncio.Future[Position]],
        cause: Cause | None,
        *payloads: EventPayload,
    ) -> None:
        for payload in payloads:
            envelope = Envelope.wrap(payload, producer=ROLE, cause=cause)
            headers = pod_headers(payload, self.model.state.pods)
            sends.append(await self.producer.send(envelope, headers=headers))
            EVENTS_PRODUCED.labels(ROLE, envelope.type).inc()


async def run(settings: Settings, *, host: str, port: int) -> None:
    # Its cache and queue are seeded from the snapshot's objects: start from the projection.
    # Records of types it does not read are skipped undecoded, and of a placed pod gone cold it
    # keeps the fields it prices (reads.py).
    model = ReadModel(
        settings,
        role=ROLE,
        topics=INPUT_TOPICS,
        window=0,
        snapshot=True,
        demands=True,
        accept=of_types(READS),
        pod_form=placed_json,
        fetch_wait_ms=OFF_PATH_FETCH_WAIT_MS,  # binding waits on no read of its own
    )
    producer = EventProducer(
        settings.kafka_bootstrap, client_id=ROLE, topic_prefix=settings.topic_prefix
    )
    await producer.start()
    scheduler = Scheduler(model, producer)
    config = SchedulerConfig()
    leases = PartitionLeases(
        settings.kafka_bootstrap,
        role=ROLE,
        topic=settings.topic(ev.NODES),
        group=f"{settings.topic_prefix}{ROLE}",
        on_assigned=scheduler.assigned,
        on_revoked=scheduler.revoked,
        session_timeout=config.group_session_timeout,
        instance=config.instance,
        stop_timeout=REVOKE_TIMEOUT,
    )
    scheduler.share()
    server = RoleServer(ROLE, settings, host=host, port=port, ready=model.ready.is_set)
    try:
        await server.run({"read-model": model.run, "schedule": scheduler.run, "leases": leases.run})
    finally:
        await producer.stop()
