"""The apiserver's own settings, from INPLACE_APISERVER_* environment variables."""

from __future__ import annotations

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from services.apiserver.limits import Limits


class ApiserverConfig(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="INPLACE_APISERVER_", extra="ignore")

    start_from_projection: bool = Field(
        default=True,
        description="start from the projection in PostgreSQL and read only the log after it",
    )
    # The name every deployment already sets (compose, `inplace up`): the quota role's URL is
    # the apiserver's own setting, not one every role reads.
    quota_url: str = Field(
        default="http://127.0.0.1:8081",
        validation_alias=AliasChoices("INPLACE_QUOTA_URL", "INPLACE_APISERVER_QUOTA_URL"),
        description="quota admission endpoint (empty: no quota webhook)",
    )
    policy_file: str = Field(default="", description="RBAC policy YAML; empty = the built-in one")
    audit_log: str = Field(default="", description="audit log file (JSON lines); '-' = stdout")
    max_request_bytes: int = Field(default=3 * 1024 * 1024, ge=1024)
    max_requests_inflight: int = Field(default=400, ge=1)
    max_mutating_requests_inflight: int = Field(default=200, ge=1)
    max_watches_per_client: int = Field(default=100, ge=1)
    request_body_timeout: float = Field(default=60.0, gt=0)
    # The replicas' consumer group for the controllers (controllers.py): a replica's static
    # member name (empty: host:port, unique per replica on a host) and how long a dead
    # leader holds its partition before another replica takes the controllers over.
    instance: str = Field(default="", description="group member name; empty: host:port")
    group_session_timeout: float = Field(default=10.0, ge=6.0, le=300.0)
    # kube-apiserver's --event-ttl (1h): an Event is deleted this long after its last write.
    event_ttl_s: float = Field(default=3600.0, ge=0, description="0: Events never expire")
    event_sweep_s: float = Field(default=60.0, gt=0, description="how often expiry looks")
    # kube-controller-manager's --node-monitor-grace-period and --node-monitor-period
    # (nodelifecycle.py): a node unheard this long is NotReady and tainted unreachable.
    node_monitor_grace_s: float = Field(default=50.0, gt=0)
    node_monitor_period_s: float = Field(
        default=5.0, ge=0, description="how often nodes' heartbeats are checked; 0: never"
    )
    # kube-controller-manager's disruption controller (disruptionsync.py): budgets' status.
    disruption_sync_s: float = Field(
        default=1.0, ge=0, description="how often PodDisruptionBudgets are counted; 0: never"
    )
    namespace_sweep_s: float = Field(
        default=30.0, gt=0, description="how often a namespace left Terminating is looked for"
    )

    def limits(self) -> Limits:
        return Limits(
            max_request_bytes=self.max_request_bytes,
            max_requests_inflight=self.max_requests_inflight,
            max_mutating_requests_inflight=self.max_mutating_requests_inflight,
            max_watches_per_client=self.max_watches_per_client,
            request_body_timeout=self.request_body_timeout,
        )
