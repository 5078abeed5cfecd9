"""The scheduler's cache: nodes, and running sums of the pods placed on them (issue 6).

Like kube-scheduler's NodeInfo (pkg/scheduler/framework/types.go), every node keeps the sum of
the requests of its pods. A pod change subtracts the pod's old contribution and adds its new one,
so an add, update or removal costs O(resources) after O(containers) to price the pod, and nothing
ever re-sums a node. Nodes and pods arrive on different topics, so either may come first: a pod
bound to a node the cache has not seen yet is counted on a placeholder ("ghost") node that the
node's registration later fills in, as kube-scheduler's cache does.

What a placed pod counts for (KEP-1287's rule) is `schemas.demand`: the projection stores it too.

The cache also holds the pods that failed to schedule (kube-scheduler's unschedulable pods), so
`placement.pending_to_retry` can pick the few that a freed node may now host.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from schemas.demand import (
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    PodDemand,
    amount,
    effective_requests,
    pod_demand,
)
from schemas.k8s import RESOURCE_CPU, RESOURCE_MEMORY, RESOURCE_PODS, Node, Pod
from schemas.keys import pod_key
from schemas.podview import PodLike, is_terminal
from schemas.resources import is_resize_infeasible
from services.scheduler.nodeaffinity import (
    DEFAULT_PLACEMENT,
    NodeFacts,
    PodPlacement,
    filter_reason,
    placement_of,
)

__all__ = [
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "CapacityFreed",
    "ClusterChange",
    "FreeReason",
    "NodeInfo",
    "PendingPod",
    "PendingPodShrunk",
    "PodDemand",
    "SchedulerCache",
    "amount",
    "effective_requests",
    "is_resize_infeasible",
    "pod_demand",
]

FreeReason = Literal[
    "PodDeleted", "PodScaledDown", "NodeAdded", "NodeCapacityChanged", "NodeLabelOrTaintChanged"
]


# --- nodes ----------------------------------------------------------------------------------------


class NodeInfo:
    """One node's allocatable resources and the running sums of the pods on it."""

    __slots__ = (
        "allocatable_cpu",
        "allocatable_memory",
        "allocatable_others",
        "allowed_pods",
        "blocked_reason",
        "facts",
        "free_cpu",
        "free_memory",
        "free_pods",
        "name",
        "non_zero_cpu",
        "non_zero_free_cpu",
        "non_zero_free_memory",
        "non_zero_memory",
        "pod_count",
        "present",
        "requested_cpu",
        "requested_memory",
        "requested_others",
    )

    def __init__(self, name: str) -> None:
        self.name = name
        # False for a ghost: pods are bound to it but its NodeRegistered has not been seen
        # (or it was deleted while pods still counted on it). Ghosts are never scheduled onto.
        self.present = False
        self.allocatable_cpu = 0
        self.allocatable_memory = 0
        self.allocatable_others: dict[str, int] = {}
        # Kubernetes reads allocatable["pods"]; a node that omits it accepts no pods.
        self.allowed_pods = 0
        self.blocked_reason: str | None = None
        self.facts = NodeFacts(name, {}, (), False)
        self.requested_cpu = 0
        self.requested_memory = 0
        self.requested_others: dict[str, int] = {}
        self.non_zero_cpu = 0
        self.non_zero_memory = 0
        self.pod_count = 0
        # allocatable minus the sums above, kept in step by _refresh: every decision reads them
        # for every node, so they are computed once per change instead of once per look.
        self.free_pods = 0
        self.free_cpu = 0
        self.free_memory = 0
        self.non_zero_free_cpu = 0
        self.non_zero_free_memory = 0

    def allocatable(self) -> dict[str, int]:
        """Allocatable per resource (cpu in milli), `pods` included."""
        return {
            RESOURCE_CPU: self.allocatable_cpu,
            RESOURCE_MEMORY: self.allocatable_memory,
            RESOURCE_PODS: self.allowed_pods,
            **self.allocatable_others,
        }

    def requested(self) -> dict[str, int]:
        """Sum of the requests of the pods on this node (cpu in milli); zero sums omitted."""
        result = {name: value for name, value in self.requested_others.items() if value}
        if self.requested_cpu:
            result[RESOURCE_CPU] = self.requested_cpu
        if self.requested_memory:
            result[RESOURCE_MEMORY] = self.requested_memory
        return result

    def free(self, name: str) -> int:
        """Allocatable minus requested for one resource (negative when overcommitted)."""
        if name == RESOURCE_CPU:
            return self.free_cpu
        if name == RESOURCE_MEMORY:
            return self.free_memory
        return self.allocatable_others.get(name, 0) - self.requested_others.get(name, 0)

    def _refresh(self) -> None:
        self.free_pods = self.allowed_pods - self.pod_count
        self.free_cpu = self.allocatable_cpu - self.requested_cpu
        self.free_memory = self.allocatable_memory - self.requested_memory
        self.non_zero_free_cpu = self.allocatable_cpu - self.non_zero_cpu
        self.non_zero_free_memory = self.allocatable_memory - self.non_zero_memory

    def _set_node(self, node: Node) -> None:
        allocatable = node.status.allocatable or {}
        ints = {name: amount(name, q) for name, q in allocatable.items()}
        self.present = True
        self.allocatable_cpu = ints.pop(RESOURCE_CPU, 0)
        self.allocatable_memory = ints.pop(RESOURCE_MEMORY, 0)
        self.allowed_pods = ints.pop(RESOURCE_PODS, 0)
        self.allocatable_others = ints
        self.facts = NodeFacts(
            self.name,
            dict(node.metadata.labels or {}),
            tuple(node.spec.taints or ()),
            bool(node.spec.unschedulable),
        )
        self.blocked_reason = filter_reason(DEFAULT_PLACEMENT, self.facts)
        self._refresh()

    def _apply(self, demand: PodDemand, sign: int) -> None:
        self.requested_cpu += sign * demand.cpu
        self.requested_memory += sign * demand.memory
        for name, value in demand.others:
            total = self.requested_others.get(name, 0) + sign * value
            if total:
                self.requested_others[name] = total
            else:
                self.requested_others.pop(name, None)
        self.non_zero_cpu += sign * demand.non_zero_cpu
        self.non_zero_memory += sign * demand.non_zero_memory
        self.pod_count += sign
        self._refresh()

    def _capacity_grew(self, before: tuple[int, int, int, dict[str, int], str | None]) -> bool:
        cpu, memory, pods, others, blocked = before
        if blocked is not None and self.blocked_reason is None:
            return True
        if self.allocatable_cpu > cpu or self.allocatable_memory > memory:
            return True
        if self.allowed_pods > pods:
            return True
        return any(value > others.get(name, 0) for name, value in self.allocatable_others.items())

    def _snapshot(self) -> tuple[int, int, int, dict[str, int], str | None]:
        return (
            self.allocatable_cpu,
            self.allocatable_memory,
            self.allowed_pods,
            dict(self.allocatable_others),
            self.blocked_reason,
        )


