"""Placement decisions over the scheduler cache: filter, score, bind or explain (issue 6).

Pure functions in the shape of kube-scheduler's default profile, restricted to what this control
plane models:
- filter: NodeUnschedulable, NodeAffinity (nodeSelector + required node affinity), TaintToleration
  (`nodeaffinity.py`), then NodeResourcesFit (pkg/scheduler/framework/
  plugins/noderesources/fit.go); a node fails on its first failing plugin and NodeResourcesFit
  reports every insufficient resource ("Too many pods", "Insufficient cpu", …);
- score: LeastAllocated, kube-scheduler's default strategy (plus preferred node affinity,
  weight 2, for pods that have it): per resource (allocatable - requested) * 100 / allocatable
  in integers, averaged over cpu and memory with weight 1 each, where `requested` counts
  100m / 200Mi for containers that set no request;
- tie-break: the smallest node name (kube-scheduler picks at random among equal scores; a
  replayed log must place pods the same way every time);
- failure: FitError's message, "0/3 nodes are available: 1 Insufficient memory, 2 Insufficient
  cpu." — one "<count> <reason>" per distinct reason, sorted as strings, joined by ", ", with a
  final period.

Every node is examined (kube-scheduler samples a percentage of large clusters); a decision is
O(nodes) and never depends on the number of pods already placed.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from schemas.events import NodeFit, SchedulingRecord
from schemas.k8s import Pod
from schemas.keys import pod_key
from services.scheduler.cache import (
    CapacityFreed,
    ClusterChange,
    NodeInfo,
    PendingPod,
    PendingPodShrunk,
    PodDemand,
    SchedulerCache,
    pod_demand,
)
from services.scheduler.nodeaffinity import (
    PodPlacement,
    filter_reason,
    is_default,
    placement_of,
    preference_score,
)

__all__ = [
    "MAX_NODE_SCORE",
    "NO_NODES_AVAILABLE",
    "Bound",
    "Unschedulable",
    "failed_scheduling_message",
    "filter_nodes",
    "node_reasons",
    "pending_to_retry",
    "schedule",
    "score",
]

MAX_NODE_SCORE: Final = 100
TOO_MANY_PODS: Final = "Too many pods"
# What kube-scheduler says when the cluster has no nodes at all (ErrNoNodesAvailable).
NO_NODES_AVAILABLE: Final = "no nodes available to schedule pods"


@dataclass(frozen=True, slots=True)
class Bound:
    """Bind the pod to this node (a PodBound event)."""

    node_name: str
    score: int


@dataclass(frozen=True, slots=True)
class Unschedulable:
    """No node fits: PodScheduled=False and a FailedScheduling event carry `message`."""

    message: str
    reasons: Mapping[str, tuple[str, ...]]  # node name → why it was filtered out
    record: SchedulingRecord | None = field(default=None, compare=False)  # inputs (issue 19)


# --- filter ---------------------------------------------------------------------------------------


def node_reasons(node: NodeInfo, demand: PodDemand) -> tuple[str, ...]:
    """Why `node` cannot take a pod with `demand`; empty when it fits.

    NodeResourcesFit only checks resources the pod requests (a zero request fits even an
    overcommitted node), and checks the pod count even for a pod that requests nothing.
    """
    if node.blocked_reason is not None:
        return (node.blocked_reason,)
    return _resource_reasons(node, demand)


def _resource_reasons(node: NodeInfo, demand: PodDemand) -> tuple[str, ...]:
    """NodeResourcesFit's reasons (every insufficient resource), after the other filters."""
    reasons: list[str] = []
    if node.pod_count + 1 > node.allowed_pods:
        reasons.append(TOO_MANY_PODS)
    if demand.cpu and demand.cpu > node.allocatable_cpu - node.requested_cpu:
        reasons.append("Insufficient cpu")
    if demand.memory and demand.memory > node.allocatable_memory - node.requested_memory:
        reasons.append("Insufficient memory")
    for name, value in demand.others:
        if value > node.free(name):
            reasons.append(f"Insufficient {name}")
    return tuple(reasons)


def filter_nodes(cache: SchedulerCache, pod: Pod) -> tuple[list[str], dict[str, tuple[str, ...]]]:
    """(names of the nodes that fit, by name; reasons for every node that does not)."""
    demand = pod_demand(pod)
    feasible: list[str] = []
    reasons: dict[str, tuple[str, ...]] = {}
    for node in cache.nodes():
        why = node_reasons(node, demand)
        if why:
            reasons[node.name] = why
        else:
            feasible.append(node.name)
    return feasible, reasons


