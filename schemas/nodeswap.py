"""Where a node's swap lives (one rule for every role).

Kubernetes (1.32+) reports swap in `status.nodeInfo.swap.capacity` (bytes), not as a resource
in `status.capacity`: no pod requests swap. A hot resize changes it like memory, though, and
NodeCapacityChanged carries a capacity list, so capacity *changes* hold it as a "swap" entry.
`place_swap` turns such a list into the Node's shape; `planning_capacity` turns a Node back
into the list a capacity change is planned and resynced on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from schemas.k8s import NodeStatus, NodeSwapStatus, NodeSystemInfo, ResourceList
from schemas.quantity import Quantity

__all__ = ["SWAP_RESOURCE", "place_swap", "planning_capacity"]

SWAP_RESOURCE: Final = "swap"


def place_swap(
    status: NodeStatus, capacity: Mapping[str, Quantity], allocatable: Mapping[str, Quantity]
) -> None:
    """Set `status` capacity and allocatable from lists that may hold a "swap" entry: swap goes
    to nodeInfo.swap.capacity (kept as it was when the lists have none)."""
    status.capacity = {k: v for k, v in capacity.items() if k != SWAP_RESOURCE}
    status.allocatable = {k: v for k, v in allocatable.items() if k != SWAP_RESOURCE}
    swap = capacity.get(SWAP_RESOURCE)
    if swap is None:
        return
    info = status.node_info or NodeSystemInfo()
    info.swap = NodeSwapStatus(capacity=max(0, swap.value()))
    status.node_info = info


def planning_capacity(status: NodeStatus) -> ResourceList:
    """`status.capacity` with the node's swap as a "swap" entry (absent when it reports none)."""
    capacity = dict(status.capacity or {})
    swap = status.node_info.swap if status.node_info else None
    if swap is not None and swap.capacity is not None:
        capacity[SWAP_RESOURCE] = Quantity.from_int(swap.capacity, "BinarySI")
    return capacity
