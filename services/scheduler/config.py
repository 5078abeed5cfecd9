"""The scheduler's own settings, from INPLACE_SCHEDULER_* environment variables."""

from __future__ import annotations

import socket

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class SchedulerConfig(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="INPLACE_SCHEDULER_", extra="ignore")

    # Schedulers form one consumer group; the one holding its leader partition binds. A
    # leader that dies without leaving hands over after this long without a heartbeat.
    group_session_timeout: float = Field(default=10.0, ge=6.0, le=300.0)
    # Static group membership (KIP-345): restarted under the same name, a scheduler gets its
    # partitions (and the lead, if it had it) back at once.
    instance: str = Field(default_factory=socket.gethostname, min_length=1)
