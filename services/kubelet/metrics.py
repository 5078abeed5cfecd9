"""The kubelet's metrics (KEP-1287 Instrumentation)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

RESIZE_REQUESTS = Counter(
    "kubelet_container_resize_requests_total",
    "Pod resize requests the kubelet handled, by outcome",
    ["state"],  # proposed | infeasible | deferred | completed | canceled
)
ACTUATION_SECONDS = Histogram(
    "kubelet_pod_resize_actuation_duration_seconds",
    "Time to apply an accepted resize through the runtime",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
RESIZE_SECONDS = Histogram(
    "kubelet_pod_resize_duration_seconds",
    "Time from a resize's allocation to its completion (actual == allocated == desired)",
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
RUNTIME_ERRORS = Counter(
    "kubelet_runtime_operation_errors_total", "Failed runtime calls", ["operation"]
)
