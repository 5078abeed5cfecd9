"""Resource usage of the nodes this process serves, sampled through the CRI (ContainerStats)
every so often and written to the `usage` topic, one record per node, as the kubelet's
resource metrics endpoint feeds metrics-server.

The CPU figure is a rate: the CPU time used between two samples of a container over the time
between them (a container's first sample gives none yet, as metrics-server needs two).

A round measures every running container of every node served (50,000 at the default load
shape), so it is built from tuples into JSON directly: a pydantic model per container and a
reading object each cost the resize path ~0.5 ms of kubelet CPU per resize at that shape.
The reader validates each record against schemas.usage.NodeUsage.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from datetime import UTC, datetime

from schemas.base import format_micro_time
from services.kubelet.cri import RuntimeService, RuntimeServiceError
from services.kubelet.metrics import USAGE_ROUND_SECONDS

log = logging.getLogger(__name__)

# A round running late (past half its period: a busy process) gives the pods' work a turn
# only after this much of its own (loop time), not after every node: on a saturated kubelet
# a round of 1,000 nodes waited behind the queued work 1,000 times, took 30-75 s, and its
# records, the nodes' heartbeats, came late enough for the node lifecycle to mark every
# node NotReady. On time, it turns after every node (coarser turns stalled resizes ~0.2 s).
TURN_EVERY_S = 0.01

Reading = tuple[int, float]  # CPU time used (ns), monotonic seconds it was read at
Measured = tuple[str, int, int]  # container name, nanocores, memory working set bytes


def rate(before: Reading | None, now: Reading) -> int | None:
    """Nanocores used between two readings; None without an earlier one (or a counter that
    went back: the container was recreated)."""
    if before is None or now[1] <= before[1] or now[0] < before[0]:
        return None
    # To the microcore: finer is the jitter between reading a counter and the clock (kubectl
    # top rounds up, so 200000040n would show as 201m).
    return round((now[0] - before[0]) / (now[1] - before[1]) / 1000) * 1000


def node_record(
    node: str, pods: Mapping[str, list[Measured]], at: datetime, window: float
) -> bytes:
    """One node's record, schemas.usage.NodeUsage's JSON, from its pods' containers (keys
    `namespace/name`); the node's figures are its pods' sums."""
    entries = []
    cpu = memory = 0
    for key, containers in sorted(pods.items()):
        namespace, _, name = key.partition("/")
        listed = []
        for container, nanocores, working_set in containers:
            listed.append(
                {"name": container, "cpu_nanocores": nanocores, "memory_bytes": working_set}
            )
            cpu += nanocores
            memory += working_set
        entries.append({"namespace": namespace, "name": name, "containers": listed})
    record = {
        "node": node,
        "timestamp": format_micro_time(at),
        "window_seconds": window,
        "cpu_nanocores": cpu,
        "memory_bytes": memory,
        "pods": entries,
    }
    return json.dumps(record, separators=(",", ":")).encode()


class UsageSampler:
    """Keeps each node's containers' last readings; `sample` measures one node's pods."""

    def __init__(self, runtime: RuntimeService) -> None:
        self.runtime = runtime
        self._last: dict[str, dict[str, Reading]] = {}  # node → container id → reading

    async def sample(self, node: str, pods: Mapping[str, Mapping[str, str]], every: float) -> bytes:
        """`pods`: pod key → container name → runtime id. A container without a rate yet is
        left out; a node with nothing running still has its (empty) record: it is also the
        node's heartbeat (its Lease's renewTime). Containers not running any more drop out
        of the readings kept (each round keeps only what it read)."""
        ids = [cid for containers in pods.values() for cid in containers.values()]
        try:
            found = await self.runtime.list_container_stats(ids) if ids else {}
        except RuntimeServiceError as exc:
            log.debug("%s: no stats: %s", node, exc)
            found = {}
        now = time.monotonic()
        last = self._last.get(node, {})
        readings: dict[str, Reading] = {}
        measured: dict[str, list[Measured]] = {}
        for key, containers in pods.items():
            for name, cid in containers.items():
                stats = found.get(cid)
                if stats is None:
                    continue
                reading = readings[cid] = (stats.cpu_usage_core_nano_seconds, now)
                nanocores = rate(last.get(cid), reading)
                if nanocores is not None:
                    entry = (name, nanocores, stats.memory_working_set_bytes)
                    measured.setdefault(key, []).append(entry)
        self._last[node] = readings
        return node_record(node, measured, datetime.now(UTC), every)

    def keep(self, nodes: Iterable[str]) -> None:
        """Drop the readings of nodes no longer served here."""
        served = set(nodes)
        for node in [n for n in self._last if n not in served]:
            del self._last[node]


async def sample_forever(
    sampler: UsageSampler,
    nodes: Callable[[], Mapping[str, Mapping[str, Mapping[str, str]]]],
    write: Callable[[list[tuple[bytes, bytes]]], Awaitable[None]],
    every: float,
    turn_every: float = TURN_EVERY_S,
    late_after: float | None = None,
) -> None:
    """Every `every` seconds, sample each node `nodes()` names (node → pod → container →
    runtime id) and write the round's records (node name, record) together; a failure is
    logged and the next round tries again. Rounds start at a fixed rate, not `every` after
    the last one ended: a record is its node's heartbeat, and a round that took long (a
    busy process writing 50,000 containers' figures) must not stretch the gap between two."""
    loop = asyncio.get_running_loop()
    late = every / 2 if late_after is None else late_after  # then turns every `turn_every`
    due = loop.time() + every
    while True:
        await asyncio.sleep(max(0.0, due - loop.time()))
        started = loop.time()
        served = nodes()
        try:
            records = []
            turn = loop.time()
            for node, pods in served.items():
                records.append((node.encode(), await sampler.sample(node, pods, every)))
                # A round at 1,000 nodes x 50 pods is ~0.5 s of CPU, and the fake runtime's
                # stats never make it wait: without turns for the pods' work in between,
                # every resize under way stalled for it (a p99 of ~0.5 s, every 15 s).
                now = loop.time()
                if now - started < late or now - turn >= turn_every:
                    await asyncio.sleep(0)
                    turn = loop.time()
            await write(records)
        except Exception as exc:  # the log unreachable: the next round tries again
            log.warning("writing resource usage failed: %s", exc)
        sampler.keep(served)
        took = loop.time() - started
        USAGE_ROUND_SECONDS.observe(took)
        if took > every:
            log.warning("a resource usage round took %.1fs (every %.0fs)", took, every)
        due = max(due + every, loop.time())
