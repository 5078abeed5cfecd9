"""Node Leases (coordination.k8s.io/v1 in `kube-node-lease`), read-only: a kubelet renews its
node's Lease every 10 s; here the kubelet process serving a node writes the node's usage
sample every `INPLACE_KUBELET_USAGE_EVERY_S` (`usage.py`), and the last sample's time is the
Lease's renewTime, so `kubectl describe node` shows when the node was last heard from (a
stale one when its kubelet is gone). A node not heard from since this apiserver started
following, two minutes before its start, has no Lease."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from inplace.core.readmodel import ReadModel
from schemas.base import format_micro_time, format_time
from schemas.k8s import Node
from services.apiserver import errors
from services.apiserver.http import group_routes, ok
from services.apiserver.usage import UsageFollower

GROUP, VERSION = "coordination.k8s.io", "v1"
NAMESPACE = "kube-node-lease"
DURATION_S = 40  # the kubelet's nodeLeaseDurationSeconds
RESOURCES: list[dict[str, Any]] = [
    {"name": "leases", "singularName": "lease", "namespaced": True, "kind": "Lease",
     "verbs": ["get", "list"]},
]  # fmt: skip


def node_lease(node: Node, renewed: datetime) -> dict[str, Any]:
    name = node.metadata.name or ""
    metadata: dict[str, Any] = {"name": name, "namespace": NAMESPACE}
    if node.metadata.creation_timestamp is not None:
        metadata["creationTimestamp"] = format_time(node.metadata.creation_timestamp)
    metadata["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Node", "name": name, "uid": node.metadata.uid or ""}
    ]
    return {
        "kind": "Lease",
        "apiVersion": f"{GROUP}/{VERSION}",
        "metadata": metadata,
        "spec": {
            "holderIdentity": name,
            "leaseDurationSeconds": DURATION_S,
            "renewTime": format_micro_time(renewed),
        },
    }


def lease_routes(model: ReadModel, samples: UsageFollower) -> list[Route]:
    base = f"/apis/{GROUP}/{VERSION}"

    def leases(namespace: str | None) -> list[dict[str, Any]]:
        if namespace not in (None, NAMESPACE):
            return []
        return [
            node_lease(node, datetime.fromtimestamp(written, UTC))
            for name, written in sorted(samples.heard().items())
            if (node := model.get("nodes", name)) is not None
        ]

    async def list_leases(request: Request) -> Response:
        items = leases(request.path_params.get("namespace"))
        return ok({"kind": "LeaseList", "apiVersion": f"{GROUP}/{VERSION}", "metadata": {},
                   "items": items})  # fmt: skip

    async def get_lease(request: Request) -> Response:
        name = request.path_params["name"]
        for lease in leases(request.path_params["namespace"]):
            if lease["metadata"]["name"] == name:
                return ok(lease)
        raise errors.not_found("Lease", name)

    return [
        *group_routes(GROUP, VERSION, RESOURCES),
        Route(f"{base}/leases", list_leases, methods=["GET"]),
        Route(f"{base}/namespaces/{{namespace}}/leases", list_leases, methods=["GET"]),
        Route(f"{base}/namespaces/{{namespace}}/leases/{{name}}", get_lease, methods=["GET"]),
    ]
