"""The roles a process can run (`inplace serve ROLE`), one module per service.

A process imports only the service it runs (`services.<role>.service`): importing all seven
cost every role's start ~0.2 s of CPU for code it never calls."""

from __future__ import annotations

import importlib

from inplace.core.settings import DEFAULT_PORTS, Settings

ROLES: tuple[str, ...] = (
    "apiserver",
    "quota",
    "scheduler",
    "kubelet",
    "hotplug",
    "projector",
    "workload",
)
assert set(ROLES) == set(DEFAULT_PORTS), "every role needs a default port"


async def serve(role: str, settings: Settings, *, host: str, port: int) -> None:
    service = importlib.import_module(f"services.{role}.service")
    await service.run(settings, host=host, port=port)
