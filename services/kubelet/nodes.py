"""The simulated nodes one kubelet process hosts (like kwok): names, capacity, allocatable."""

from __future__ import annotations

from inplace.core.settings import Settings
from schemas.k8s import Node, ResourceList
from schemas.quantity import Quantity
from schemas.resources import subtract


def node_names(settings: Settings) -> list[str]:
    return [f"{settings.kubelet_node_prefix}-{i}" for i in range(settings.kubelet_nodes)]


def node_object(settings: Settings, name: str) -> Node:
    """A Ready node with capacity, and allocatable = capacity - reserved (the kubelet's
    --system-reserved/--kube-reserved)."""
    capacity: ResourceList = {
        "cpu": Quantity.parse(settings.kubelet_node_cpu),
        "memory": Quantity.parse(settings.kubelet_node_memory),
        "pods": Quantity.from_int(settings.kubelet_node_pods),
    }
    reserved: ResourceList = {
        "cpu": Quantity.parse(settings.kubelet_reserved_cpu),
        "memory": Quantity.parse(settings.kubelet_reserved_memory),
    }
    allocatable = subtract(capacity, reserved)
    return Node.model_validate(
        {
            "metadata": {
                "name": name,
                "labels": {"kubernetes.io/hostname": name, "type": "inplace-simulated"},
            },
            "status": {
                "capacity": {k: str(v) for k, v in capacity.items()},
                "allocatable": {k: str(v) for k, v in allocatable.items()},
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "reason": "KubeletReady",
                        "message": "kubelet is posting ready status",
                    }
                ],
            },
        }
    )
