"""A node's Lease as `kubectl describe node` reads it (services/apiserver/nodeleases.py)."""

from __future__ import annotations

from datetime import UTC, datetime

from schemas.k8s import Node
from services.apiserver.nodeleases import node_lease


def test_the_lease_is_held_by_the_node_and_renewed_when_it_was_last_heard_from() -> None:
    node = Node.model_validate(
        {"metadata": {"name": "node-0", "uid": "u-0", "creationTimestamp": "2026-11-27T10:00:00Z"}}
    )
    lease = node_lease(node, datetime(2026, 11, 27, 12, 0, 5, 250_000, tzinfo=UTC))
    assert lease == {
        "kind": "Lease",
        "apiVersion": "coordination.k8s.io/v1",
        "metadata": {
            "name": "node-0",
            "namespace": "kube-node-lease",
            "creationTimestamp": "2026-11-27T10:00:00Z",
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Node", "name": "node-0", "uid": "u-0"}
            ],
        },
        "spec": {
            "holderIdentity": "node-0",
            "leaseDurationSeconds": 40,
            "renewTime": "2026-11-27T12:00:05.250000Z",
        },
    }