# --- score ----------------------------------------------------------------------------------------


def _least_requested(requested: int, allocatable: int) -> int:
    if requested > allocatable:
        return 0
    return (allocatable - requested) * MAX_NODE_SCORE // allocatable


def score(node: NodeInfo, demand: PodDemand) -> int:
    """LeastAllocated score (0-100) of placing `demand` on `node`; higher is emptier.

    A resource the node has none of is left out of the average, as Kubernetes does.
    """
    total = 0
    weights = 0
    if node.allocatable_cpu:
        total += _least_requested(node.non_zero_cpu + demand.non_zero_cpu, node.allocatable_cpu)
        weights += 1
    if node.allocatable_memory:
        requested = node.non_zero_memory + demand.non_zero_memory
        total += _least_requested(requested, node.allocatable_memory)
        weights += 1
    return total // weights if weights else 0


# --- decide ---------------------------------------------------------------------------------------


def failed_scheduling_message(num_nodes: int, reasons: Mapping[str, tuple[str, ...]]) -> str:
    """FitError.Error(): "0/N nodes are available: <count> <reason>, …." (sorted as strings)."""
    if num_nodes == 0:
        return NO_NODES_AVAILABLE
    histogram = Counter(reason for why in reasons.values() for reason in why)
    parts = sorted(f"{count} {reason}" for reason, count in histogram.items())
    return f"0/{num_nodes} nodes are available: {', '.join(parts)}."


def schedule(cache: SchedulerCache, pod: Pod) -> Bound | Unschedulable:
    """Pick the feasible node with the best score (ties: smallest name), or explain why none.

    Pure: the caller records the outcome (`cache.assume` then PodBound, or
    `cache.mark_unschedulable` then PodUnschedulable + FailedScheduling).
    """
    demand = pod_demand(pod)
    placement = placement_of(pod)
    if not is_default(placement):
        return _schedule_constrained(cache, placement, demand)
    best = _best_node(cache.schedulable_nodes(), demand)
    if best is not None:
        return Bound(best.name, score(best, demand))
    nodes = cache.nodes()
    reasons = {node.name: node_reasons(node, demand) for node in nodes}
    return _unschedulable(nodes, demand, reasons)


def _unschedulable(
    nodes: Sequence[NodeInfo], demand: PodDemand, reasons: Mapping[str, tuple[str, ...]]
) -> Unschedulable:
    message = failed_scheduling_message(len(nodes), reasons)
    return Unschedulable(message, reasons, scheduling_record(nodes, demand, reasons))


def scheduling_record(
    nodes: Sequence[NodeInfo], demand: PodDemand, reasons: Mapping[str, tuple[str, ...]]
) -> SchedulingRecord:
    """The inputs of a FailedScheduling: the reasons counted, and the nodes with the most
    free CPU (the closest to fitting), each with what it had free and why it did not fit."""
    closest = heapq.nlargest(
        SchedulingRecord.MAX_NODES, nodes, key=lambda n: (n.free_cpu, n.free_memory)
    )
    return SchedulingRecord(
        nodes=len(nodes),
        requested={"cpu": f"{demand.cpu}m", "memory": str(demand.memory)},
        reasons=dict(Counter(r for why in reasons.values() for r in why)),
        closest=[
            NodeFit(
                node=n.name,
                free={"cpu": f"{n.free_cpu}m", "memory": str(n.free_memory)},
                reasons=list(reasons.get(n.name, ())),
            )
            for n in closest
        ],
    )


# NodeAffinity's weight in kube-scheduler's default profile (NodeResourcesFit's is 1).
NODE_AFFINITY_WEIGHT: Final = 2


def _schedule_constrained(
    cache: SchedulerCache, placement: PodPlacement, demand: PodDemand
) -> Bound | Unschedulable:
    """A pod with placement fields (nodeSelector, node affinity, tolerations): the placement
    filters per node first, then resources; preferred node affinity adds to the score,
    normalized to 0-100 over the feasible nodes and weighted as kube-scheduler weighs it."""
    nodes = cache.nodes()
    reasons: dict[str, tuple[str, ...]] = {}
    feasible: list[NodeInfo] = []
    for node in nodes:
        why = filter_reason(placement, node.facts)
        found = (why,) if why is not None else _resource_reasons(node, demand)
        if found:
            reasons[node.name] = found
        else:
            feasible.append(node)
    if not feasible:
        return _unschedulable(nodes, demand, reasons)
    preferred = [preference_score(placement, node.facts) for node in feasible]
    top = max(preferred)
    best, best_score = feasible[0], -1
    for node, raw in zip(feasible, preferred, strict=True):
        affinity = raw * MAX_NODE_SCORE // top if top else 0
        total = score(node, demand) + NODE_AFFINITY_WEIGHT * affinity
        if total > best_score:  # nodes come by name: the smallest wins a tie
            best, best_score = node, total
    return Bound(best.name, best_score)


