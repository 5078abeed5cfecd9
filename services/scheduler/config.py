"""The scheduler's own settings, from INPLACE_SCHEDULER_* environment variables."""

from __future__ import annotations

from pydantic_settings import SettingsConfigDict

from inplace.core.bus.leases import GroupMember


class SchedulerConfig(GroupMember):
    """Schedulers form one group; the one holding its leader partition binds (a leader that
    dies without leaving hands over after the session timeout)."""

    model_config = SettingsConfigDict(env_prefix="INPLACE_SCHEDULER_", extra="ignore")
