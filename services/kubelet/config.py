"""The kubelet role's own settings, from INPLACE_KUBELET_* environment variables.

One process hosts many simulated nodes (like kwok), each with its own allocation checkpoint;
the node policies (CPU / memory manager, the exclusive-CPUs opt-in) and the Deferred retry
timer are the kubelet's own configuration, as in a KubeletConfiguration.
"""

from __future__ import annotations

import socket
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class KubeletConfig(BaseSettings):
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
    # Kubelet processes of one configuration share the nodes in a consumer group: a process
    # that dies without leaving gives its nodes up after this long without a heartbeat.
    group_session_timeout: float = Field(default=10.0, ge=6.0, le=300.0)
    # Static group membership (KIP-345): a process restarted under the same instance name
    # gets its nodes back at once, without waiting for the session timeout. Defaults to the
    # host's name (one kubelet per host, as Kubernetes runs it); several processes on one
    # host need a name each (`inplace up --kubelets N` gives kubelet-1 … kubelet-N).
    instance: str = Field(default_factory=socket.gethostname, min_length=1)
    runtime_timeout: float = Field(
        default=30.0, gt=0, description="a runtime call taking longer is an error, retried"
    )
