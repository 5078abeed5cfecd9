"""The workload controller's own settings, from INPLACE_WORKLOAD_* environment variables."""

from __future__ import annotations

import socket

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class WorkloadConfig(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="INPLACE_WORKLOAD_", extra="ignore")

    # The InPlaceWorkloadVerticalScaling feature gate (OpenKruise's name). Off, every
    # template change (resources included) recreates pods.
    vertical_scaling: bool = Field(
        default=True, description="InPlaceWorkloadVerticalScaling: resize pods in place"
    )
    apiserver_url: str = Field(
        default="http://127.0.0.1:8080", description="apiserver the workload controller calls"
    )
    kubeconfig: str = Field(
        default="", description="kubeconfig of the workload controller (wins over the URL)"
    )
    # Controller processes share the CloneSets in one consumer group on the `workloads` topic
    # (README "Several workload controllers"): a process that dies without leaving gives its
    # CloneSets up after this long without a heartbeat.
    group_session_timeout: float = Field(default=10.0, ge=6.0, le=300.0)
    # Static group membership (KIP-345): restarted under the same name, a process gets its
    # CloneSets back at once. Several processes on one host need a name each (`inplace up
    # --workloads N` gives workload-1 … workload-N).
    instance: str = Field(default_factory=socket.gethostname, min_length=1)
