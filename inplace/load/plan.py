"""The workload of one load run, pure and repeatable: the same seed gives the same plan.

Nodes are sized so that every planned increase fits (no resize is Deferred by accident); the
few meant to be Deferred ask for almost the whole node (they fit the node alone but never next
to its other pods), the Infeasible ones for more than the node has. A Deferred or Infeasible
resize is the last one its pod gets, so every other resize's outcome is known in advance.
Resizes go round the pods in a shuffled order, so a pod's k-th resize comes after every pod's
(k-1)-th: the driver runs one resize per pod at a time, and this keeps the most pods busy.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import dataclass
from typing import Any, Literal

CONTAINER = "app"
IMAGE = "registry.k8s.io/pause:3.10"
SIMULATED = "inplace.io/simulated"  # the kubelet adopts nodes with this annotation (kwok-style)

MIN_CPU_M, MAX_CPU_M, CPU_STEP_M = 50, 1000, 10
MIN_MEMORY_MI, MAX_MEMORY_MI, MEMORY_STEP_MI = 64, 1024, 16

Kind = Literal["increase", "decrease", "deferred", "infeasible"]
Dimension = Literal["cpu", "memory", "both"]
Outcome = Literal["completed", "deferred", "infeasible"]


@dataclass(frozen=True)
class Resources:
    """One container's requests (= limits: every pod is Guaranteed, resizes keep it so)."""

    cpu_m: int
    memory_mi: int

    def to_k8s(self) -> dict[str, str]:
        return {"cpu": f"{self.cpu_m}m", "memory": f"{self.memory_mi}Mi"}

    def requirements(self) -> dict[str, dict[str, str]]:
        return {"requests": self.to_k8s(), "limits": self.to_k8s()}


@dataclass(frozen=True)
class NodePlan:
    name: str
    capacity: Resources
    pods: int

    def to_k8s(self, run: str) -> dict[str, Any]:
        capacity = {
            "cpu": f"{self.capacity.cpu_m}m",
            "memory": f"{self.capacity.memory_mi}Mi",
            "pods": str(self.pods),
        }
        return {
            "metadata": {
                "name": self.name,
                "labels": {"kubernetes.io/hostname": self.name, "inplace.io/load": run},
                "annotations": {SIMULATED: "true"},
            },
            "status": {
                "capacity": capacity,
                "allocatable": dict(capacity),
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
            },
        }


@dataclass(frozen=True)
class PodPlan:
    name: str
    node: str
    resources: Resources

    def to_k8s(self) -> dict[str, Any]:
        return {
            "metadata": {"name": self.name, "labels": {"app": "inplace-load"}},
            "spec": {
                "nodeName": self.node,
                "containers": [
                    {
                        "name": CONTAINER,
                        "image": IMAGE,
                        "resources": self.resources.requirements(),
                    }
                ],
            },
        }


@dataclass(frozen=True)
class ResizePlan:
    index: int
    pod: str
    kind: Kind
    dimension: Dimension
    before: Resources
    after: Resources

    @property
    def expect(self) -> Outcome:
        if self.kind == "deferred":
            return "deferred"
        if self.kind == "infeasible":
            return "infeasible"
        return "completed"

    def patch(self) -> dict[str, Any]:
        """The strategic merge patch for `pods/{name}/resize`."""
        container = {"name": CONTAINER, "resources": self.after.requirements()}
        return {"spec": {"containers": [container]}}


@dataclass(frozen=True)
class Mix:
    """Shares of the resize mix. `deferred` and `infeasible` are shares of all resizes; the rest
    split into increases (`increase`) and decreases, on cpu (`cpu`), memory (`memory`) or both."""

    increase: float = 0.5
    cpu: float = 0.4
    memory: float = 0.3
    deferred: float = 0.02
    infeasible: float = 0.02

    def __post_init__(self) -> None:
        for name in ("increase", "cpu", "memory", "deferred", "infeasible"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"mix share {name} must be within [0, 1]")
        if self.cpu + self.memory > 1.0:
            raise ValueError("mix shares cpu + memory must not exceed 1")
        if self.deferred + self.infeasible > 1.0:
            raise ValueError("mix shares deferred + infeasible must not exceed 1")


@dataclass(frozen=True)
class LoadPlan:
    seed: int
    namespace: str
    nodes: tuple[NodePlan, ...]
    pods: tuple[PodPlan, ...]
    resizes: tuple[ResizePlan, ...]

    def chains(self) -> dict[str, list[ResizePlan]]:
        """Each pod's resizes in the order they must run (one at a time per pod)."""
        chains: dict[str, list[ResizePlan]] = {}
        for resize in self.resizes:
            chains.setdefault(resize.pod, []).append(resize)
        return chains

    def expected(self) -> Counter[str]:
        return Counter(r.expect for r in self.resizes)


