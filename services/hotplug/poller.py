"""Machine mode: poll this machine's capacity and resize ONE node when it changes (KEP-3953).

The KEP's kubelet polls cAdvisor's machine info (`update_machine_info_interval`); this loop
reads the same kernel files every `poll_interval` seconds, debounces them (a reading must repeat
`debounce_polls` times in a row) and hands a changed capacity to the Resizer. In machine mode
the machine is the truth for that node: an API resize of it is undone by the next poll.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from inplace.core.readmodel import ReadModel
from schemas.k8s import ResourceList
from schemas.nodeswap import planning_capacity
from schemas.quantity import ZERO
from services.hotplug.capacity import InvalidResize
from services.hotplug.config import HotplugConfig
from services.hotplug.machine import Debouncer, machine_capacity
from services.hotplug.resizer import FeatureGateDisabled, NodeNotFoundError, Resizer

__all__ = ["MachinePoller"]

log = logging.getLogger(__name__)


class MachinePoller:
    def __init__(self, config: HotplugConfig, resizer: Resizer, model: ReadModel) -> None:
        self.config = config
        self.resizer = resizer
        self.model = model
        self.node = config.machine_node
        self._debouncer: Debouncer[ResourceList] = Debouncer(config.debounce_polls)
        # The last problem logged, so that a persistent one is logged once, not every poll.
        self._said: str | None = None

    def read(self) -> ResourceList:
        return machine_capacity(
            Path(self.config.cpu_online_path).read_text(),
            Path(self.config.meminfo_path).read_text(),
        )

    async def run(self) -> None:
        await self.model.ready.wait()
        while True:
            await self.poll_once()
            await asyncio.sleep(self.config.poll_interval)

    async def poll_once(self) -> None:
        try:
            reading = await asyncio.to_thread(self.read)
        except (OSError, ValueError) as exc:
            self._say(f"cannot read machine capacity: {exc}")
            return
        stable = self._debouncer.observe(reading)
        if stable is not None:
            await self._apply(stable)

    async def _apply(self, reading: ResourceList) -> None:
        node = self.resizer.node(self.node)
        if node is None:
            self._say(f"machine mode: waiting for node {self.node} to register")
            return
        current = planning_capacity(node.status)
        # Only what differs: a node without a swap entry and a machine without swap agree.
        requested = {n: q for n, q in reading.items() if current.get(n, ZERO) != q}
        if not requested:
            self._said = None
            return
        try:
            await self.resizer.resize(self.node, requested, source="machine")
            self._said = None
        except InvalidResize as exc:
            self._say(f"machine capacity of {self.node} not applied: {exc}")
        except NodeNotFoundError:
            self._say(f"machine mode: node {self.node} is gone")
        except FeatureGateDisabled:
            pass  # the resizer said it, once per distinct change

    def _say(self, message: str) -> None:
        if message != self._said:
            log.warning("%s", message)
            self._said = message
