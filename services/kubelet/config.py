"""The kubelet role's own settings, from INPLACE_KUBELET_* environment variables.

One process hosts many simulated nodes (like kwok), each with its own allocation checkpoint;
the node policies (CPU / memory manager, the exclusive-CPUs opt-in) and the Deferred retry
timer are the kubelet's own configuration, as in a KubeletConfiguration.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from inplace.core.bus.leases import GroupMember


class KubeletConfig(GroupMember):  # processes of one configuration share the nodes
    model_config = SettingsConfigDict(env_prefix="INPLACE_KUBELET_", extra="ignore")

    nodes: int = Field(default=1, ge=0)
    start_from_projection: bool = Field(
        default=True,
        description="start from the projection in PostgreSQL (pods, nodes, the allocation "
        "checkpoint) and read only the log after it",
    )
    node_prefix: str = Field(default="node", pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    node_cpu: str = Field(default="8", description="capacity of each simulated node")
    node_memory: str = Field(default="32Gi")
    node_pods: int = Field(default=110, ge=1)
    reserved_cpu: str = Field(default="0", description="system+kube reserved")
    reserved_memory: str = Field(default="0")
    runtime: Literal["fake", "cgroup"] = "fake"
    runtime_latency: float = Field(default=0.0, ge=0.0, description="fake runtime, s")
    cpu_manager_policy: Literal["none", "static"] = "none"
    memory_manager_policy: Literal["None", "Static"] = "None"
    # InPlacePodVerticalScalingExclusiveCPUs: Guaranteed pods resize under the static policies.
    exclusive_cpus_resize: bool = False
    # Deferred resizes are retried on events and on this timer too (the kubelet's 1.33+
    # behaviour): first after `first` seconds, then every `period` while any waits.
    deferred_retry_first: float = Field(default=30.0, gt=0)
    deferred_retry_period: float = Field(default=180.0, gt=0)
    # Held while work waits in the node agents' queues (kubelet.BACKLOG_TO_HOLD): under an
    # open-loop load holding at 5 ms took 13-15% off the kubelet's CPU per resize; held
    # always, a closed loop (each client waiting for its resize) ran 10% slower (README).
    fetch_wait_ms: int = Field(
        default=5,
        ge=0,
        le=1000,
        description="while reconciles are queued, the broker holds each fetch up to this "
        "long (or until 64 KiB are there): fewer, fuller fetches; 0: never held",
    )
    runtime_timeout: float = Field(
        default=30.0, gt=0, description="a runtime call taking longer is an error, retried"
    )
    # Resource usage for the metrics API (`kubectl top`): sampled this often (metrics-server's
    # default resolution), each node's sample a record on the `usage` topic; 0: not sampled.
    usage_every_s: float = Field(default=15.0, ge=0)
