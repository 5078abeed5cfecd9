"""The workload role: the CloneSet controller (issue 9).

A read model follows `pods` and `workloads` from offset 0 (no consumer group: it needs the
whole history, e.g. every revision's template for a rollback). Whenever it moves, each
CloneSet is reconciled by the pure planner and the plan is carried out through the
apiserver; after each write the loop waits until its own read model shows it, so the next
decision never repeats the last one. After a SIGKILL the replayed log holds every step
already taken (a pod's lifecycle label, its revision, its spec resources): nothing is asked
twice.

Several processes share the CloneSets through a consumer group on `workloads`
(inplace/core/bus/leases.py): each decides about the CloneSets of the partitions it is
assigned, and a rebalance moves whole CloneSets; the new owner first applies everything on
the log, so it resumes a rollout where the last owner left it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from inplace.core.bus.consumer import RawRecord, Record
from inplace.core.bus.headers import CONTROLLER_HEADER, header
from inplace.core.bus.leases import PartitionLeases
from inplace.core.projection.reducers import position_of
from inplace.core.readmodel import OFF_PATH_FETCH_WAIT_MS, ReadModel
from inplace.core.security.kubeconfig import Endpoint, load
from inplace.core.service import RoleServer
from inplace.core.settings import Settings
from schemas.events import PODS, WORKLOADS, PodEvent
from schemas.workload import CloneSet
from services.workload.client import ApiClient, Conflict, Refused, Unavailable
from services.workload.config import WorkloadConfig
from services.workload.metrics import OWNED_PARTITION
from services.workload.ownership import OwnedPods, controlled, decides
from services.workload.planner import (
    Action,
    CreatePod,
    DeletePod,
    Emit,
    Inputs,
    Relabel,
    Resize,
    reconcile,
    refused,
)
from services.workload.revisions import RevisionHistory

ROLE = "workload"
INPUT_TOPICS = (PODS, WORKLOADS)
IDLE_TICK = 1.0  # s: Deferred timeouts expire without any new record
MAX_BACKOFF = 30.0  # s: the longest wait before trying an unavailable apiserver again
REVOKE_TIMEOUT = 60.0  # s: a rebalance waits this long for the CloneSet in hand
log = logging.getLogger(__name__)


class Backoff:
    """The wait before trying an unavailable apiserver again: doubling from `initial` up to
    `maximum`, back to `initial` once a pass gets through."""

    def __init__(self, initial: float = IDLE_TICK, maximum: float = MAX_BACKOFF) -> None:
        self.initial = initial
        self.maximum = maximum
        self._next = initial

    def next(self) -> float:
        delay = self._next
        self._next = min(delay * 2, self.maximum)
        return delay

    def reset(self) -> None:
        self._next = self.initial


class Controller:
    def __init__(
        self,
        settings: Settings,
        model: ReadModel,
        client: ApiClient,
        config: WorkloadConfig | None = None,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._sleep = sleep
        self.settings = settings
        self.config = config or WorkloadConfig()
        self.model = model
        self.client = client
        self.history = RevisionHistory()
        self.owned = OwnedPods()
        self.wake = asyncio.Event()
        # The consumer group's share of the CloneSets (None: no group, every CloneSet).
        self.leases: PartitionLeases | None = None
        self.partitions: set[int] | None = None
        # Held while deciding about one CloneSet: a revocation waits for the one in hand.
        self._acting = asyncio.Lock()
        model.on_apply(self._observe)
        model.on_snapshot(self._seed)

    def _seed(self) -> None:
        """Started from a snapshot: which pods CloneSets own, from the pods themselves (the
        revision history comes from `workloads`, which is always read from offset 0). Pods
        no CloneSet controls are dropped: their records are skipped from here on (`accept`)."""
        pods = self.model.pods
        for key in list(pods):
            # A pod whose JSON names no controller is no CloneSet's: dropped undecoded.
            if b'"controller"' not in (pods.json(key) or b"") or not self.owned.observe(
                key, pods[key]
            ):
                del pods[key]
        self.wake.set()

    def accept(self, raw: RawRecord) -> bool:
        """Decode this record? Only pods a CloneSet controls, by the `controller` header
        (podheaders.py), before parsing; a pod whose record is skipped is not held."""
        if controlled(header(raw, CONTROLLER_HEADER)):
            return True
        if raw.key:
            namespace, _, name = raw.key.decode().partition("/")
            self.model.objects("pods").pop((namespace, name), None)
        return False

    def _observe(self, record: Record) -> None:
        self.history.apply(record)
        payload = record.envelope.payload
        if isinstance(payload, PodEvent):
            key = (payload.namespace, payload.name)
            if not self.owned.observe(key, self.model.get("pods", key)):
                return  # no CloneSet's pod: nothing to decide
        self.wake.set()

    def share(self, leases: PartitionLeases) -> None:
        """Decide only about the CloneSets of the partitions `leases` assigns (none until
        the first assignment)."""
        self.leases, self.partitions = leases, set()

    def decides(self, namespace: str, name: str) -> bool:
        count = self.leases.count if self.leases is not None else 0
        return decides(namespace, name, self.partitions, count)

    async def assigned(self, partitions: set[int]) -> None:
        """The group gave this process `partitions`: everything on the log is applied first
        (what their last owner wrote), then their CloneSets are decided about."""
        await self.model.ready.wait()
        await self.model.caught_up()
        self.partitions = set(partitions)
        for partition in partitions:
            OWNED_PARTITION.labels(str(partition)).set(1)
        log.info("workload controller deciding for partitions %s", sorted(partitions))
        self.wake.set()

    async def revoked(self, partitions: set[int]) -> None:
        """The group takes `partitions` back: once the CloneSet in hand is done, none of
        theirs is decided about here (another process may start as soon as this returns)."""
        async with self._acting:
            self.partitions = (self.partitions or set()) - partitions
        for partition in partitions:
            with contextlib.suppress(KeyError):
                OWNED_PARTITION.remove(str(partition))

    async def run(self) -> None:
        await self.model.ready.wait()
        backoff = Backoff()
        while True:
            self.wake.clear()
            clone_sets = sorted(self.model.objects("clonesets").items())
            unavailable: Unavailable | None = None
            for (namespace, name), cs in clone_sets:
                try:
                    async with self._acting:
                        if self.decides(namespace, name):
                            await self.sync(cs)
                except Conflict as exc:
                    log.info("decide again: %s", exc)
                except Refused as exc:  # not a resize (those fail the revision): retry later
                    log.warning("%s: the apiserver refused a write: %s", cs.metadata.name, exc)
                except Unavailable as exc:  # never a crash loop: back off and decide again
                    unavailable = exc
                    break
            if unavailable is not None:
                delay = backoff.next()
                log.warning("apiserver unavailable, retrying in %.1fs: %s", delay, unavailable)
                # The whole delay: records keep arriving (pods, the kubelet's statuses), and
                # letting each end the wait would hammer an apiserver that is down.
                await self._sleep(delay)
                continue
            backoff.reset()
            with contextlib.suppress(Unavailable, Refused):
                await self.collect_orphans([cs for _, cs in clone_sets])
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(IDLE_TICK):
                    await self.wake.wait()

    async def sync(self, cs: CloneSet) -> None:
        namespace, name = cs.metadata.namespace or "", cs.metadata.name or ""
        pods = [
            pod
            for key in self.owned.in_namespace(namespace)
            if (pod := self.model.get("pods", key)) is not None
        ]
        now = datetime.now(UTC)
        plan = reconcile(
            Inputs(
                clone_set=cs,
                pods=pods,
                history=self.history.of(namespace, name),
                now=now,
                vertical_enabled=self.config.vertical_scaling,
            )
        )
        for action in plan.actions:
            try:
                await self.execute(cs, action, now)
            except Refused as exc:
                if not isinstance(action, Resize):
                    raise
                log.warning("%s: resize of %s refused: %s", name, action.pod.metadata.name, exc)
                plan = refused(cs, plan.status, action.pod, exc.message, now)
                for step in plan.actions:
                    await self.execute(cs, step, now)
                break
        if plan.status != cs.status:
            new = cs.model_copy(update={"status": plan.status})
            await self._seen(await self.client.put_status(new), WORKLOADS)

    async def execute(self, cs: CloneSet, action: Action, now: datetime) -> None:
        if isinstance(action, CreatePod):
            await self._seen(await self.client.create_pod(action.pod), PODS)
        elif isinstance(action, DeletePod):
            await self._delete(cs.metadata.namespace or "", action.name)
        elif isinstance(action, Relabel):
            body = await self.client.relabel_pod(action.pod, action.labels, action.annotations)
            await self._seen(body, PODS)
        elif isinstance(action, Resize):
            log.info("resizing %s to %s", action.pod.metadata.name, action.revision)
            await self._seen(await self.client.resize_pod(action.pod, action.patch), PODS)
        elif isinstance(action, Emit):
            try:
                await self.client.record_event(cs, action.type, action.reason, action.message, now)
            except Exception:  # an Event is a courtesy to users; never stop a rollout for it
                log.warning("could not record event %s", action.reason, exc_info=True)

    async def _seen(self, body: dict[str, Any], topic: str) -> None:
        """Wait until this process's read model has applied the write that produced `body`."""
        rv = int(body["metadata"]["resourceVersion"])
        await self.model.wait_for(position_of(rv, self.settings.topic(topic)))

    async def _delete(self, namespace: str, name: str) -> None:
        await self.client.delete_pod(namespace, name)
        async with asyncio.timeout(30):
            while self.model.get("pods", (namespace, name)) is not None:
                self.wake.clear()  # set by every applied record; the main loop re-decides
                await self.wake.wait()

    async def collect_orphans(self, clone_sets: list[CloneSet]) -> None:
        """Pods whose controlling CloneSet is gone are deleted (garbage collection), by the
        process that decided about that CloneSet."""
        live = {cs.metadata.uid for cs in clone_sets}
        async with self._acting:
            for namespace, name in self.owned.orphans(live, self.decides):
                with contextlib.suppress(Conflict):
                    await self._delete(namespace, name)


