"""One node's kubelet: its allocation checkpoint and the reconcile of every pod bound to it.

Reconcile is level-triggered: each event only names a pod to look at again; what to do comes
from comparing desired (spec), allocated (the checkpoint, rebuilt from Allocated events) and
actual (what the runtime reports). That is what makes a SIGKILLed kubelet converge without
applying a resize twice: after a restart the same comparison finds what is left to do.

Decisions are pure functions (`admission`, `actuation`, `resizestep` for a pod's resize,
`nodestep` for a node resize); this module does the I/O.
Pods are handled one at a time per node, in arrival order (a FIFO of pod keys).
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from inplace.core.logwriter import LogWriter, Queued
from inplace.core.readmodel import ReadModel
from schemas import events as ev
from schemas.envelope import Cause, EventPayload
from schemas.k8s import (
    RESOURCE_MEMORY,
    Event,
    EventType,
    Pod,
    ResourceList,
)
from schemas.keys import pod_key
from schemas.kubeevents import (
    MAX_MESSAGE,
    Correlator,
    SpamFilter,
    event_about,
    involved_key,
    reference,
    reference_key,
)
from schemas.nodeswap import planning_capacity
from schemas.podview import is_terminal
from schemas.quantity import Quantity
from services.kubelet.actuation import (
    Blocked,
    ContainerRuntimeState,
    RestartContainer,
    execute,
    plan_resize,
    retry_delay,
)
from services.kubelet.admission import (
    POD_LEVEL,
    Infeasible,
    NodeAllocation,
    Reject,
    Waiting,
    admit_pod,
    retry_order,
    with_resources,
)
from services.kubelet.cgroupconv import container_resources, pod_resources, requirements_from_linux
from services.kubelet.cri import (
    ContainerResources,
    LinuxContainerResources,
    RuntimeService,
    RuntimeServiceError,
)
from services.kubelet.heldallocation import HeldAllocation, HeldStep
from services.kubelet.imagechange import ImageChange, changed_images, notices
from services.kubelet.metrics import (
    DEFERRED_ACCEPTED,
    EVENTS_SPAM_FILTERED,
    INFEASIBLE_RESIZES,
    POD_RESIZE_MS,
    REQUESTED_RESIZES,
    RESIZE_REQUESTS,
    RUNTIME_OP_ERRORS,
    RUNTIME_OP_SECONDS,
)
from services.kubelet.noderesize import resync_plan, with_swap_and_oom
from services.kubelet.noderesize_metrics import RESYNC_ERRORS, RESYNC_REQUESTS
from services.kubelet.nodestep import capacity_change, resync_failure, resync_recovered, unplug
from services.kubelet.podstatus import (
    image_id,
    node_ready,
    ready_again,
    running_event,
    start_notices,
)
from services.kubelet.resizebook import ResizeBook, infeasible_detail, requested_changes
from services.kubelet.resizenotices import resize_message
from services.kubelet.resizestep import (
    Resources,
    Step,
    actuated_event,
    actuated_step,
    allocated_event,
    applied_with,
    completion,
    resizable,
    resize_step,
    resources_of,
    settled,
)
from services.kubelet.simulatedusage import UsageAnnotationError, UsageSimulator, simulated_usage

log = logging.getLogger(__name__)

NODE_KEY = ""  # queue item meaning "the node itself changed"
RESTORE_KEY = "restore"  # queue item: this node's turn to put its pods back into the runtime
RESTORE_YIELD_EVERY = 16  # pods put back into the runtime between two yields to the loop
STEP_TIMEOUT = 30.0  # a hung runtime call becomes an error instead of a stuck node


@dataclass(slots=True)
class PodRuntime:
    """Where a pod lives in the runtime: its sandbox and container ids by name."""

    sandbox_id: str
    containers: dict[str, str]


class NodeAgent:
    def __init__(
        self,
        name: str,
        checkpoint: NodeAllocation,
        *,
        runtime: RuntimeService,
        model: ReadModel,
        writer: LogWriter,
        causes: dict[str, Cause],
        step_timeout: float = STEP_TIMEOUT,
        capacity: dict[str, Any] | None = None,
        deferred_retry: tuple[float, float] = (30.0, 180.0),
        book: ResizeBook | None = None,
        recorder: Correlator | None = None,
    ) -> None:
        self.name = name
        self.book = book if book is not None else ResizeBook()
        # Events: named and aggregated by the process's correlator, then this node's
        # recorder's spam filter (each kubelet has its own).
        self.recorder = recorder if recorder is not None else Correlator()
        self.spam = SpamFilter()
        self._trigger: dict[str, str] = {}  # deferred key → what last retried it
        self._noted: dict[str, tuple[str | None, str]] = {}  # key → its InProgress note
        # Deferred resizes are also retried on a timer (first, then every), as the kubelet
        # does: some room frees up without an event we react to.
        self.deferred_retry = deferred_retry
        self._retry_timer: asyncio.TimerHandle | None = None
        self.step_timeout = step_timeout
        self._checkpoint = checkpoint
        self.runtime = runtime
        # The fake runtime takes simulated usage from pod annotations (simulatedusage.py).
        self._simulator = runtime if isinstance(runtime, UsageSimulator) else None
        self._simulating: set[str] = set()  # pods whose usage an annotation sets
        self.model = model
        self.writer = writer
        # An accepted resize's allocation, kept back while the runtime applies it
        # (heldallocation.py): any other write sends it first (`_queue`), as does a wait.
        self._held = HeldAllocation(self._send_held)
        # What was handed to the producer and not yet waited for (`_settle`).
        self._unsettled = Queued()
        self.causes = causes
        self.pods: dict[str, PodRuntime] = {}
        # The node's Ready condition as last looked at (None: not yet): its pods are made
        # Ready again when it turns True.
        self._node_ready: bool | None = None
        self.deferred: dict[str, int] = {}  # pod key → arrival sequence
        self._seq = 0
        # Keys to work on, each once, in arrival order, and the worker's wake-up while it
        # waits for one (an asyncio.Queue and a set were ~2.5 KB a node, for 1,000 nodes).
        self._queued: dict[str, None] = {}
        self._wakeup: asyncio.Future[None] | None = None
        self._attempts: dict[str, int] = {}
        self._started: dict[str, float] = {}
        self._seen_generation: dict[str, int] = {}
        self._capacity: dict[str, Any] | None = capacity  # as at registration/restart
        self._resync_failed = 0
        # Pods handed over to re-admit from the checkpoint (restart_with) before the node's
        # checkpoint is first read; then those to put back into the runtime, in log order
        # (an ordered set), on the node's turn (`restore_turn`).
        self._restart: list[tuple[str, str]] = []
        self._to_restore: dict[str, None] = {}
        self._turn: asyncio.Future[None] | None = None
        # Set while a pod (or the node) is in hand; `stopping` ends `run` after it.
        self.busy = False
        self.stopping = False

    # --- queue ------------------------------------------------------------------------------

    @property
    def queued(self) -> int:
        """Keys waiting for their reconcile (the one in hand not counted)."""
        return len(self._queued)

    def enqueue(self, key: str) -> None:
        if key not in self._queued:
            self._queued[key] = None
            if self._wakeup is not None and not self._wakeup.done():
                self._wakeup.set_result(None)

    async def _next(self) -> str:
        """The oldest queued key, once there is one."""
        while not self._queued:
            self._wakeup = asyncio.get_running_loop().create_future()
            try:
                await self._wakeup
            finally:
                self._wakeup = None
        key = next(iter(self._queued))
        del self._queued[key]
        return key

    def _retry_later(self, key: str) -> None:
        attempt = self._attempts.get(key, 0) + 1
        self._attempts[key] = attempt
        asyncio.get_running_loop().call_later(
            retry_delay(attempt, initial=0.5, maximum=60), self.enqueue, key
        )

    def _retry_deferred(self, trigger: str) -> None:
        """Resources may have freed: look at every Deferred resize again, in the kubelet's
        order (admission.retry_order); each is decided in turn by `reconcile`. `trigger`
        (pod_resized, pod_deleted, node_resized, periodic_retry) labels the acceptances."""
        waiting = [
            Waiting(pod, since)
            for key, since in self.deferred.items()
            if (pod := self._live(key)) is not None
        ]
        for key in retry_order(self.checkpoint, waiting):
            self._trigger[key] = trigger
            self.enqueue(key)

    async def _in_progress_note(
        self, key: str, generation: int | None, reason: str | None, message: str
    ) -> None:
        """Say on the PodResizeInProgress condition why an accepted resize is not done yet;
        once per distinct note (a retry that fails the same way writes nothing new)."""
        await self._settle()  # the allocation's InProgress, read below
        pod = self._live(key)
        if pod is None or pod.status.resize != "InProgress":
            return
        if self._noted.get(key) == (reason, message):
            return
        self._noted[key] = (reason, message)
        await self._write(
            ev.ResizeStatusChanged(
                **ev.pod_ids(pod),
                observed_generation=generation,
                resize="InProgress",
                reason=reason,
                message=message,
            ),
            key,
        )

    def _count(self, states: list[str]) -> None:
        for state in states:
            RESIZE_REQUESTS.labels(state).inc()

    def _deferred(self, key: str) -> None:
        """`key`'s resize is Deferred: remember since when, and keep the retry timer going."""
        if key not in self.deferred:
            self._seq += 1
            self.deferred[key] = self._seq
        if self._retry_timer is None:
            first, _ = self.deferred_retry
            loop = asyncio.get_running_loop()
            self._retry_timer = loop.call_later(first, self._periodic_retry)

    def _periodic_retry(self) -> None:
        self._retry_timer = None
        if not self.deferred:
            return  # nothing waits: the next deferral starts the timer again
        log.info("%s: periodic retry of %d deferred resizes", self.name, len(self.deferred))
        self._retry_deferred("periodic_retry")
        _, every = self.deferred_retry
        self._retry_timer = asyncio.get_running_loop().call_later(every, self._periodic_retry)

    async def run(self) -> None:
        """Work the queue until `stopping`: a node moving to another kubelet process stops
        between two pods, never inside one (what a step wrote is on the log when it ends)."""
        try:
            while not self.stopping:
                key = await self._next()
                self.busy = True
                try:
                    if key == NODE_KEY:
                        await self._node_changed()
                    elif key == RESTORE_KEY:
                        await self._restore_all()
                    else:
                        await self.reconcile(key)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    # One pod's trouble never stops the node: log it, look again later. A
                    # timeout (the log or the runtime slow to answer) is no bug: one line.
                    if isinstance(exc, TimeoutError):
                        log.warning("%s: reconcile of %s timed out; retrying", self.name, key)
                    else:
                        log.exception("%s: reconcile of %s failed; retrying", self.name, key)
                    if key not in (NODE_KEY, RESTORE_KEY):
                        self._retry_later(key)
                finally:
                    self.busy = False
                    if key == RESTORE_KEY:
                        self.end_turn()
                # A pod whose reconcile needs no I/O (a fake runtime, nothing to write) never
                # suspends: yield between pods, so a thousand agents working through a restart
                # share the loop with the log, the API and /readyz.
                await asyncio.sleep(0)
        finally:
            self.end_turn()  # stopped before its turn came: the next node's turn

    def restart_with(self, keys: list[tuple[str, str]]) -> None:
        """KEP-1287 Kubelet Restart Tolerance, for a node this process starts serving (at
        start, or taken over in a rebalance): the pods of `keys` go back into the checkpoint
        from their allocated resources before anything reads it (`checkpoint`), so every
        decision counts them, and the unsettled ones are then reconciled in log order. The
        running ones go back into the runtime on the node's turn (`restore_turn`): work that
        is queued first is served first."""
        self._restart = list(keys)

    @property
    def checkpoint(self) -> NodeAllocation:
        """The node's allocated pods (KEP-1287's checkpoint), with any handed over by
        `restart_with` re-admitted first: cheap to hand over, paid by the first reader."""
        if self._restart:
            self._readmit()
        return self._checkpoint

    @checkpoint.setter
    def checkpoint(self, value: NodeAllocation) -> None:
        self._checkpoint = value

    @property
    def readmitted(self) -> bool:
        """The pods handed over are back in the checkpoint, which holds their allocations
        from now on: the kubelet's read model keeps none of them then (ClusterState.claimed;
        two copies of every allocation were ~0.4 KB a pod)."""
        return not self._restart

    @property
    def restoring(self) -> int:
        """Pods handed over or re-admitted whose runtime is not back yet."""
        return len(self._restart) + len(self._to_restore)

    def restore_turn(self) -> asyncio.Future[None]:
        """Queue this node's turn to put its re-admitted pods back into the runtime; done
        when they are back (or the agent stopped). The kubelet grants a few nodes a turn at a
        time, so the loop stays free for the API and the log, and nodes finish one by one."""
        turn = self._turn
        if turn is None:
            turn = self._turn = asyncio.get_running_loop().create_future()
            if self.restoring:
                self.enqueue(RESTORE_KEY)
            else:
                self.end_turn()
        return turn

    def end_turn(self) -> None:
        """The node's restore turn is over (done, or the agent stopped)."""
        turn, self._turn = self._turn, None
        if turn is not None and not turn.done():
            turn.set_result(None)

    def _readmit(self) -> list[Pod]:
        """Put the handed-over pods back into the checkpoint (no event, no admission
        decision) and queue the unsettled ones in log order; the running ones, to put back
        into the runtime (also noted, for a turn that comes later)."""
        keys, self._restart = self._restart, []
        pods = self.model.pods
        checkpoint = self.model.state.allocations
        if checkpoint is None:
            checkpoint = {}
        # Their resource fields are all re-admission reads (and all the checkpoint keeps).
        mine = sorted(
            (view for _, view in pods.views([k for k in keys if k in pods])),
            key=lambda p: int(p.metadata.resource_version or 0),
        )
        allocations = [
            (pod, _resources_of_checkpoint(found) if found is not None else None)
            for pod in mine
            for found in [checkpoint.get((pod.metadata.namespace or "", pod.metadata.name or ""))]
        ]
        back = [
            with_resources(pod, allocated)
            for pod, allocated in allocations
            if allocated is not None
            and pod.spec.node_name == self.name
            and not is_terminal(pod)
            and pod_key(pod) not in self.pods  # re-admitted before a stop cut this short
        ]
        self._checkpoint = self._checkpoint.with_pods(back)
        # Held by this checkpoint from now on, not by the read model too (`readmitted`).
        for key in keys:
            checkpoint.pop(key, None)
        running = [p for p in back if p.status.phase == "Running"]
        self._to_restore.update((pod_key(p), None) for p in running)
        # A settled pod has nothing to reconcile: its runtime is put back as the log says it
        # is. (Reconciling every pod after a 50,000-pod restart took ~13 s of CPU, in a
        # profile, before a new resize on any node got its turn.) An unsettled one starts
        # its runtime itself, if it has to, when it is reconciled (`_actuate`).
        for pod, allocated in allocations:
            if allocated is None or not settled(pod, allocated):
                self.enqueue(pod_key(pod))
        return running

    async def _restore_all(self) -> None:
        """Put every re-admitted running pod back into the runtime at its allocation."""
        fresh = {pod_key(p): p for p in self._readmit()} if self._restart else {}
        for count, key in enumerate(list(self._to_restore), 1):
            del self._to_restore[key]
            # Its allocation as re-admitted (or as now, if re-admitted before this turn);
            # none if released meanwhile.
            allocated = fresh.get(key) or self._checkpoint.allocated(key)
            if allocated is not None and key not in self.pods:
                await self._start(key, allocated)
            if count % RESTORE_YIELD_EVERY == 0:
                await asyncio.sleep(0)  # see `run`

    # --- helpers ----------------------------------------------------------------------------

    def _pod(self, key: str) -> Pod | None:
        # A private copy: the read model changes its objects in place as events arrive, and
        # a decision must not see its input change across an await.
        namespace, _, name = key.partition("/")
        return self.model.pods.private((namespace, name))

    def _live(self, key: str) -> Pod | None:
        """The read model's own object, for identity (immutable metadata) and reads that
        finish before the next await: deep copies were ~15% of the kubelet's CPU under load."""
        namespace, _, name = key.partition("/")
        pod: Pod | None = self.model.get("pods", (namespace, name))
        return pod

    async def _write(self, payload: EventPayload, key: str) -> None:
        await self._queue([payload], key)
        await self._settle()

    async def _queue(self, writes: list[EventPayload], key: str) -> None:
        """Hand `writes` to the producer after what this agent queued or held before, unwaited."""
        await self._held.flush()
        if writes:
            queued = await self.writer.queue(writes, cause=self.causes.get(key))
            self._unsettled += queued  # not `+= await`: the held step's send may add meanwhile

    async def _send_held(self, held: HeldStep) -> None:
        """The held allocation (with its Events) to the producer as it was decided, unwaited."""
        writes = self._writes_of(held.pod, held.step)
        queued = await self.writer.queue(writes, cause=self.causes.get(held.key))
        self._unsettled += queued

    async def _settle(self) -> None:
        """Wait until what this agent queued (or held) is on the log and in its read model."""
        await self._held.flush()
        queued, self._unsettled = self._unsettled, Queued()
        if queued.sent:
            await self.writer.settle(queued)

    async def _event(self, pod: Pod, reason: str, message: str, kind: EventType = "Normal") -> None:
        event = self._event_of(pod, reason, message, kind)
        if event is not None:
            await self._write(event, pod_key(pod))

    def _event_of(
        self, pod: Pod, reason: str, message: str, kind: EventType
    ) -> ev.KubeEventRecorded | None:
        """The Event to write, or None when the spam filter holds it back (schemas.kubeevents:
        25 about one pod, then one every 5 minutes, as a kubelet's recorder allows). Named by
        this node's recorder first, then built once (two an accepted resize)."""
        meta = pod.metadata
        involved = reference("Pod", meta, versioned=False)
        key = reference_key(involved)
        now = time.monotonic()
        name, message = self.recorder.name_event(
            key,
            object_name=meta.name or "",
            type_=kind,
            reason=reason,
            message=message[:MAX_MESSAGE],
            now=now,
        )
        if not self._allowed(key, now):
            return None
        event = event_about(
            involved,
            name=name,
            namespace=meta.namespace,
            reason=reason,
            message=message,
            type_=kind,
            component="kubelet",
            instance=self.name,
            host=self.name,
        )
        return ev.KubeEventRecorded(event=event)

    def _record(self, event: Event) -> Event | None:
        """`event` as this node's recorder writes it (client-go's correlator: named by its
        first occurrence, aggregated), or None when its spam filter holds it back."""
        now = time.monotonic()
        recorded = self.recorder.correlate(event, now)
        return recorded if self._allowed(involved_key(event), now) else None

    def _allowed(self, key: str, now: float) -> bool:
        """Does the spam filter let an Event about `key` by (counted when it does not)?"""
        if self.spam.allow(key, now):
            return True
        EVENTS_SPAM_FILTERED.inc()
        return False

    # --- node -------------------------------------------------------------------------------

    async def _restore_readiness(self, key: str, pod: Pod) -> None:
        """Ready again, once the node is, when the node lifecycle marked the pod not ready."""
        if key in self.pods and ready_again(pod, self.model.get("nodes", self.name)):
            await self._write(ev.PodReadinessChanged(**ev.pod_ids(pod), ready=True), key)

    async def _node_changed(self) -> None:
        """KEP-3953: the node's capacity changed. Re-admit what runs (evicting by QoS when it no
        longer fits), resync swap limits and OOM score adj, then retry Deferred resizes; what
        to do is nodestep.py's. A failed resync is retried from the top. A node Ready again
        (after its heartbeats stopped) makes its pods Ready again."""
        await self._restore_all()  # evictions and swap limits see every pod
        node = self.model.get("nodes", self.name)
        if node is None or node.status is None:
            return
        ready = node_ready(node)
        if ready and self._node_ready is not True:
            for key in list(self.pods):
                if (pod := self._live(key)) is not None:
                    await self._restore_readiness(key, pod)
        self._node_ready = ready
        change = capacity_change(node.status, self.checkpoint, self._capacity, self._resync_failed)
        if change is None:
            return
        if change.resync_requested:
            RESYNC_REQUESTS.labels(self.name).inc()
        self._capacity = change.capacity
        self.checkpoint = self.checkpoint.with_allocatable(change.allocatable)
        if change.starved:
            await self._unplug(change.allocatable)
        try:
            plan = resync_plan(
                self.name,
                list(self.checkpoint.pods.values()),
                change.old_capacity,
                change.capacity,
                node.status.initial_capacity,
            )
            for update in plan:
                runtime = self.pods.get(update.pod)
                cid = runtime.containers.get(update.container) if runtime else None
                if cid is None:
                    continue
                status = await self.runtime.container_status(cid)
                current = status.resources.linux if status.resources else None
                await self.runtime.update_container_resources(
                    cid,
                    ContainerResources(linux=update.apply(current or LinuxContainerResources())),
                )
        except (RuntimeServiceError, ValueError) as exc:
            self._resync_failed += 1
            RESYNC_ERRORS.labels(self.name).inc()
            failed, condition, event = resync_failure(self.name, str(exc), self._resync_failed)
            await self._write_node(failed)
            await self._write_node(condition)
            recorded = self._record(event.event)
            if recorded is not None:
                await self._write_node(ev.KubeEventRecorded(event=recorded))
            asyncio.get_running_loop().call_later(
                retry_delay(self._resync_failed, initial=0.5, maximum=60), self.enqueue, NODE_KEY
            )
            return
        if self._resync_failed:
            self._resync_failed = 0
            await self._write_node(resync_recovered(self.name))
        self._retry_deferred("node_resized")

    async def _unplug(self, allocatable: ResourceList) -> None:
        """Evict what no longer fits (nodestep.unplug), between the starvation conditions."""
        pods = list(self.checkpoint.pods.values())
        step = unplug(allocatable, pods, await self._memory_usage())
        await self._write_node(ev.NodeConditionChanged(name=self.name, condition=step.before))
        for key in step.evict:
            pod = self._live(key)
            if pod is not None:
                await self._write(
                    ev.PodEvicted(
                        **ev.pod_ids(pod),
                        node_name=self.name,
                        reason="Evicted",
                        message=step.message,
                    ),
                    key,
                )
                await self._event(pod, "Evicted", step.message, "Warning")
            await self._release(key)
        await self._write_node(ev.NodeConditionChanged(name=self.name, condition=step.after))

    async def _memory_usage(self) -> dict[str, ResourceList]:
        """Measured memory per running pod: evictions rank Burstable pods by usage over request
        and need it to see what a BestEffort pod (no requests) holds. A container the runtime
        cannot measure counts as using nothing."""
        usage: dict[str, ResourceList] = {}
        for key, runtime in self.pods.items():
            total = 0
            for cid in runtime.containers.values():
                try:
                    total += await self.runtime.container_memory_usage(cid)
                except RuntimeServiceError as exc:
                    log.warning("%s: memory usage of %s: %s", self.name, key, exc)
            usage[key] = {RESOURCE_MEMORY: Quantity.from_int(total, "BinarySI")}
        return usage

    async def _write_node(self, payload: EventPayload) -> None:
        await self.writer.write(payload)

    # --- pods -------------------------------------------------------------------------------

    async def reconcile(self, key: str) -> None:
        pod = self._live(key)
        mine = pod is not None and pod.spec.node_name == self.name and not is_terminal(pod)
        if pod is None or not mine:
            if key in self.checkpoint.pods:  # admitted (asked without decoding its allocation)
                await self._release(key)
            return
        if key not in self.checkpoint.pods:
            admitting = self._pod(key)  # admission reads its pod across awaits
            if admitting is None or not await self._admit(key, admitting):
                return
            pod = self._live(key)
            if pod is None:
                return
        elif pod.status.phase == "Pending":
            # Admitted, its start cut short: the Allocated landed but was not read back in
            # time, or the kubelet stopped before Running. Start it now, admitted as it was.
            if not await self._run(key, pod):
                return
            pod = self._live(key)
            if pod is None:
                return
        if changes := changed_images(pod):
            if not await self._restart_with_images(key, pod, changes):
                return
            pod = self._live(key)
            if pod is None:
                return
        if self._simulator is not None:
            self._simulate_usage(key, pod, self._simulator)
        await self._restore_readiness(key, pod)
        await self._reconcile_resize(key, pod)

    def _simulate_usage(self, key: str, pod: Pod, simulator: UsageSimulator) -> None:
        """Set what the pod's containers use from its usage annotations (fake nodes)."""
        runtime = self.pods.get(key)
        if runtime is None:
            return
        try:
            wanted = simulated_usage(pod)
        except UsageAnnotationError as exc:
            log.warning("%s: simulated usage of %s ignored: %s", self.name, key, exc)
            return
        if not wanted and key not in self._simulating:
            return  # the usual case: nothing asked, nothing set before
        for name, cid in runtime.containers.items():
            usage = wanted.get(name)  # an annotation removed: back to nothing
            simulator.set_cpu_usage(cid, usage.cpu_nanocores if usage else 0)
            simulator.set_memory_usage(cid, usage.memory_bytes if usage else 0)
        if wanted:
            self._simulating.add(key)
        else:
            self._simulating.discard(key)

    async def _restart_with_images(self, key: str, pod: Pod, changes: list[ImageChange]) -> bool:
        """Restart each container whose image changed (imagechange.py) and write what it
        runs now with the kubelet's Events; False when the runtime failed (retried later)."""
        runtime = self.pods.get(key)
        if runtime is None:
            return True  # not started here yet: it starts with the spec's images
        ids, generation = ev.pod_ids(pod), pod.metadata.generation or 1
        writes: list[EventPayload] = []
        for change in changes:
            cid = runtime.containers.get(change.container)
            if cid is None:
                continue
            try:
                await self.runtime.stop_container(cid)
                await self.runtime.start_container(cid)
                status = await self.runtime.container_status(cid)
            except RuntimeServiceError as exc:
                RUNTIME_OP_ERRORS.labels("restart_container").inc()
                log.warning("%s: cannot restart %s of %s: %s", self.name, cid, key, exc)
                self._retry_later(key)
                return False
            writes.append(
                ev.ContainerRestarted(
                    **ids,
                    observed_generation=generation,
                    container=change.container,
                    restart_count=status.restart_count,
                    reason="ImageChanged",
                    image=change.image,
                    image_id=image_id(change.image),
                )
            )
            events = (self._event_of(pod, r, m, "Normal") for r, m in notices(change))
            writes += [e for e in events if e is not None]
        if writes:
            await self.writer.write_all(writes, cause=self.causes.get(key))
        return True

    async def _admit(self, key: str, pod: Pod) -> bool:
        decision = admit_pod(self.checkpoint, pod)
        if isinstance(decision, Reject):
            if pod.status.phase != "Failed":
                await self._write(
                    ev.PodPhaseChanged(
                        **ev.pod_ids(pod),
                        observed_generation=pod.metadata.generation,
                        phase="Failed",
                        reason=decision.reason,
                        message=decision.message,
                    ),
                    key,
                )
                await self._event(pod, decision.reason, decision.message, "Warning")
            return False
        admitted = decision.pod.model_copy(deep=True)
        self.checkpoint = self.checkpoint.with_pod(admitted)
        try:
            await self._write(allocated_event(pod, admitted, self.name), key)
        except TimeoutError:
            raise  # on the log, not read back yet: the retry starts the pod (`reconcile`)
        except Exception:
            # Not on the log: the retry admits it again.
            self.checkpoint = self.checkpoint.without_pod(key)
            raise
        return await self._run(key, pod)

    async def _run(self, key: str, pod: Pod) -> bool:
        """Start an admitted pod at its allocation and report it Running."""
        admitted = self.checkpoint.allocated(key)
        if admitted is None:
            return False
        if key not in self.pods and not await self._start(key, admitted):
            return False
        await self._publish_actual(key, pod.metadata.generation)
        runtime = self.pods[key]
        node = self.model.get("nodes", self.name)
        # The containers' Pulled / Created / Started Events, then Running, in one write.
        notices = start_notices(pod, runtime.containers)
        events = [self._event_of(pod, reason, message, "Normal") for reason, message in notices]
        running = running_event(pod, self.name, node, runtime.containers)
        await self._queue([*(e for e in events if e is not None), running], key)
        await self._settle()
        return True

    async def _start(self, key: str, allocated: Pod) -> bool:
        """Sandbox and containers at the allocated resources (what a restart re-creates)."""
        try:
            sandbox = await self.runtime.run_pod_sandbox(
                allocated.metadata.uid or key, resources=pod_resources(allocated)
            )
            ids: dict[str, str] = {}
            targets = self._linux_targets(allocated)
            for c in resizable(allocated):
                cid = await self.runtime.create_container(
                    sandbox,
                    c.name,
                    ["sleep", "infinity"],
                    ContainerResources(linux=targets[c.name]),
                )
                await self.runtime.start_container(cid)
                ids[sys.intern(c.name)] = cid  # held for as long as the pod runs
        except RuntimeServiceError as exc:
            RUNTIME_OP_ERRORS.labels("start_container").inc()
            log.warning("%s: cannot start %s: %s", self.name, key, exc)
            self._retry_later(key)
            return False
        self.pods[key] = PodRuntime(sandbox, ids)
        return True

    def _linux_targets(self, allocated: Pod) -> dict[str, LinuxContainerResources]:
        """The CRI resources of an allocation, with the swap limit and OOM score adj the node's
        current capacity gives it (so neither a start nor a pod resize drops them)."""
        linux = {
            c.name: container_resources(c.resources).linux or LinuxContainerResources()
            for c in resizable(allocated)
        }
        node = self.model.get("nodes", self.name)
        if node is None or node.status is None:
            return linux
        try:
            status = node.status
            return with_swap_and_oom(
                self.name, allocated, planning_capacity(status), status.initial_capacity, linux
            )
        except ValueError as exc:
            # Larger than the node after an unplug: eviction deals with the pod, not this.
            log.warning("%s: no swap limit for %s: %s", self.name, pod_key(allocated), exc)
            return linux

    async def _release(self, key: str) -> None:
        runtime = self.pods.pop(key, None)
        if runtime is not None:
            try:
                await self.runtime.stop_pod_sandbox(runtime.sandbox_id)
                await self.runtime.remove_pod_sandbox(runtime.sandbox_id)
            except RuntimeServiceError as exc:
                log.warning("%s: removing %s: %s", self.name, key, exc)
        self.checkpoint = self.checkpoint.without_pod(key)
        self.deferred.pop(key, None)
        self._trigger.pop(key, None)
        self._noted.pop(key, None)
        self._started.pop(key, None)
        self._simulating.discard(key)
        self._count(self.book.close(key, "canceled"))  # deleted or terminated mid-resize
        self._retry_deferred("pod_deleted")

    async def _reconcile_resize(self, key: str, pod: Pod) -> None:
        try:
            await self._resize(key, pod)
        except asyncio.CancelledError:
            self._held.drop()  # the agent stops
            self._unsettled = Queued()
            raise
        except Exception:
            # The allocation is in the checkpoint: it goes on the log. What was queued reaches
            # the log anyway; the retry reads it from there.
            await self._held.flush()
            self._unsettled = Queued()
            raise
        await self._settle()

    async def _resize(self, key: str, pod: Pod) -> None:
        """Carry out what `resize_step` decides (resizestep.py: the pure part), with the
        bookkeeping around it: the checkpoint, metrics, the Deferred queue and its timer.

        `pod` is the read model's own object (`_live`): everything read from it is read
        before the first await (the decision, and the checkpoint's JSON of the new
        allocation); after it, only its immutable identity (a private copy per reconcile
        was ~11% of the kubelet's CPU under load)."""
        generation = pod.metadata.generation or 1
        allocated_pod = self.checkpoint.allocated(key)
        assert allocated_pod is not None
        if pod.status.resize == "Proposed" and self._seen_generation.get(key) != generation:
            self._seen_generation[key] = generation
            self._count(self.book.propose(key))
            before, after = resources_of(allocated_pod), resources_of(pod)
            for resource, requirement, operation in requested_changes(before, after):
                REQUESTED_RESIZES.labels(resource, requirement, operation).inc()
        step = resize_step(self.checkpoint, pod, self.name)
        self._book(key, pod, step)
        if step.allocation is not None:
            # Held as JSON from here (allocatedpods.py): nothing of the live pod is kept.
            self.checkpoint = self.checkpoint.with_pod(step.allocation)
        # An accepted allocation is held while the runtime applies it: what the runtime then
        # reports goes out in the same record (`_publish_actual`). A crash before it leaves
        # the proposal open on the log, decided again from the allocations the log has, as
        # after any restart. Any other write, and any wait, sends it first.
        if step.allocation is not None and step.outcome not in ("deferred", "infeasible"):
            self._held.hold(HeldStep(key, pod, step))
        else:
            await self._carry_out(key, pod, step)
        if step.frees_room:
            self._retry_deferred("pod_resized")
        if step.outcome in ("deferred", "infeasible"):
            # A waiting proposal never stops the current allocation from being applied
            # (e.g. one a SIGKILL cut off mid-actuation).
            await self._actuate(key, generation)
            return
        if not await self._actuate(key, generation, complete=True):
            return
        await self._settle()
        # Usually the Allocated or Actuated just written completed it; this completes a
        # resize whose actual resources the log already showed (nothing new to report).
        pod = self._live(key)
        allocated = resources_of(self.checkpoint.allocated(key) or pod)  # type: ignore[arg-type]
        done = completion(pod, allocated) if pod is not None else None
        if done is not None and pod is not None:
            await self._carry_out(key, pod, done)
            self._resize_completed(key)

    def _resize_completed(self, key: str) -> None:
        """Bookkeeping once status.resize is cleared: the book, the resize duration metric."""
        self._noted.pop(key, None)
        self._count(self.book.close(key, "completed"))
        started = self._started.pop(key, None)
        if started is not None:
            POD_RESIZE_MS.labels("true").observe((time.monotonic() - started) * 1000)
        self._attempts.pop(key, None)

    async def _carry_out(self, key: str, pod: Pod, step: Step) -> None:
        # One step's events were decided together: one write, one wait (the allocation with
        # what the runtime applied and its Events, or a status and its Event).
        await self._queue(self._writes_of(pod, step), key)
        await self._settle()

    def _writes_of(self, pod: Pod, step: Step) -> list[EventPayload]:
        """A step's log events, then its Kubernetes Events (those the spam filter lets by)."""
        events = [self._event_of(pod, n.reason, n.message, n.type) for n in step.notices]
        return [*step.writes, *(e for e in events if e is not None)]

    def _book(self, key: str, pod: Pod, step: Step) -> None:
        """Metrics and the Deferred queue for one step (kubelet_* resize metrics, ResizeBook)."""
        if step.outcome == "deferred":
            self._deferred(key)
            self.book.wait(key, "deferred")
            if step.writes:  # newly Deferred
                RESIZE_REQUESTS.labels("deferred").inc()
            return
        if step.outcome in ("unchanged", "resume"):
            if key in self.deferred:
                # The user went back to what is allocated while the resize waited.
                self.deferred.pop(key)
                self._count(self.book.close(key, "canceled"))
            if step.outcome == "resume":
                self._started.setdefault(key, time.monotonic())
            return
        self.deferred.pop(key, None)
        trigger = self._trigger.pop(key, None)
        if step.outcome == "infeasible":
            self.book.wait(key, "infeasible")
            closed = self.book.close(key, "infeasible")
            self._count(closed)
            if closed and isinstance(step.decision, Infeasible):
                INFEASIBLE_RESIZES.labels(infeasible_detail(step.decision.record)).inc()
            return
        self._started[key] = time.monotonic()
        self._noted.pop(key, None)  # a new allocation: earlier notes were about another
        if self.book.accept(key):
            DEFERRED_ACCEPTED.labels(trigger or "periodic_retry").inc()

    async def _actuate(self, key: str, generation: int | None, *, complete: bool = False) -> bool:
        """Bring the runtime to the allocation; True when actual == allocated. What it writes
        observes `generation` (the spec this reconcile decided on); `complete`: its Actuated
        may complete the open resize (an accepted one, not one left Deferred / Infeasible)."""
        allocated_pod = self.checkpoint.allocated(key)
        runtime = self.pods.get(key)
        if allocated_pod is None:
            return False
        if runtime is None:
            if not await self._start(key, allocated_pod):
                return False
            runtime = self.pods[key]
        policies = {c.name: c.resize_policy for c in resizable(allocated_pod)}
        try:
            states = []
            for name, cid in runtime.containers.items():
                status = await self.runtime.container_status(cid)
                states.append(
                    ContainerRuntimeState(
                        name=name,
                        container_id=cid,
                        running=status.state == "running",
                        resources=status.resources.linux if status.resources else None,
                        memory_usage=await self.runtime.container_memory_usage(cid),
                    )
                )
            sandbox = await self.runtime.pod_sandbox_status(runtime.sandbox_id)
        except RuntimeServiceError as exc:
            RUNTIME_OP_ERRORS.labels("container_status").inc()
            log.warning("%s: reading %s from the runtime: %s", self.name, key, exc)
            self._retry_later(key)
            return False
        targets = self._linux_targets(allocated_pod)
        plan = plan_resize(
            states,
            targets,
            policies,
            sandbox.resources,
            pod_resources(allocated_pod),
            sandbox_id=runtime.sandbox_id,
        )
        if isinstance(plan, Blocked):
            # KEP-1287: a memory limit below usage is not applied; stays InProgress, retried,
            # and says why on the PodResizeInProgress condition (not only in our log).
            log.info("%s: resize of %s blocked: %s", self.name, key, plan.reason)
            await self._in_progress_note(key, generation, None, f"held back: {plan.reason}")
            self._retry_later(key)
            return False
        started = time.monotonic()
        result = await execute(
            plan, self.runtime, read_back=runtime.containers, step_timeout=self.step_timeout
        )
        if plan:
            RUNTIME_OP_SECONDS.labels("container_update").observe(time.monotonic() - started)
        pod = self._live(key)
        for step in result.completed:
            if isinstance(step, RestartContainer) and pod is not None:
                status = result.statuses.get(step.container)
                await self._write(
                    ev.ContainerRestarted(
                        **ev.pod_ids(pod),
                        observed_generation=generation,
                        container=step.container,
                        restart_count=status.restart_count if status else 1,
                        reason="ResizeRestartContainer",
                    ),
                    key,
                )
        done = complete and result.ok and not result.read_errors
        await self._publish_actual(key, generation, result.actual, complete=done)
        if not result.ok:
            RUNTIME_OP_ERRORS.labels("container_update").inc()
            if pod is not None:
                allocated_pod = self.checkpoint.allocated(key) or pod
                message = resize_message("Pod resize error", allocated_pod, generation or 1,
                                         str(result.error))  # fmt: skip
                await self._event(pod, "ResizeError", message, "Warning")
            self._resize_failed(key)
            # PodResizeInProgress reason Error with the runtime's message, as the 1.33+ kubelet.
            await self._in_progress_note(key, generation, "Error", str(result.error))
            self._retry_later(key)  # stop, back off exponentially, retry (KEP-1287)
            return False
        if result.read_errors:
            self._retry_later(key)
            return False
        self._attempts.pop(key, None)
        return True

    def _resize_failed(self, key: str) -> None:
        """kubelet_pod_resize_duration_milliseconds{success="false"}: an attempt at an accepted
        resize failed in the runtime, as the kubelet records a failed resize action; the retry
        is measured from now."""
        started = self._started.get(key)
        if started is None:
            return
        now = time.monotonic()
        POD_RESIZE_MS.labels("false").observe((now - started) * 1000)
        self._started[key] = now

    async def _publish_actual(
        self,
        key: str,
        generation: int | None,
        linux: Mapping[str, object] | None = None,
        *,
        complete: bool = False,
    ) -> None:
        """Actuated with what the runtime reports, when it differs from what the log says;
        `complete` (the actuation succeeded): clearing status.resize with it when that
        completes the open resize (resizestep.actuated_step), and reported in the held
        allocation's Allocated when there is one (resizestep.applied_with)."""
        allocated_pod = self.checkpoint.allocated(key)
        runtime = self.pods.get(key)
        pod = self._live(key)
        if allocated_pod is None or runtime is None or pod is None:
            return
        allocated = resources_of(allocated_pod)
        if linux is None:
            linux = {}
            for name, cid in runtime.containers.items():
                status = await self.runtime.container_status(cid)
                linux[name] = status.resources.linux if status.resources else None
        actual = {
            n: requirements_from_linux(linux.get(n), allocated.get(n))  # type: ignore[arg-type]
            for n in runtime.containers
        }
        if POD_LEVEL in allocated:
            # Pod-level resources as the pod's cgroup has them (the sandbox's resources).
            sandbox = await self.runtime.pod_sandbox_status(runtime.sandbox_id)
            actual[POD_LEVEL] = requirements_from_linux(sandbox.resources, allocated[POD_LEVEL])
        event = actuated_event(pod, self.name, generation, actual)
        if event is None:
            return
        if not complete:
            await self._write(event, key)
            return
        step = actuated_step(pod, allocated, actual, event)
        held = self._held.take(key)
        if held is not None:  # the allocation goes out with what the runtime applied
            step = applied_with(held.step, step)
        await self._carry_out(key, pod, step)
        if step.outcome == "completed":
            self._resize_completed(key)


def _resources_of_checkpoint(raw: bytes) -> Resources:
    """A checkpointed pod's allocated resources (requests AND limits) per container name, and
    the pod-level ones under POD_LEVEL, from its Allocated's JSON (ClusterState.allocations)."""
    allocated = ev.Allocated.model_validate_json(raw)
    resources = {c.name: c.resources for c in [*allocated.init_containers, *allocated.containers]}
    if allocated.pod_resources is not None:
        resources[POD_LEVEL] = allocated.pod_resources
    return resources