# --- changes that may let pending pods in ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CapacityFreed:
    """A node now has room it did not have: a pod left or shrank, or the node grew or appeared.

    Kubernetes' queueing hints for NodeResourcesFit react to exactly these (Pod/Delete,
    UpdatePodScaleDown, Node/Add, UpdateNodeAllocatable); KEP-3953 relies on the last one.
    """

    node_name: str
    reason: FreeReason


@dataclass(frozen=True, slots=True)
class PendingPodShrunk:
    """An unscheduled pod itself now asks for less."""

    pod_key: str


ClusterChange = CapacityFreed | PendingPodShrunk


@dataclass(frozen=True, slots=True)
class PendingPod:
    """A pod that failed to schedule, waiting for a change that may let it in."""

    pod: Pod
    demand: PodDemand
    priority: int
    seq: int  # arrival order: retries go by priority, then first come first served
    placement: PodPlacement  # read once: a freed node checks it against every candidate


@dataclass(slots=True)
class _Placed:
    node_name: str
    demand: PodDemand


class SchedulerCache:
    """Nodes, the pods placed on them (as demands) and the pods waiting to be placed."""

    def __init__(self) -> None:
        self._nodes: dict[str, NodeInfo] = {}
        self._placed: dict[str, _Placed] = {}
        self._pending: dict[str, PendingPod] = {}
        # Pending pods sorted by cpu request: a freed node with f milli-cpu free can only take
        # pods asking ≤ f, found by bisection instead of a scan of every pending pod.
        self._pending_by_cpu: list[tuple[int, int, str]] = []
        self._seq = itertools.count()
        self._sorted: tuple[list[NodeInfo], list[NodeInfo]] | None = None

    # -- nodes ------------------------------------------------------------------------------

    def upsert_node(self, node: Node) -> CapacityFreed | None:
        """NodeRegistered / NodeUpdated / NodeCapacityChanged (O(resources))."""
        name = node.metadata.name or ""
        info = self._nodes.get(name)
        if info is None:
            info = self._nodes[name] = NodeInfo(name)
        was_present = info.present
        was_blocked = info.blocked_reason
        before = info._snapshot()
        facts = info.facts
        info._set_node(node)
        if not was_present:
            self._sorted = None
            return CapacityFreed(name, "NodeAdded")
        if info.blocked_reason != was_blocked:
            self._sorted = None
        if info._capacity_grew(before):
            return CapacityFreed(name, "NodeCapacityChanged")
        # kube-scheduler's UpdateNodeLabel / UpdateNodeTaint hints: a pending pod's selector,
        # affinity or tolerations may match the node now (even one still blocked for a pod
        # without them: a new taint may be one the pod tolerates). Only a cordon cannot.
        if info.facts != facts and not (info.facts.unschedulable and not facts.unschedulable):
            return CapacityFreed(name, "NodeLabelOrTaintChanged")
        return None

    def remove_node(self, name: str) -> None:
        """NodeDeleted: stop scheduling onto it; pods still bound keep counting until removed."""
        info = self._nodes.get(name)
        if info is None:
            return
        if info.pod_count == 0:
            del self._nodes[name]
        else:
            info.present = False
        self._sorted = None

    def node(self, name: str) -> NodeInfo | None:
        """The node's info, ghosts included."""
        return self._nodes.get(name)

    def nodes(self) -> list[NodeInfo]:
        """Registered nodes (no ghosts), by name: the order every decision walks them in."""
        return list(self._node_order()[0])

    def schedulable_nodes(self) -> list[NodeInfo]:
        """Registered nodes that accept pods at all, by name. The cache's own list: read only."""
        return self._node_order()[1]

    def _node_order(self) -> tuple[list[NodeInfo], list[NodeInfo]]:
        # Sorted once per node add/remove/(un)cordon, not per decision; the NodeInfo objects
        # in it change in place as pods come and go.
        if self._sorted is None:
            present = sorted((n for n in self._nodes.values() if n.present), key=lambda n: n.name)
            self._sorted = (present, [n for n in present if n.blocked_reason is None])
        return self._sorted

    # -- placed pods --------------------------------------------------------------------------

    def upsert_pod(self, pod: PodLike) -> ClusterChange | None:
        """Any pod event folded into the pod (created, bound, resized, allocated, phase …).

        Returns the change when it may let a pending pod in: a placed pod that shrank, or ended
        (terminal phase), or a pending pod that now asks for less.
        """
        key = pod_key(pod)
        node_name = pod.spec.node_name
        if is_terminal(pod):
            return self.remove_pod(key)
        if node_name is None:
            return self._update_pending(key, pod)
        return self._place(key, node_name, pod_demand(pod))

    def place(self, key: str, node_name: str, demand: PodDemand) -> None:
        """Count a placed pod already priced (the projection's demand, at a start)."""
        self._place(key, node_name, demand)

    def assume(self, pod: Pod, node_name: str) -> None:
        """Count a pod on the node just chosen for it, before its PodBound comes back.

        The next decision must see the room this pod takes, or two pods could be placed into
        the same gap; the PodBound that follows is then a no-op update.
        """
        self._place(pod_key(pod), node_name, pod_demand(pod))

    def remove_pod(self, key: str) -> CapacityFreed | None:
        """PodDeleted / PodEvicted / terminal phase: the pod's node gets its room back."""
        self._drop_pending(key)
        placed = self._placed.pop(key, None)
        if placed is None:
            return None
        info = self._nodes[placed.node_name]
        info._apply(placed.demand, -1)
        if not info.present and info.pod_count == 0:
            del self._nodes[placed.node_name]
            return None
        return CapacityFreed(placed.node_name, "PodDeleted")

    def placed_node(self, key: str) -> str | None:
        """The node a pod is counted on, if any."""
        placed = self._placed.get(key)
        return placed.node_name if placed is not None else None

    def placed_demand(self, key: str) -> PodDemand | None:
        """What a placed pod is counted for."""
        placed = self._placed.get(key)
        return placed.demand if placed is not None else None

    def placed_keys(self) -> Iterator[str]:
        return iter(self._placed)

    def _place(self, key: str, node_name: str, demand: PodDemand) -> CapacityFreed | None:
        self._drop_pending(key)
        old = self._placed.get(key)
        info = self._nodes.get(node_name)
        if info is None:
            info = self._nodes[node_name] = NodeInfo(node_name)  # ghost until it registers
        if old is None:
            self._placed[key] = _Placed(node_name, demand)
            info._apply(demand, +1)
            return None
        if old.node_name == node_name:
            if old.demand == demand:
                return None
            shrunk = old.demand.shrinks(demand)
            info._apply(old.demand, -1)
            info._apply(demand, +1)
            old.demand = demand
            return CapacityFreed(node_name, "PodScaledDown") if shrunk else None
        # A pod never moves in Kubernetes; if the log says otherwise, believe the newest fact.
        freed = self.remove_pod(key)
        self._placed[key] = _Placed(node_name, demand)
        self._nodes.setdefault(node_name, NodeInfo(node_name))._apply(demand, +1)
        return freed

    # -- pending pods ---------------------------------------------------------------------------

    def mark_unschedulable(self, pod: Pod) -> None:
        """Park a pod that failed to schedule until a change may let it in."""
        self._park(pod_key(pod), pod, pod_demand(pod))

    def _park(self, key: str, pod: Pod, demand: PodDemand) -> None:
        previous = self._pending.get(key)
        if previous is not None and previous.demand == demand:
            self._pending[key] = PendingPod(
                pod, demand, previous.priority, previous.seq, placement_of(pod)
            )
            return
        self._drop_pending(key)
        seq = previous.seq if previous is not None else next(self._seq)
        self._pending[key] = PendingPod(pod, demand, pod.spec.priority or 0, seq, placement_of(pod))
        bisect.insort(self._pending_by_cpu, (demand.cpu, seq, key))

    def pending(self, key: str) -> PendingPod | None:
        return self._pending.get(key)

    def pending_count(self) -> int:
        return len(self._pending)

    def pending_up_to_cpu(self, milli_cpu: int) -> list[PendingPod]:
        """Pending pods asking at most `milli_cpu` (bisection: O(log n + answer))."""
        end = bisect.bisect_right(self._pending_by_cpu, (milli_cpu, float("inf"), ""))
        return [self._pending[key] for _, _, key in self._pending_by_cpu[:end]]

    def _update_pending(self, key: str, pod: Pod) -> PendingPodShrunk | None:
        previous = self._pending.get(key)
        if previous is None:
            return None  # a new pod: the loop schedules it; nothing waits on it yet
        demand = pod_demand(pod)
        self._park(key, pod, demand)
        return PendingPodShrunk(key) if previous.demand.shrinks(demand) else None

    def _drop_pending(self, key: str) -> None:
        previous = self._pending.pop(key, None)
        if previous is None:
            return
        entry = (previous.demand.cpu, previous.seq, key)
        index = bisect.bisect_left(self._pending_by_cpu, entry)
        del self._pending_by_cpu[index]
