"""The machine poller against a flapping and a stable capacity source (no broker: the node,
the reading and the resizer are stubs)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from schemas.k8s import ResourceList
from schemas.quantity import Quantity
from services.hotplug.config import HotplugConfig
from services.hotplug.poller import MachinePoller
from services.hotplug.resizer import Resizer
from tests.factories import node


class _Resizer:
    """Resizer's surface the poller uses: the node, and resizes recorded (and applied)."""

    def __init__(self) -> None:
        self.current = node("machine", cpu="4", memory="16Gi")
        self.resizes: list[dict[str, str]] = []

    def node(self, name: str) -> Any:
        return self.current

    async def resize(self, name: str, requested: Mapping[str, Quantity], *, source: str) -> Any:
        self.resizes.append({k: str(v) for k, v in requested.items()})
        assert self.current.status is not None
        self.current.status.capacity = {**(self.current.status.capacity or {}), **requested}
        return None, self.current


def _poller(readings: list[ResourceList]) -> tuple[MachinePoller, _Resizer]:
    resizer = _Resizer()
    config = HotplugConfig(machine_mode=True, machine_node="machine", debounce_polls=3)
    poller = MachinePoller(config, cast(Resizer, resizer), model=cast(Any, None))
    poller.read = lambda: readings.pop(0)  # type: ignore[method-assign]
    return poller, resizer


def _reading(cpu: str) -> ResourceList:
    return {"cpu": Quantity(cpu), "memory": Quantity("16Gi"), "swap": Quantity("0")}


async def test_a_flapping_source_is_never_published_and_a_stable_one_once() -> None:
    # A CPU going on- and offline every poll, then settling at 8 CPUs.
    readings = [_reading(c) for c in ("8", "4", "8", "4", "8", "4", "8", "8", "8", "8", "8")]
    poller, resizer = _poller(readings)
    for _ in range(6):
        await poller.poll_once()
    assert resizer.resizes == []  # never the same reading 3 polls in a row
    for _ in range(5):
        await poller.poll_once()
    # Published once when stable (3rd "8" in a row); later polls match the node: no-ops.
    assert resizer.resizes == [{"cpu": "8"}]