def _endpoint(config: WorkloadConfig) -> Endpoint:
    """The kubeconfig's credentials; an explicitly set URL replaces its server (inside compose
    the apiserver is `apiserver`, not the host's 127.0.0.1 the kubeconfig names)."""
    url = config.apiserver_url
    if not config.kubeconfig:
        return Endpoint(url)
    endpoint = load(Path(config.kubeconfig))
    if "apiserver_url" in config.model_fields_set:
        return replace(endpoint, server=url.rstrip("/"))
    return endpoint


async def run(settings: Settings, *, host: str, port: int) -> None:
    # Pods from the projection (ownership seeded from them), CloneSets from the log.
    model = ReadModel(
        settings,
        role=ROLE,
        topics=INPUT_TOPICS,
        window=0,
        snapshot=True,
        fetch_wait_ms=OFF_PATH_FETCH_WAIT_MS,  # a rollout step waits up to this much longer
    )
    config = WorkloadConfig()
    client = ApiClient(_endpoint(config))
    controller = Controller(settings, model, client, config)
    model.accept = controller.accept  # set before the model follows the log
    leases = PartitionLeases(
        settings.kafka_bootstrap,
        role=ROLE,
        topic=settings.topic(WORKLOADS),
        group=f"{settings.topic_prefix}{ROLE}",
        on_assigned=controller.assigned,
        on_revoked=controller.revoked,
        session_timeout=config.group_session_timeout,
        instance=config.instance,
        stop_timeout=REVOKE_TIMEOUT,
    )
    controller.share(leases)
    server = RoleServer(ROLE, settings, host=host, port=port, ready=model.ready.is_set)
    try:
        await server.run(
            {"read-model": model.run, "controller": controller.run, "leases": leases.run}
        )
    finally:
        await client.close()