def node_capacity(pods_per_node: int) -> tuple[Resources, int]:
    """Room for every pod at its largest planned size, plus one core and 1Gi."""
    cpu_m = math.ceil((pods_per_node * MAX_CPU_M + 1000) / 1000) * 1000
    memory_mi = pods_per_node * MAX_MEMORY_MI + 1024
    return Resources(cpu_m, memory_mi), max(110, pods_per_node + 10)


def _step(rng: random.Random, value: int, unit: int) -> int:
    """A change of 10-100% of the value, in whole units, at least one unit."""
    return max(unit, round(value * rng.uniform(0.1, 1.0) / unit) * unit)


def _moved(rng: random.Random, value: int, up: bool, lo: int, hi: int, unit: int) -> int:
    step = _step(rng, value, unit)
    return min(hi, value + step) if up else max(lo, value - step)


def _normal(rng: random.Random, before: Resources, mix: Mix) -> tuple[Kind, Dimension, Resources]:
    roll = rng.random()
    dimension: Dimension = (
        "cpu" if roll < mix.cpu else "memory" if roll < mix.cpu + mix.memory else "both"
    )
    up = rng.random() < mix.increase
    for attempt in (up, not up):  # at a bound, go the other way
        cpu, memory = before.cpu_m, before.memory_mi
        if dimension in ("cpu", "both"):
            cpu = _moved(rng, cpu, attempt, MIN_CPU_M, MAX_CPU_M, CPU_STEP_M)
        if dimension in ("memory", "both"):
            memory = _moved(rng, memory, attempt, MIN_MEMORY_MI, MAX_MEMORY_MI, MEMORY_STEP_MI)
        after = Resources(cpu, memory)
        if after != before:
            return ("increase" if attempt else "decrease"), dimension, after
    raise AssertionError(f"no resize possible from {before}")  # bounds make this unreachable


def make_plan(
    *,
    nodes: int,
    pods: int,
    resizes: int,
    seed: int = 0,
    mix: Mix | None = None,
    namespace: str = "load",
) -> LoadPlan:
    """The workload: `nodes` nodes, `pods` pods spread evenly over them, `resizes` resizes."""
    if nodes < 1 or pods < 1 or resizes < 0:
        raise ValueError("a plan needs at least one node and one pod, and resizes >= 0")
    mix = mix or Mix()
    rng = random.Random(seed)
    per_node = math.ceil(pods / nodes)
    capacity, max_pods = node_capacity(per_node)
    node_plans = tuple(NodePlan(f"{namespace}-n{i}", capacity, max_pods) for i in range(nodes))
    pod_plans = tuple(
        PodPlan(
            f"p-{i}",
            node_plans[i % nodes].name,
            Resources(rng.randrange(100, 501, CPU_STEP_M), rng.randrange(128, 513, MEMORY_STEP_MI)),
        )
        for i in range(pods)
    )
    population = Counter(p.node for p in pod_plans)
    current = {p.name: p.resources for p in pod_plans}
    node_of = {p.name: p.node for p in pod_plans}
    active = [p.name for p in pod_plans]
    rng.shuffle(active)
    retired: set[str] = set()
    cursor = 0
    plans: list[ResizePlan] = []
    for index in range(resizes):
        while active[cursor % len(active)] in retired:
            cursor += 1
        pod = active[cursor % len(active)]
        cursor += 1
        before = current[pod]
        roll = rng.random()
        can_retire = len(retired) < len(active) - 1
        kind: Kind
        dimension: Dimension
        if roll < mix.deferred and can_retire and population[node_of[pod]] >= 2:
            # Fits the node alone, never beside the node's other pods (each holds >= 50m).
            kind, dimension = "deferred", "cpu"
            after = Resources(capacity.cpu_m - 1, before.memory_mi)
        elif roll < mix.deferred + mix.infeasible and can_retire:
            kind, dimension = "infeasible", "cpu"
            after = Resources(capacity.cpu_m + 1000, before.memory_mi)
        else:
            kind, dimension, after = _normal(rng, before, mix)
        if kind in ("deferred", "infeasible"):
            retired.add(pod)
        else:
            current[pod] = after
        plans.append(ResizePlan(index, pod, kind, dimension, before, after))
    return LoadPlan(seed, namespace, node_plans, pod_plans, tuple(plans))
