"""The kubelet's metrics, named as Kubernetes 1.34+ names them (KEP-1287 Instrumentation)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

RESIZE_REQUESTS = Counter(
    "kubelet_container_resize_requests_total",
    "Pod resize requests the kubelet handled, by outcome; proposed = completed + infeasible + "
    "canceled + still open (deferred counts waits, not outcomes)",
    ["state"],  # proposed | infeasible | deferred | completed | canceled
)
REQUESTED_RESIZES = Counter(
    "kubelet_container_requested_resizes_total",
    "Container resources a proposed resize changes",
    ["resource", "requirement", "operation"],
)
POD_RESIZE_MS = Histogram(
    "kubelet_pod_resize_duration_milliseconds",
    "From the kubelet accepting a resize (or its last failed attempt) to its completion "
    "(success=true: actual == allocated == desired) or to a runtime failure (success=false)",
    ["success"],
    buckets=(10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000),
)
PENDING_RESIZES = Gauge(
    "kubelet_pod_pending_resizes", "Pods whose resize waits, by reason", ["reason"]
)
IN_PROGRESS_RESIZES = Gauge("kubelet_pod_in_progress_resizes", "Pods being resized now")
INFEASIBLE_RESIZES = Counter(
    "kubelet_pod_infeasible_resizes_total", "Resizes found Infeasible", ["reason_detail"]
)
DEFERRED_ACCEPTED = Counter(
    "kubelet_pod_deferred_accepted_resizes_total",
    "Deferred resizes later accepted, by what retried them",
    ["retry_trigger"],  # pod_resized | pod_deleted | node_resized | periodic_retry
)
RUNTIME_OP_SECONDS = Histogram(
    "kubelet_runtime_operations_duration_seconds",
    "Runtime calls the kubelet made, by operation",
    ["operation_type"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
EVENTS_SPAM_FILTERED = Counter(
    "inplace_kubelet_events_spam_filtered_total",
    "Events the kubelet's recorder held back: past 25 about one object, one per 5 minutes "
    "(client-go's EventCorrelator spam filter)",
)
RUNTIME_OP_ERRORS = Counter(
    "kubelet_runtime_operations_errors_total", "Failed runtime calls", ["operation_type"]
)
OWNED_NODE = Gauge(
    "inplace_kubelet_node_owned",
    "1 for each node this kubelet process serves (its consumer group's share of the nodes)",
    ["node"],
)
# As client-go's workqueue_depth: what the node agents have yet to reconcile.
QUEUED_RECONCILES = Gauge(
    "inplace_kubelet_queued_reconciles",
    "Pods (and node changes) waiting in this process's node agents' queues for a reconcile",
)
PODS_RESTORING = Gauge(
    "inplace_kubelet_pods_restoring",
    "Pods of a restart or node takeover, re-admitted from the checkpoint, not yet put back "
    "into the runtime (0 once every one is back)",
)
USAGE_ROUND_SECONDS = Histogram(
    "inplace_kubelet_usage_round_seconds",
    "One resource usage round: every served node's containers sampled and the records "
    "written (the nodes' heartbeats; a round near the node monitor grace period is trouble)",
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80),
)
