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
    log_level: str = Field(default="INFO")
    # uvloop (libuv) runs a role's event loop with less CPU per wake-up than asyncio's own;
    # "asyncio" is the fallback should a library misbehave on it.
    event_loop: Literal["uvloop", "asyncio"] = Field(default="uvloop")
    # How long the broker may hold a role's fetch for fuller batches (ms): unset, each role's
    # own choice (25 for the scheduler and workload controller, 0 for the rest); set, every
    # role's: less CPU per event, more lag.
    follow_fetch_wait_ms: int | None = Field(default=None, ge=0, le=1000)
    # How long a role's young GC generations may go unfrozen (ms): frozen, no collection but
    # the full one walks them; 0 leaves them to CPython's allocation count alone, which a role
    # in steady state hardly moves (observability/gcpauses.py).
    gc_young_every_ms: int = Field(default=500, ge=0, le=60_000)
    # Full collections run on that timer, this often (0: never), not by CPython's rule: at
    # 50,000 pods one stalls a role 0.3-2 s (gcpauses.py). 0 for the young timer above
    # gives CPython's rule back.
    gc_full_every_s: int = Field(default=3600, ge=0)

    def credentials_dir(self) -> Path | None:
        return Path(self.pki_dir) if self.pki_dir else None

    def topic(self, logical: str) -> str:
        """Physical topic name of a logical one (`pods` → `<prefix>pods`)."""
        return f"{self.topic_prefix}{logical}"

    def event_topics(self) -> list[str]:
        return [self.topic(t) for t in EVENT_TOPICS]
