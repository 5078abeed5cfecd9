"""metrics.k8s.io/v1beta1, as metrics-server serves it behind kube-apiserver: NodeMetrics and
PodMetrics from the kubelets' latest usage samples (`usage.py`), for `kubectl top` and the
recommenders of VPA-like autoscalers. A pod or node the read model no longer holds is left out
even while its last sample is fresh; labels come from the object, as metrics-server copies
them."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from inplace.core.readmodel import ReadModel
from schemas.base import format_time
from schemas.usage import ContainerUsage, NodeUsage, PodUsage
from services.apiserver import discovery, errors
from services.apiserver.http import group_routes, ok
from services.apiserver.selectors import label_matcher
from services.apiserver.usage import UsageFollower

API_VERSION = f"{discovery.METRICS_GROUP}/{discovery.METRICS_VERSION}"


def usage(cpu_nanocores: int, memory_bytes: int) -> dict[str, str]:
    """A usage ResourceList in metrics-server's units: CPU in nanocores, memory in Ki."""
    return {"cpu": f"{cpu_nanocores}n", "memory": f"{memory_bytes // 1024}Ki"}


def _sampled(sample: NodeUsage) -> dict[str, str]:
    return {
        "timestamp": format_time(sample.timestamp),
        "window": f"{sample.window_seconds:g}s",
    }


def node_metrics(sample: NodeUsage, labels: dict[str, str], now: datetime) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": sample.node, "creationTimestamp": format_time(now)}
    if labels:
        metadata["labels"] = labels
    return {
        "kind": "NodeMetrics",
        "apiVersion": API_VERSION,
        "metadata": metadata,
        **_sampled(sample),
        "usage": usage(sample.cpu_nanocores, sample.memory_bytes),
    }


def pod_metrics(
    pod: PodUsage, sample: NodeUsage, labels: dict[str, str], now: datetime
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": pod.name,
        "namespace": pod.namespace,
        "creationTimestamp": format_time(now),
    }
    if labels:
        metadata["labels"] = labels
    return {
        "kind": "PodMetrics",
        "apiVersion": API_VERSION,
        "metadata": metadata,
        **_sampled(sample),
        "containers": [_container(c) for c in pod.containers],
    }


def _container(container: ContainerUsage) -> dict[str, Any]:
    return {"name": container.name, "usage": usage(container.cpu_nanocores, container.memory_bytes)}


def _listed(kind: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"kind": kind, "apiVersion": API_VERSION, "metadata": {}, "items": items}


def metrics_routes(model: ReadModel, samples: UsageFollower) -> list[Route]:
    base = f"/apis/{API_VERSION}"

    def node_labels(name: str) -> dict[str, str] | None:
        node = model.get("nodes", name)
        return None if node is None else dict(node.metadata.labels or {})

    def pods(namespace: str | None) -> list[dict[str, Any]]:
        now, out = datetime.now(UTC), []
        for sample in samples.nodes():
            for entry in sample.pods:
                if namespace is not None and entry.namespace != namespace:
                    continue
                pod = model.get("pods", (entry.namespace, entry.name))
                if pod is not None and pod.spec.node_name == sample.node:
                    out.append(pod_metrics(entry, sample, dict(pod.metadata.labels or {}), now))
        return sorted(out, key=lambda m: (m["metadata"]["namespace"], m["metadata"]["name"]))

    def selected(request: Request, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        keep: Callable[[dict[str, Any]], bool] = label_matcher(
            request.query_params.get("labelSelector")
        )
        return [m for m in items if keep(m)]

    async def list_nodes(request: Request) -> Response:
        now = datetime.now(UTC)
        items = [
            node_metrics(s, labels, now)
            for s in samples.nodes()
            if (labels := node_labels(s.node)) is not None
        ]
        return ok(_listed("NodeMetricsList", selected(request, items)))

    async def get_node(request: Request) -> Response:
        name = request.path_params["name"]
        sample, labels = samples.node(name), node_labels(name)
        if sample is None or labels is None:
            raise errors.not_found("NodeMetrics", name)
        return ok(node_metrics(sample, labels, datetime.now(UTC)))

    async def list_pods(request: Request) -> Response:
        namespace = request.path_params.get("namespace")
        return ok(_listed("PodMetricsList", selected(request, pods(namespace))))

    async def get_pod(request: Request) -> Response:
        namespace, name = request.path_params["namespace"], request.path_params["name"]
        for found in pods(namespace):
            if found["metadata"]["name"] == name:
                return ok(found)
        raise errors.not_found("PodMetrics", name)

    return [
        *group_routes(
            discovery.METRICS_GROUP, discovery.METRICS_VERSION, discovery.METRICS_RESOURCES
        ),
        Route(f"{base}/nodes", list_nodes, methods=["GET"]),
        Route(f"{base}/nodes/{{name}}", get_node, methods=["GET"]),
        Route(f"{base}/pods", list_pods, methods=["GET"]),
        Route(f"{base}/namespaces/{{namespace}}/pods", list_pods, methods=["GET"]),
        Route(f"{base}/namespaces/{{namespace}}/pods/{{name}}", get_pod, methods=["GET"]),
    ]
