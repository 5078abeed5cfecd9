"""The kubelet's KEP-3953 metrics (Monitoring Requirements), per simulated node.

"For each node, the value of the metric `node_resize_resync_request_total` is expected to match
the number of time the node is resized", and `node_resize_resync_errors_total` to stay zero: the
kubelet increments the first once per capacity change it resyncs (retries excluded) and the
second once per failed resync attempt (each attempt that ends in a FailedNodeResize event). One
kubelet process hosts many simulated nodes, hence the `node` label.
"""

from __future__ import annotations

from prometheus_client import Counter

RESYNC_REQUESTS = Counter(
    "node_resize_resync_request_total",
    "Node capacity changes the kubelet resynced its containers and resource managers for",
    ["node"],
)
RESYNC_ERRORS = Counter(
    "node_resize_resync_errors_total",
    "Failed attempts to resync containers and resource managers after a node capacity change",
    ["node"],
)
