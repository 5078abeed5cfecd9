"""Process settings, read from INPLACE_* environment variables (docker-compose sets them)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from schemas.events import EVENT_TOPICS

# One HTTP port per role for /healthz, /metrics and the role's own API. The compose file and
# `inplace up` use these defaults; a test cross-checks them against docker-compose.yml.
DEFAULT_PORTS: dict[str, int] = {
    "apiserver": 8080,
    "quota": 8081,
    "scheduler": 8082,
    "kubelet": 8083,
    "hotplug": 8084,
    "projector": 8085,
    "workload": 8086,
}


class Settings(BaseSettings):
    """Everything a role needs to find the log and the database."""

    model_config = SettingsConfigDict(env_prefix="INPLACE_", extra="ignore")

    kafka_bootstrap: str = Field(
        default="127.0.0.1:9092", description="Kafka bootstrap servers, comma separated"
    )
    postgres_dsn: str = Field(
        default="postgresql://postgres@127.0.0.1:5432/inplace",
        description="PostgreSQL DSN of the projection database",
    )
    projection_schema: str = Field(default="projection", pattern=r"^[a-z_][a-z0-9_]{0,62}$")
    # Partition counts and replication are settings, not code (DESIGN.md §6): the production
    # profile raises replication to 3 with min.insync.replicas=2.
    # Prepended to every topic name, so several clusters (or test runs) can share a broker.
    topic_prefix: str = Field(default="", pattern=r"^[a-z0-9._-]*$")
    pods_partitions: int = Field(default=6, ge=1)
    nodes_partitions: int = Field(default=6, ge=1)
    policy_partitions: int = Field(default=3, ge=1)
    events_partitions: int = Field(default=3, ge=1)
    workloads_partitions: int = Field(default=3, ge=1)
    replication_factor: int = Field(default=1, ge=1)
    min_insync_replicas: int = Field(default=1, ge=1)
    host: str = Field(default="127.0.0.1", description="address the role's HTTP server binds")
    # Security (issue 17): every role serves HTTPS with the certificates in `pki_dir`
    # (`inplace pki init`); `insecure_http` is the explicit plain-HTTP, no-authentication mode,
    # allowed on a loopback address only.
    pki_dir: str = Field(default="", description="credentials directory (inplace pki init)")
    insecure_http: bool = Field(default=False, description="plain HTTP on loopback, no auth")
    quota_url: str = Field(
        default="http://127.0.0.1:8081", description="quota admission endpoint for the apiserver"
    )
    log_level: str = Field(default="INFO")
    # kubelet: one process hosts many simulated nodes (like kwok), each with its own checkpoint.
    kubelet_nodes: int = Field(default=1, ge=0)
    kubelet_node_prefix: str = Field(default="node", pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    kubelet_node_cpu: str = Field(default="8", description="capacity of each simulated node")
    kubelet_node_memory: str = Field(default="32Gi")
    kubelet_node_pods: int = Field(default=110, ge=1)
    kubelet_reserved_cpu: str = Field(default="0", description="system+kube reserved")
    kubelet_reserved_memory: str = Field(default="0")
    kubelet_runtime: Literal["fake", "cgroup"] = "fake"
    kubelet_runtime_latency: float = Field(default=0.0, ge=0.0, description="fake runtime, s")
    kubelet_cpu_manager_policy: Literal["none", "static"] = "none"
    kubelet_memory_manager_policy: Literal["None", "Static"] = "None"
    # InPlacePodVerticalScalingExclusiveCPUs: Guaranteed pods resize under the static policies.
    kubelet_exclusive_cpus_resize: bool = False
    # Deferred resizes are retried on events and on this timer too (the kubelet's 1.33+
    # behaviour): first after `first` seconds, then every `period` while any waits.
    kubelet_deferred_retry_first: float = Field(default=30.0, gt=0)
    kubelet_deferred_retry_period: float = Field(default=180.0, gt=0)
    kubelet_runtime_timeout: float = Field(
        default=30.0, gt=0, description="a runtime call taking longer is an error, retried"
    )

    # workload: the InPlaceWorkloadVerticalScaling feature gate (OpenKruise's name). Off, every
    # template change (resources included) recreates pods.
    workload_vertical_scaling: bool = Field(
        default=True, description="InPlaceWorkloadVerticalScaling: resize pods in place"
    )
    workload_apiserver_url: str = Field(
        default="http://127.0.0.1:8080", description="apiserver the workload controller calls"
    )
    workload_kubeconfig: str = Field(
        default="", description="kubeconfig of the workload controller (wins over the URL)"
    )

    def credentials_dir(self) -> Path | None:
        return Path(self.pki_dir) if self.pki_dir else None

    def topic(self, logical: str) -> str:
        """Physical topic name of a logical one (`pods` → `<prefix>pods`)."""
        return f"{self.topic_prefix}{logical}"

    def event_topics(self) -> list[str]:
        return [self.topic(t) for t in EVENT_TOPICS]