def _best_node(nodes: list[NodeInfo], demand: PodDemand) -> NodeInfo | None:
    """The hot loop of `schedule`: node_reasons() == () and score(), inlined.

    Every node is visited for every pod, so this avoids per-node calls; the rules are exactly
    those of the two reference functions above (a test holds them equal).
    """
    cpu, memory, others = demand.cpu, demand.memory, demand.others
    nz_cpu, nz_memory = demand.non_zero_cpu, demand.non_zero_memory
    best: NodeInfo | None = None
    best_score = -1
    # Nodes come sorted by name and only a strictly better score replaces the best, so the
    # smallest name wins a tie.
    for node in nodes:
        if node.free_pods < 1:
            continue
        if (cpu and cpu > node.free_cpu) or (memory and memory > node.free_memory):
            continue
        if others and any(value > node.free(name) for name, value in others):
            continue
        total = weights = 0
        alloc = node.allocatable_cpu
        if alloc:
            free = node.non_zero_free_cpu - nz_cpu
            total += free * MAX_NODE_SCORE // alloc if free >= 0 else 0
            weights += 1
        alloc = node.allocatable_memory
        if alloc:
            free = node.non_zero_free_memory - nz_memory
            total += free * MAX_NODE_SCORE // alloc if free >= 0 else 0
            weights += 1
        node_score = total // weights if weights else 0
        if node_score > best_score:
            best, best_score = node, node_score
            if node_score == MAX_NODE_SCORE:
                break  # nothing beats it, and later names lose ties
    return best


# --- retry ----------------------------------------------------------------------------------------


def pending_to_retry(cache: SchedulerCache, change: ClusterChange) -> list[str]:
    """Keys of the pending pods worth scheduling again after `change`, in retry order.

    A pending pod failed on every node, and only the changed node is different now, so it can
    only land there: it is returned when it fits that node's free room, after the pods retried
    before it (by priority, then arrival) have taken theirs. Candidates come from the pending
    pods' cpu index, so a change costs O(log pending + candidates), not a rescan of every pod
    against every node.
    """
    if isinstance(change, PendingPodShrunk):
        return [change.pod_key] if cache.pending(change.pod_key) is not None else []
    return _fill_node(cache, change)


def _fill_node(cache: SchedulerCache, change: CapacityFreed) -> list[str]:
    node = cache.node(change.node_name)
    if node is None or not node.present:
        return []
    free_cpu = max(node.allocatable_cpu - node.requested_cpu, 0)
    candidates = sorted(cache.pending_up_to_cpu(free_cpu), key=_retry_order)
    room = _Room(node)
    chosen: list[str] = []
    for pending in candidates:
        # A node blocked for pods without placement fields (tainted, cordoned) may still
        # take one that tolerates it; one whose selector it fails takes no room.
        if filter_reason(pending.placement, node.facts) is not None:
            continue
        if room.take(pending.demand):
            chosen.append(pod_key(pending.pod))
    return chosen


def _retry_order(pending: PendingPod) -> tuple[int, int]:
    return (-pending.priority, pending.seq)


class _Room:
    """A scratch copy of one node's free resources, used up as retried pods are fitted in."""

    __slots__ = ("_cpu", "_memory", "_node", "_others", "_pods")

    def __init__(self, node: NodeInfo) -> None:
        self._node = node
        self._pods = node.allowed_pods - node.pod_count
        self._cpu = node.allocatable_cpu - node.requested_cpu
        self._memory = node.allocatable_memory - node.requested_memory
        self._others: dict[str, int] = {}

    def _free(self, name: str) -> int:
        if name not in self._others:
            self._others[name] = self._node.free(name)
        return self._others[name]

    def take(self, demand: PodDemand) -> bool:
        if self._pods < 1:
            return False
        if (demand.cpu and demand.cpu > self._cpu) or (
            demand.memory and demand.memory > self._memory
        ):
            return False
        if any(value > self._free(name) for name, value in demand.others):
            return False
        self._pods -= 1
        self._cpu -= demand.cpu
        self._memory -= demand.memory
        for name, value in demand.others:
            self._others[name] -= value
        return True
