"""The simulated nodes one kubelet process hosts (like kwok): names, capacity, allocatable."""

from __future__ import annotations

from schemas.k8s import Node, ResourceList
from schemas.quantity import Quantity
from schemas.resources import subtract
from services.kubelet.config import KubeletConfig


def node_names(config: KubeletConfig) -> list[str]:
    return [f"{config.node_prefix}-{i}" for i in range(config.nodes)]


def node_object(config: KubeletConfig, name: str) -> Node:
    """A Ready node with capacity, and allocatable = capacity - reserved (the kubelet's
    --system-reserved/--kube-reserved)."""
    capacity: ResourceList = {
        "cpu": Quantity.parse(config.node_cpu),
        "memory": Quantity.parse(config.node_memory),
        "pods": Quantity.from_int(config.node_pods),
    }
    reserved: ResourceList = {
        "cpu": Quantity.parse(config.reserved_cpu),
        "memory": Quantity.parse(config.reserved_memory),
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
