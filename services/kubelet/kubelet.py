"""The kubelet process: many simulated nodes, one read model of pods and nodes, one runtime.

Start-up follows KEP-1287's Kubelet Restart Tolerance: fold the log (the read model replays it
from offset 0), join the kubelet group for a share of the nodes, register missing nodes,
re-admit every pod of them from its allocated checkpoint first, and only then look at pending
resizes. A node that moves to this process in a rebalance is taken over the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from functools import partial

from inplace.core.bus.consumer import RawRecord, Record
from inplace.core.bus.headers import NODE_HEADER, header
from inplace.core.bus.leases import PartitionLeases
from inplace.core.bus.producer import EventProducer, Position
from inplace.core.logwriter import LogWriter
from inplace.core.projection.snapshot import load_causes
from inplace.core.readmodel import ReadModel
from inplace.core.settings import Settings
from schemas import events as ev
from schemas.envelope import Cause
from schemas.k8s import Node, Pod
from schemas.keys import object_key
from schemas.kubeevents import Correlator
from schemas.nodeswap import planning_capacity
from schemas.podview import PodProgress, resize_open
from schemas.usage import USAGE
from services.kubelet import podfilter
from services.kubelet.admission import NodeAllocation
from services.kubelet.config import KubeletConfig
from services.kubelet.cri import RuntimeService
from services.kubelet.metrics import (
    IN_PROGRESS_RESIZES,
    OWNED_NODE,
    PENDING_RESIZES,
    PODS_RESTORING,
    QUEUED_RECONCILES,
)
from services.kubelet.nodeagent import NODE_KEY, NodeAgent
from services.kubelet.nodes import node_names, node_object
from services.kubelet.ownership import owned
from services.kubelet.resizebook import ResizeBook
from services.kubelet.runtime_cgroup import CgroupRuntime, cgroup_support
from services.kubelet.runtime_fake import FakeRuntime
from services.kubelet.usage import UsageSampler, sample_forever

ROLE = "kubelet"
RESTORES_AT_ONCE = 4  # nodes putting their re-admitted pods back into the runtime at once
# Fetches are held (config.fetch_wait_ms) only while at least this many reconciles wait in
# the node agents' queues, counted at most every BACKLOG_EVERY_S: a record fetched a few ms
# sooner would wait behind them anyway, so holding costs no latency then. With less queued
# (a closed loop, a paced load) every fetch returns at once, as a resize waits on it.
BACKLOG_TO_HOLD = 16
BACKLOG_EVERY_S = 0.05
log = logging.getLogger(__name__)


@contextlib.asynccontextmanager
async def open_runtime(settings: Settings, config: KubeletConfig) -> AsyncIterator[RuntimeService]:
    if config.runtime == "cgroup":
        reason = cgroup_support()
        if reason is not None:
            raise RuntimeError(f"the cgroup runtime cannot run here: {reason}")
        async with CgroupRuntime(settings.topic_prefix.strip(".") or config.node_prefix) as runtime:
            yield runtime
    else:
        fake = FakeRuntime(latency=config.runtime_latency, keep_calls=False)
        try:
            yield fake
        finally:
            await fake.close()


# What the node agents' writes about a pod answer (their cause and correlation): the last
# thing asked of the kubelet (a pod to run, a spec or resize to apply, an eviction or a
# deletion), not another controller's note about the pod since (the node lifecycle's
# readiness, the scheduler's Unschedulable, a refused resize), which would take the answer
# to a resize away from the request that asked for it.
ASKS = (
    ev.PodCreated,
    ev.PodBound,
    ev.PodUpdated,
    ev.ResizeProposed,
    ev.PodEvicted,
    ev.PodDeleted,
)


class Kubelet:
    """One kubelet process. Processes of one configuration (the same node names) share the
    nodes through a consumer group on the `nodes` topic (inplace/core/bus/leases.py): each
    serves the nodes of the partitions it is assigned, and a rebalance moves whole nodes,
    re-admitted by their new owner from the allocation checkpoint on the log (KEP-1287
    restart tolerance, across processes)."""

    def __init__(
        self, settings: Settings, runtime: RuntimeService, config: KubeletConfig | None = None
    ) -> None:
        self.settings = settings
        self.config = config or KubeletConfig()
        self.runtime = runtime
        # Pods, nodes and the allocation checkpoint, from the projection and the log after it.
        self.model = ReadModel(
            settings,
            role=ROLE,
            topics=(ev.PODS, ev.NODES),
            window=0,
            fetch_wait_ms=self.config.fetch_wait_ms,
            hold_while=self._backlogged,
            snapshot=self.config.start_from_projection,
            allocations=True,
            open_resizes=True,
            claimed=self._allocation_held,
            accept=self._accept,
        )
        # The nodes whose pod records this process decodes (podfilter.decode), from the first
        # assignment on: until then every record is (the process does not know its nodes yet,
        # so none has to be taken over later).
        self.owned: set[str] = set()
        self._filtering = False
        self._skipped: set[tuple[str, str]] = set()  # this batch's pods bound elsewhere
        self._adopting: set[str] = set()  # simulated nodes being taken over
        self._to_adopt: list[str] = []  # registered, their take-over not begun yet
        self.names = node_names(self.config)
        self.agents: dict[str, NodeAgent] = {}
        # The latest request per pod (ASKS): what the node agents' writes about it answer.
        self.causes: dict[str, Cause] = {}
        # The pods whose row in the snapshot said their resize was open (`_seed_open`).
        self._open_in_snapshot: set[tuple[str, str]] = set()
        self.model.on_snapshot(self._seed_open)
        self.recorder = Correlator()  # names and aggregates the Events of every node here
        # One book of resize outcomes for every node this process serves (pod keys are unique).
        self.book = ResizeBook()
        self.started = False  # the first assignment is served
        self.serving = False  # between a revocation and the next assignment: no node is ours
        self.partitions: set[int] = set()
        self.leases = PartitionLeases(
            settings.kafka_bootstrap,
            role=ROLE,
            topic=settings.topic(ev.NODES),
            group=f"{settings.topic_prefix}{ROLE}-{self.config.node_prefix}",
            on_assigned=self._assigned,
            on_revoked=self._revoked,
            session_timeout=self.config.group_session_timeout,
            instance=f"{self.config.instance}/{self.config.node_prefix}",
            stop_timeout=self.config.runtime_timeout,
        )
        self._backlog = 0  # reconciles queued over the node agents, when last counted
        self._backlog_counted = 0.0
        # pod key → the node agent it was last routed to (the only one that may hold it).
        self._routed: dict[str, str] = {}
        self._workers: dict[str, asyncio.Task[None]] = {}
        self._restore_wanted = asyncio.Event()  # nodes were handed pods to re-admit
        PODS_RESTORING.set_function(lambda: self.restoring)
        QUEUED_RECONCILES.set_function(self.queued_reconciles)
        # The resize gauges are read from the process's book when scraped, not set per step.
        for reason in ("deferred", "infeasible"):
            PENDING_RESIZES.labels(reason).set_function(partial(self.book.pending_count, reason))
        IN_PROGRESS_RESIZES.set_function(lambda: len(self.book.in_progress))
        self._writer: LogWriter
        self._wrote: Callable[[Position], bool] = lambda _: False  # its writer's `own`
        # It routes pods by name and keeps a cause at most: the model may adopt payloads.
        self.model.on_apply(self._on_apply, keeps_payloads=False)
        self.model.on_batch(self._forget_skipped)

    def queued_reconciles(self) -> int:
        """What the node agents of this process have yet to reconcile."""
        return sum(agent.queued for agent in self.agents.values())

    def _backlogged(self) -> bool:
        """Enough work queued in the node agents to hold fetches (BACKLOG_TO_HOLD)."""
        now = time.monotonic()
        if now >= self._backlog_counted + BACKLOG_EVERY_S:
            self._backlog_counted = now
            self._backlog = self.queued_reconciles()
        return self._backlog >= BACKLOG_TO_HOLD

    @property
    def ready(self) -> bool:
        """Serving its nodes: each node's checkpoint takes its pods back before anything
        reads it, so a decision made from now on counts them (KEP-1287); putting them back
        into the runtime goes on meanwhile (`restoring`), as a real kubelet's pod workers
        sync after it is up."""
        return self.started

    @property
    def restoring(self) -> int:
        """Pods of a restart or takeover not yet back in the runtime, over all nodes."""
        return sum(agent.restoring for agent in self.agents.values())

    def _on_apply(self, record: Record) -> None:
        payload = record.envelope.payload
        own = self._wrote(record.position)  # asked of every record: the writer forgets it
        if isinstance(payload, ev.PodEvent):
            key = object_key(payload.namespace, payload.name)
            if record.envelope.producer != ROLE and isinstance(payload, ASKS):
                self.causes[key] = record.envelope.as_cause()
            # A node agent's own write needs no second look: the agent wrote it at the end
            # of a reconcile of that pod (one per resize was a reconcile that found nothing
            # to do); anyone else's change is routed.
            if self.started and not own:
                self._route(key)
        elif isinstance(payload, ev.NodeEvent) and self.started:
            if payload.name in self.agents:
                self.agents[payload.name].enqueue(NODE_KEY)
            elif (
                isinstance(payload, ev.NodeRegistered)
                and self.serving
                and payload.name not in self._adopting
                and _is_simulated(payload.node)
                and self._mine(payload.name)
            ):
                self._adopt(payload.name)

    def _accept(self, raw: RawRecord) -> bool:
        """Decode this record? Skips other processes' nodes without parsing the record."""
        if not self._filtering or podfilter.decode(header(raw, NODE_HEADER), self.owned):
            return True
        if raw.key:  # bound to another process's node: forget it if we held it unbound
            namespace, _, name = raw.key.decode().partition("/")
            self._skipped.add((namespace, name))
        return False

    def _forget_skipped(self) -> None:
        """Forget the pods a skipped record bound elsewhere, once the batch is applied: its
        records before the binding were decoded but not applied yet when it was skipped, and
        those after it (a resize written before its writer saw the binding) would have built
        an unbound pod newer than the binding, which a take-over of that node skips as old."""
        for key in self._skipped:
            self._forget(key)
        self._skipped.clear()

    def _allocation_held(self, key: tuple[str, str]) -> bool:
        """The pod's allocation is its node agent's to keep (re-admitted there)."""
        agent = self.agents.get(self.model.pods.node_of(key) or "")
        return agent is not None and agent.readmitted

    def _forget(self, key: tuple[str, str]) -> None:
        self.model.state.pods.pop(key, None)
        if self.model.state.allocations is not None:
            self.model.state.allocations.pop(key, None)
        self.causes.pop(object_key(*key), None)

    def _sweep(self) -> None:
        """Forget the pods of nodes this process does not serve (after a rebalance, or those
        the start-up snapshot brought)."""
        pods = self.model.pods
        for key in list(pods):
            node = pods.node_of(key)
            if node and node not in self.owned:
                self._forget(key)

    async def _take_over(self, names: list[str]) -> None:
        """Start decoding the records of `names` and load what was skipped of them: their
        pods from the projection and the log after it, between two batches of the model."""
        wanted = set(names)

        def theirs(raw: RawRecord) -> bool:
            # "" too: a record written before its writer saw the binding (a resize of a pod
            # the apiserver still held unbound) was decoded, then forgotten with its pod.
            return podfilter.decode(header(raw, NODE_HEADER), wanted)

        async def job() -> None:
            self.owned |= wanted
            pods = self.model.pods
            held = set(pods)
            source = await self.model.take_pods_on(names, theirs)
            # The "" records brought back pods bound elsewhere (their binding is skipped).
            for key in [k for k in pods if k not in held]:
                if pods.node_of(key) not in wanted:
                    self._forget(key)
            log.info("kubelet took over %d node(s) from %s", len(names), source)

        await self.model.between_batches(job)

    def _mine(self, node: str) -> bool:
        return bool(owned([node], self.partitions, self.leases.count))

    def _route(self, key: str) -> None:
        namespace, _, name = key.partition("/")
        pod = self.model.get("pods", (namespace, name))
        node = pod.spec.node_name if pod is not None else None
        previous = self._routed.pop(key, None)
        if node in self.agents:
            self.agents[node].enqueue(key)
            self._routed[key] = node
        # A pod that left (deleted, evicted, moved) is released by the agent that holds it:
        # only an agent it was routed to can (asking all of them cost O(nodes) per event).
        if previous is not None and previous != node and previous in self.agents:
            self.agents[previous].enqueue(key)

    async def run(self) -> None:
        producer = EventProducer(
            self.settings.kafka_bootstrap, client_id=ROLE, topic_prefix=self.settings.topic_prefix
        )
        await producer.start()
        follower = asyncio.create_task(self.model.run(), name="read-model")
        leases: asyncio.Task[None] | None = None
        restorer: asyncio.Task[None] | None = None
        usage: asyncio.Task[None] | None = None
        try:
            self._writer = LogWriter(producer, self.model, ROLE, tell_own=True)
            self._wrote = self._writer.own
            # The group is joined while the snapshot loads (~0.4 s of the start): an
            # assignment waits for the model (`_assigned`).
            leases = asyncio.create_task(self.leases.run(), name="node-leases")
            await self._wait_ready(follower)
            restorer = asyncio.create_task(self._restore(), name="restorer")
            sampling = self._sample_usage() if self.config.usage_every_s > 0 else None
            usage = asyncio.create_task(sampling or asyncio.Event().wait(), name="usage")
            while True:  # a crashed worker, group member or read model ends the kubelet
                workers = list(self._workers.values())
                done, _ = await asyncio.wait(
                    [follower, leases, restorer, usage, *workers],
                    return_when="FIRST_EXCEPTION",
                    timeout=1.0,
                )
                for task in done:
                    if task in (follower, leases, restorer, usage):  # they never end
                        if not task.cancelled():
                            task.result()
                        raise RuntimeError(f"the kubelet's {task.get_name()} stopped")
                    if not task.cancelled():  # a worker stopped for a rebalance
                        task.result()
        finally:
            follower.cancel()
            if restorer is not None:
                restorer.cancel()
            if usage is not None:
                usage.cancel()
            for worker in self._workers.values():
                worker.cancel()
            if leases is not None:
                leases.cancel()
                await asyncio.gather(leases, return_exceptions=True)  # the consumer stops
            await producer.stop()

    async def _sample_usage(self) -> None:
        """Each served node's resource usage onto the `usage` topic (services/kubelet/usage.py),
        through a producer of its own: a round is ~3 MB at 1,000 nodes x 50 pods, and in
        the event producer's 16 KiB batches each waited for the one before it to be sent
        (~200 round trips on a busy loop: rounds of 30 s and more, so nodes went NotReady
        for want of a heartbeat), ahead of the pods' events in the same queue."""
        topic = self.settings.topic(USAGE)
        producer = EventProducer(
            self.settings.kafka_bootstrap,
            client_id=f"{ROLE}-usage",
            topic_prefix=self.settings.topic_prefix,
            max_batch_size=USAGE_BATCH_BYTES,
        )

        async def write(records: list[tuple[bytes, bytes]]) -> None:
            await producer.send_raw_many(topic, records)

        def served() -> dict[str, dict[str, dict[str, str]]]:
            # The containers' maps as they are: a node's are read right after its stats come.
            return {
                node: {key: pod.containers for key, pod in agent.pods.items()}
                for node, agent in self.agents.items()
            }

        await producer.start()
        try:
            await sample_forever(
                UsageSampler(self.runtime), served, write, self.config.usage_every_s
            )
        finally:
            await producer.stop()

    async def _revoked(self, partitions: set[int]) -> None:
        """Kafka takes partitions back: stop serving their nodes before returning, each after
        the pod in hand (another process may start them as soon as the group has rejoined)."""
        self.serving = False
        leaving = [n for n in self.agents if owned([n], partitions, self.leases.count)]
        await self._stop_workers(leaving)
        if leaving:
            log.info("kubelet stopped %d node(s) for a rebalance", len(leaving))

    async def _assigned(self, partitions: set[int]) -> None:
        """Serve the nodes of `partitions`: nodes kept carry on; nodes new to this process are
        re-admitted from the checkpoint once everything their last owner wrote is applied."""
        self.partitions = partitions
        await self.model.ready.wait()
        await self.model.caught_up()
        simulated = [n for n, node in self.model.objects("nodes").items() if _is_simulated(node)]
        mine = owned(dict.fromkeys([*self.names, *simulated]), partitions, self.leases.count)
        if not self._filtering:  # the first assignment: nothing of `mine` was skipped
            self.owned, self._filtering = set(mine), True
        self.owned &= mine  # from now on the records of nodes that left are skipped
        gone = [n for n in self.agents if n not in mine]
        await self._stop_workers(gone)
        for name in gone:
            del self.agents[name]
            with contextlib.suppress(KeyError):
                OWNED_NODE.remove(name)
        self._routed = {k: n for k, n in self._routed.items() if n in mine}
        if taken := sorted(mine - self.owned):
            await self._take_over(taken)
        self._sweep()
        await self.model.caught_up()
        unsettled = await self._unsettled_pods([n for n in mine if n not in self.agents])
        for name in sorted(mine):
            if name in self.names and self.model.get("nodes", name) is None:
                await self._writer.write(
                    ev.NodeRegistered(name=name, node=node_object(self.config, name))
                )
        new = [self._make_agent(n) for n in sorted(mine) if n not in self.agents]
        self._hand_over_pods(new, unsettled)
        self.started = True
        for name in sorted(mine):
            if name not in self._workers:
                self._start_worker(self.agents[name])
            OWNED_NODE.labels(name).set(1)
        # Kept nodes whose worker a rebalance stopped mid-restore get their turn again.
        self._restore_wanted.set()
        self.serving = True
        # Simulated nodes registered while the group rebalanced (not adopted then): ours now.
        for name, node in list(self.model.objects("nodes").items()):
            if name not in self.agents and _is_simulated(node) and self._mine(name):
                self._adopt(name)
        log.info(
            "kubelet serving %d node(s) (partitions %s of %s; %d new)",
            len(self.agents),
            sorted(partitions),
            self.leases.topic,
            len(new),
        )

    async def _stop_workers(self, names: list[str]) -> None:
        """Stop these nodes' workers together, each after the pod in hand: one after the
        other, each waited for a turn of a loop busy re-admitting (1,000 nodes took ~3 s of
        a rebalance)."""
        await asyncio.gather(*(self._stop_worker(name) for name in names))

    async def _stop_worker(self, name: str) -> None:
        task = self._workers.pop(name, None)
        if task is None:
            return
        agent = self.agents[name]
        agent.stopping = True
        if not agent.busy:
            task.cancel()  # idle on its queue: nothing in hand
        with contextlib.suppress(asyncio.CancelledError):
            await task
        agent.end_turn()  # a worker cancelled before it ran never ended its turn itself
        agent.stopping = False

    async def _restore(self) -> None:
        """Give the node agents handed pods their turn to put them back into the runtime, a
        few nodes at a time: each turn queues behind the work its node already has, the loop
        stays free for the API and the log, and nodes finish one after another."""
        turns = asyncio.Semaphore(RESTORES_AT_ONCE)

        async def turn(agent: NodeAgent) -> None:
            async with turns:
                if self._workers.get(agent.name) is not None:  # still served here
                    await agent.restore_turn()

        while True:
            await self._restore_wanted.wait()
            self._restore_wanted.clear()
            await asyncio.gather(*(turn(a) for a in list(self.agents.values()) if a.restoring))

    def _make_agent(self, name: str) -> NodeAgent:
        node = self.model.get("nodes", name)
        agent = NodeAgent(
            name,
            NodeAllocation.from_node(
                node,
                cpu_manager_policy=self.config.cpu_manager_policy,
                memory_manager_policy=self.config.memory_manager_policy,
                exclusive_cpus_resize=self.config.exclusive_cpus_resize,
            ),
            runtime=self.runtime,
            model=self.model,
            writer=self._writer,
            causes=self.causes,
            step_timeout=self.config.runtime_timeout,
            capacity=planning_capacity(node.status) if node.status else None,
            deferred_retry=(
                self.config.deferred_retry_first,
                self.config.deferred_retry_period,
            ),
            book=self.book,
            recorder=self.recorder,
        )
        self.agents[name] = agent
        return agent

    def _start_worker(self, agent: NodeAgent) -> None:
        self._workers[agent.name] = asyncio.create_task(agent.run(), name=f"node {agent.name}")

    def _adopt(self, name: str) -> None:
        """A simulated node registered while we run (kwok-style annotation) in one of our
        partitions: serve it too, once what was skipped of it is loaded."""
        log.info("adopting simulated node %s", name)
        self._adopting.add(name)
        self._to_adopt.append(name)
        if ADOPTER not in self._workers:  # a failure ends the kubelet like a worker's
            self._workers[ADOPTER] = asyncio.create_task(self._adopt_queued(), name=ADOPTER)

    async def _adopt_queued(self) -> None:
        """Take over the nodes registered meanwhile together: a client registering 1,000
        nodes at once cost 1,000 take-overs one after another (~55 s, each a projection
        read and a pause of the read model), so the kubelet fell behind the log while the
        first pods arrived."""
        try:
            while self._to_adopt:
                names, self._to_adopt = self._to_adopt, []
                await self._take_over_new(names)
        finally:
            self._workers.pop(ADOPTER, None)

    async def _take_over_new(self, names: list[str]) -> None:
        try:
            await self._take_over(names)
            unsettled = await self._unsettled_pods(names)
            new = [
                self._make_agent(name)
                for name in names
                if self.serving and name not in self.agents and self._mine(name)
            ]
            self._hand_over_pods(new, unsettled)
            for agent in new:
                self._start_worker(agent)
                OWNED_NODE.labels(agent.name).set(1)
            # A rebalance took the partition of those not served meanwhile.
            self.owned.difference_update(n for n in names if n not in self.agents)
        finally:
            self._adopting.difference_update(names)

    async def _wait_ready(self, follower: asyncio.Task[None]) -> None:
        waiter = asyncio.create_task(self.model.ready.wait())
        await asyncio.wait([waiter, follower], return_when="FIRST_COMPLETED")
        if follower.done():
            waiter.cancel()
            follower.result()

    def _seed_open(self) -> None:
        """Started from a snapshot: the pods whose row says their resize is open."""
        self._open_in_snapshot = self.model.snapshot_open_resizes

    async def _unsettled_pods(self, nodes: list[str]) -> list[tuple[str, str]]:
        """The pods of `nodes` (taken from the projection, at start or taken over) whose
        resize the kubelet may still have to decide or finish, in log order, each with its
        request's cause loaded. They come without the requests the kubelet still has to
        answer: each one's last request is taken from the history, so what it writes for them
        keeps the request's correlation id (one id from Proposed to Actuated). Only how far
        each pod's resize came is decoded."""
        model = self.model
        pods = model.pods
        # A pod held as the snapshot had it is as unsettled as its row said; only the others
        # are decoded (every pod was, ~6 µs each: 0.3 s of a start at 50,000 pods).
        maybe = [
            key
            for key in pods.keys_on(set(nodes))
            if key in self._open_in_snapshot or not model.pod_as_snapshot(key)
        ]
        unsettled = sorted(
            (key for key, pod in pods.views(maybe, PodProgress) if _unsettled(pod)),
            key=lambda key: pods.resource_version(key) or 0,
        )
        keys = [key for key in unsettled if object_key(*key) not in self.causes]
        if not keys:
            return unsettled
        s = self.settings
        found = await load_causes(s.postgres_dsn, s.projection_schema, keys, besides=ROLE)
        if isinstance(found, str):
            log.warning("kubelet: no request history for %d unsettled pods (%s)", len(keys), found)
            return unsettled
        for (namespace, name), envelope in found.items():
            self.causes.setdefault(object_key(namespace, name), envelope.as_cause())
        return unsettled

    def _hand_over_pods(self, agents: list[NodeAgent], unsettled: list[tuple[str, str]]) -> None:
        """Hand each new node agent the pods bound to its node (NodeAgent.restart_with): its
        checkpoint re-admits them before any decision, and the restorer puts them back into
        the runtime on the node's turn. The `unsettled` ones (a resize asked or under way
        while no process served the node) are queued now, in log order, so they do not wait
        for their node's turn."""
        names = {a.name for a in agents}
        pods = self.model.pods
        keys: dict[str, list[tuple[str, str]]] = {name: [] for name in names}
        for key in pods.keys_on(names):
            node = pods.node_of(key) or ""
            keys[node].append(key)
            self._routed.setdefault(object_key(*key), node)
        for agent in agents:
            agent.restart_with(keys[agent.name])
        by_name = {a.name: a for a in agents}
        for key in unsettled:
            agent = by_name.get(pods.node_of(key) or "")
            if agent is not None:
                agent.enqueue(object_key(*key))
        self._restore_wanted.set()


def _unsettled(pod: Pod | PodProgress) -> bool:
    """A resize the kubelet may still have to decide or finish."""
    status = pod.status
    return resize_open(pod.metadata.generation, status.observed_generation, status.resize)


SIMULATED = "inplace.io/simulated"
USAGE_BATCH_BYTES = 512 * 1024  # under the broker's 1 MiB message.max.bytes
ADOPTER = "adopting new nodes"  # its task (no node has this name: it has spaces)


def _is_simulated(node: Node) -> bool:
    """Nodes a client registers for us to run, like kwok's `kwok.x-k8s.io/node: fake`."""
    return (node.metadata.annotations or {}).get(SIMULATED) == "true"
