"""NodeMetrics and PodMetrics as metrics-server writes them (services/apiserver/metricsapi.py)."""

from __future__ import annotations

from datetime import UTC, datetime

from schemas.usage import ContainerUsage, NodeUsage, PodUsage
from services.apiserver.metricsapi import node_metrics, pod_metrics

AT = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


def test_pod_and_node_metrics_carry_metrics_servers_units() -> None:
    containers = [ContainerUsage(name="app", cpu_nanocores=250_000_000, memory_bytes=100 << 20)]
    web = PodUsage(namespace="team", name="web", containers=containers)
    sample = NodeUsage(node="node-0", timestamp=AT, window_seconds=15.0,
                       cpu_nanocores=250_000_000, memory_bytes=100 << 20, pods=[web])  # fmt: skip
    pod = pod_metrics(web, sample, {"app": "web"}, AT)
    assert pod == {
        "kind": "PodMetrics",
        "apiVersion": "metrics.k8s.io/v1beta1",
        "metadata": {
            "name": "web",
            "namespace": "team",
            "creationTimestamp": "2026-11-27T12:00:00Z",
            "labels": {"app": "web"},
        },
        "timestamp": "2026-11-27T12:00:00Z",
        "window": "15s",
        "containers": [{"name": "app", "usage": {"cpu": "250000000n", "memory": "102400Ki"}}],
    }
    node = node_metrics(sample, {}, AT)
    assert node["usage"] == {"cpu": "250000000n", "memory": "102400Ki"}
    assert "labels" not in node["metadata"]
