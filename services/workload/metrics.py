"""The workload controller's own metrics."""

from __future__ import annotations

from prometheus_client import Gauge

OWNED_PARTITION = Gauge(
    "inplace_workload_partition_owned",
    "1 for each `workloads` partition whose CloneSets this process decides about (its "
    "consumer group's share)",
    ["partition"],
)
