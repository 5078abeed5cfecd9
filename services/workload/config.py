"""The workload controller's own settings, from INPLACE_WORKLOAD_* environment variables."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from inplace.core.bus.leases import GroupMember


class WorkloadConfig(GroupMember):  # controllers share the CloneSets in one group
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
