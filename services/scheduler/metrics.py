"""The scheduler's own metrics."""

from __future__ import annotations

from prometheus_client import Gauge

LEADING = Gauge(
    "inplace_scheduler_leading",
    "1 while this scheduler process binds pods (it holds its group's leader partition)",
)
