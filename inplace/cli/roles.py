"""The roles a process can run (`inplace serve ROLE`), one module per service."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from inplace.core.settings import DEFAULT_PORTS, Settings
from services.apiserver import service as apiserver
from services.hotplug import service as hotplug
from services.kubelet import service as kubelet
from services.projector import service as projector
from services.quota import service as quota
from services.scheduler import service as scheduler
from services.workload import service as workload

RoleRun = Callable[..., Coroutine[Any, Any, None]]

ROLES: dict[str, RoleRun] = {
    "apiserver": apiserver.run,
    "quota": quota.run,
    "scheduler": scheduler.run,
    "kubelet": kubelet.run,
    "hotplug": hotplug.run,
    "projector": projector.run,
    "workload": workload.run,
}
assert set(ROLES) == set(DEFAULT_PORTS), "every role needs a default port"


async def serve(role: str, settings: Settings, *, host: str, port: int) -> None:
    await ROLES[role](settings, host=host, port=port)
