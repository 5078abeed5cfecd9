"""The loops kube-controller-manager runs beside kube-apiserver (node lifecycle, disruption
budgets, namespace finalization) and the Event TTL run in one apiserver replica at a time:
the one holding partition LEADER_PARTITION of the `nodes` topic in the replicas' consumer
group, as the controller manager's leader election lease would have it (Kafka's group
coordinator in its place: no lock of our own). The other replicas serve the API only; when
the leader stops or dies, the group hands the partition to another, whose loops start from
the log as it is. Every replica running them wrote each decision once per replica (the same
condition, the same pods marked not ready, a NodeNotReady Event from each).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from prometheus_client import Gauge

log = logging.getLogger(__name__)

LEADER_PARTITION = 0
Loop = Callable[[], Awaitable[None]]

LEADING = Gauge(
    "inplace_apiserver_controllers_leading",
    "1 while this apiserver replica runs the controllers (node lifecycle, disruption budgets, "
    "namespaces, Event TTL): it holds its group's leader partition",
)


class Controllers:
    """Starts its loops on the leader partition's assignment, stops them on its revocation
    (before the revocation returns: the next leader may start at once)."""

    def __init__(self, loops: dict[str, Loop]) -> None:
        self.loops = loops
        self._running: list[asyncio.Task[None]] = []
        self._failure: Exception | None = None
        self._failed = asyncio.Event()

    async def assigned(self, partitions: set[int]) -> None:
        if LEADER_PARTITION not in partitions or self._running:
            return
        self._running = [
            asyncio.create_task(self._guarded(loop), name=name) for name, loop in self.loops.items()
        ]
        LEADING.set(1)
        log.info("running the controllers: %s", ", ".join(self.loops))

    async def revoked(self, partitions: set[int]) -> None:
        if LEADER_PARTITION not in partitions or not self._running:
            return
        running, self._running = self._running, []
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        LEADING.set(0)
        log.info("the controllers stopped here: another replica leads")

    async def run(self) -> None:
        """Returns never; raises what a controller raised, which ends the apiserver, as a
        failed task of its own would."""
        await self._failed.wait()
        assert self._failure is not None
        raise self._failure

    async def _guarded(self, loop: Loop) -> None:
        try:
            await loop()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._failure = self._failure or exc
            self._failed.set()  # `run` raises it
