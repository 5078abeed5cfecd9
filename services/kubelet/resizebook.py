"""Pure bookkeeping behind the kubelet's resize metrics (the names Kubernetes 1.34+ uses).

Every proposed resize is closed exactly once, as completed, infeasible or canceled (the pod
deleted or terminated, a newer resize superseding it, the user going back), so
`kubelet_container_resize_requests_total` balances: proposed = completed + infeasible +
canceled + still open. One book per kubelet process: pod keys are unique across its nodes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from schemas.events import DecisionRecord
from schemas.k8s import ResourceRequirements
from schemas.quantity import ZERO

Change = tuple[str, str, str]  # (resource, requirement, operation)


def requested_changes(
    before: Mapping[str, ResourceRequirements], after: Mapping[str, ResourceRequirements]
) -> list[Change]:
    """Per container and resource: what a resize asks (increase / decrease / add / remove of
    requests or limits), for kubelet_container_requested_resizes_total."""
    changes: list[Change] = []
    for name, new in after.items():
        old = before.get(name, ResourceRequirements())
        for requirement, was, now in (
            ("requests", old.requests or {}, new.requests or {}),
            ("limits", old.limits or {}, new.limits or {}),
        ):
            for resource in sorted({*was, *now} & {"cpu", "memory"}):
                a, b = was.get(resource), now.get(resource)
                if a == b:
                    continue
                if a is None or a == ZERO:
                    operation = "add"
                elif b is None or b == ZERO:
                    operation = "remove"
                else:
                    operation = "increase" if a < b else "decrease"
                changes.append((resource, requirement, operation))
    return changes


def infeasible_detail(record: DecisionRecord | None) -> str:
    """kubelet_pod_infeasible_resizes_total's reason_detail."""
    if record is None:
        return "other"
    if record.policy and record.policy.startswith("cpuManagerPolicy"):
        return "guaranteed_pod_cpu_manager_static_policy"
    if record.policy and record.policy.startswith("memoryManagerPolicy"):
        return "guaranteed_pod_memory_manager_static_policy"
    return "insufficient_node_allocatable" if record.short else "other"


@dataclass
class ResizeBook:
    open: set[str] = field(default_factory=set)  # proposed, not closed yet
    pending: dict[str, str] = field(default_factory=dict)  # key → deferred | infeasible
    in_progress: set[str] = field(default_factory=set)

    def propose(self, key: str) -> list[str]:
        """A new resize of `key`: the states to count (a still-open one is superseded)."""
        counted = ["canceled"] if key in self.open else []
        self.open.add(key)
        self.in_progress.discard(key)
        self.pending.pop(key, None)  # a new resize waits (or not) on its own account
        return [*counted, "proposed"]

    def wait(self, key: str, reason: str) -> None:
        self.pending[key] = reason

    def accept(self, key: str) -> bool:
        """Allocated: now in progress. True when it had been Deferred."""
        was_deferred = self.pending.pop(key, None) == "deferred"
        self.in_progress.add(key)
        return was_deferred

    def close(self, key: str, outcome: str) -> list[str]:
        """The resize ended (completed / infeasible / canceled): the state to count, once."""
        self.in_progress.discard(key)
        if outcome != "infeasible":
            self.pending.pop(key, None)
        if key not in self.open:
            return []
        self.open.discard(key)
        return [outcome]

    def pending_count(self, reason: str) -> int:
        return sum(1 for r in self.pending.values() if r == reason)
