"""Pacing of a rollout: how many pods at once, which pods, in which order."""

from __future__ import annotations

import math
from collections.abc import Iterable

from schemas.k8s import Pod
from schemas.podview import pod_ready
from schemas.workload import CloneSetUpdateStrategy


def max_concurrent(strategy: CloneSetUpdateStrategy, replicas: int) -> int:
    """maxConcurrentResizes as a pod count: an int, or a percentage of replicas rounded up;
    at least 1, so a rollout always moves."""
    value = strategy.max_concurrent_resizes
    if isinstance(value, str):
        value = math.ceil(replicas * int(value.rstrip("%")) / 100)
    return max(1, value)


def update_order(pods: Iterable[Pod]) -> list[Pod]:
    """Not-ready pods first (they serve nothing yet), then by name: deterministic, so a
    restarted controller picks the same pods."""
    return sorted(pods, key=lambda p: (pod_ready(p), p.metadata.name or ""))


def wanted_at_target(replicas: int, partition: int) -> int:
    """Pods the rollout moves to the new revision; `partition` of them stay behind."""
    return max(0, replicas - partition)
