"""The hotplug role's own settings, from INPLACE_HOTPLUG_* environment variables.

Machine mode (off by default) makes this process the capacity source of ONE node: it polls the
machine it runs on and publishes NodeCapacityChanged for `machine_node` when what it reads has
been stable for `debounce_polls` polls. Simulated nodes are resized through the HTTP API.
"""

from __future__ import annotations

from typing import Self

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class HotplugConfig(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="INPLACE_HOTPLUG_", extra="ignore")

    # The InPlaceNodeResourceResize feature gate (KEP-3953). Off: capacity changes are not
    # applied; each one is said in the log and as a Warning Event on the node.
    node_resource_resize: bool = Field(
        default=True, description="InPlaceNodeResourceResize: apply capacity changes live"
    )
    machine_mode: bool = Field(default=False, description="poll this machine's capacity")
    machine_node: str = Field(default="", description="the node the machine's capacity is")
    poll_interval: float = Field(default=5.0, gt=0, description="seconds between polls")
    # A reading must repeat this many polls in a row before it is published: a flapping
    # source (a CPU going on- and offline) never turns into a storm of events.
    debounce_polls: int = Field(default=2, ge=1)
    cpu_online_path: str = "/sys/devices/system/cpu/online"
    meminfo_path: str = "/proc/meminfo"

    @model_validator(mode="after")
    def _node_named(self) -> Self:
        if self.machine_mode and not self.machine_node:
            raise ValueError("INPLACE_HOTPLUG_MACHINE_NODE must name a node in machine mode")
        return self
