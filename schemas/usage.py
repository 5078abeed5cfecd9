"""Resource usage samples: what each node's containers use, as the kubelet measures it through
the CRI (ContainerStats) and the metrics API (`kubectl top`, a VPA's recommender) serves.

Telemetry, not state: the `usage` topic keeps an hour (the log of record is the event topics),
keyed by node; each record is the node's latest sample.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from schemas.base import MicroTime
from schemas.envelope import PayloadModel

USAGE = "usage"
RETENTION_MS = 3_600_000


class ContainerUsage(PayloadModel):
    name: str = Field(min_length=1)
    cpu_nanocores: int = Field(ge=0)
    memory_bytes: int = Field(ge=0)


class PodUsage(PayloadModel):
    namespace: str = Field(min_length=1)
    name: str = Field(min_length=1)
    containers: list[ContainerUsage]


class NodeUsage(PayloadModel):
    """One node's sample: each pod's containers' CPU rate over `window_seconds` before
    `timestamp` and memory working set at it; the node's figures are its pods' sums."""

    node: str = Field(min_length=1)
    timestamp: MicroTime
    window_seconds: float = Field(gt=0)
    cpu_nanocores: int = Field(ge=0)
    memory_bytes: int = Field(ge=0)
    pods: list[PodUsage]

    @property
    def at(self) -> datetime:
        return self.timestamp
