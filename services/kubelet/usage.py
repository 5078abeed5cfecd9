"""Resource usage of the nodes this process serves, sampled through the CRI (ContainerStats)
every so often and written to the `usage` topic, one record per node, as the kubelet's
resource metrics endpoint feeds metrics-server.

The CPU figure is a rate: the CPU time used between two samples of a container over the time
between them (a container's first sample gives none yet, as metrics-server needs two).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from schemas.usage import ContainerUsage, NodeUsage, PodUsage
from services.kubelet.cri import ContainerStats, RuntimeService, RuntimeServiceError

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Reading:
    cpu_ns: int
    at: float  # monotonic seconds


def rate(before: Reading | None, now: Reading) -> int | None:
    """Nanocores used between two readings; None without an earlier one (or a counter that
    went back: the container was recreated)."""
    if before is None or now.at <= before.at or now.cpu_ns < before.cpu_ns:
        return None
    # To the microcore: finer is the jitter between reading a counter and the clock (kubectl
    # top rounds up, so 200000040n would show as 201m).
    return round((now.cpu_ns - before.cpu_ns) / (now.at - before.at) / 1000) * 1000


def node_usage(
    node: str, pods: Mapping[str, list[ContainerUsage]], at: datetime, window: float
) -> NodeUsage:
    """One node's record from its pods' containers (keys `namespace/name`)."""
    entries = []
    for key, containers in sorted(pods.items()):
        namespace, _, name = key.partition("/")
        entries.append(PodUsage(namespace=namespace, name=name, containers=containers))
    return NodeUsage(
        node=node,
        timestamp=at,
        window_seconds=window,
        cpu_nanocores=sum(c.cpu_nanocores for p in entries for c in p.containers),
        memory_bytes=sum(c.memory_bytes for p in entries for c in p.containers),
        pods=entries,
    )


class UsageSampler:
    """Keeps each container's last reading; `sample` measures one node's pods."""

    def __init__(self, runtime: RuntimeService) -> None:
        self.runtime = runtime
        self._last: dict[str, Reading] = {}

    async def sample(
        self, node: str, pods: Mapping[str, Mapping[str, str]], every: float
    ) -> NodeUsage:
        """`pods`: pod key → container name → runtime id. A container without a rate yet is
        left out; a node with nothing running still has its (empty) record: it is also the
        node's heartbeat (its Lease's renewTime)."""
        measured: dict[str, list[ContainerUsage]] = {}
        ids = [cid for containers in pods.values() for cid in containers.values()]
        try:
            found = await self.runtime.list_container_stats(ids) if ids else {}
        except RuntimeServiceError as exc:
            log.debug("%s: no stats: %s", node, exc)
            found = {}
        now = time.monotonic()
        for key, containers in pods.items():
            for name, cid in containers.items():
                stats: ContainerStats | None = found.get(cid)
                if stats is None:
                    continue
                reading = Reading(stats.cpu_usage_core_nano_seconds, now)
                nanocores = rate(self._last.get(cid), reading)
                self._last[cid] = reading
                if nanocores is not None:
                    usage = ContainerUsage(
                        name=name,
                        cpu_nanocores=nanocores,
                        memory_bytes=stats.memory_working_set_bytes,
                    )
                    measured.setdefault(key, []).append(usage)
        return node_usage(node, measured, datetime.now(UTC), every)

    def forget(self, live: Iterable[str]) -> None:
        """Drop the readings of containers no longer running here."""
        keep = set(live)
        for cid in [c for c in self._last if c not in keep]:
            del self._last[cid]


async def sample_forever(
    sampler: UsageSampler,
    nodes: Callable[[], Mapping[str, Mapping[str, Mapping[str, str]]]],
    write: Callable[[NodeUsage], Awaitable[None]],
    every: float,
) -> None:
    """Every `every` seconds, sample each node `nodes()` names (node → pod → container →
    runtime id) and write its record; a failure is logged and the next round tries again."""
    while True:
        await asyncio.sleep(every)
        served = nodes()
        try:
            for node, pods in served.items():
                await write(await sampler.sample(node, pods, every))
        except Exception as exc:  # the log unreachable: the next round tries again
            log.warning("writing resource usage failed: %s", exc)
        sampler.forget(c for pods in served.values() for ids in pods.values() for c in ids.values())
