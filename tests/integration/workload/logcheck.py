"""Questions the `pods` topic answers about a rollout, independent of the controller."""

from __future__ import annotations

from collections import Counter

from schemas import events as ev
from schemas.envelope import Envelope


def max_concurrent_resizes(log: list[Envelope]) -> int:
    """The most pods with a ResizeProposed not yet followed by its final state (status.resize
    cleared), over the log ordered by event time (partitions interleave only by time)."""
    points: list[tuple[float, int]] = []
    open_since: dict[str, float] = {}
    for env in sorted(log, key=lambda e: e.time):
        p = env.payload
        if isinstance(p, ev.ResizeProposed) and p.uid not in open_since:
            open_since[p.uid] = env.time.timestamp()
            points.append((env.time.timestamp(), 1))
        elif (
            isinstance(p, ev.PodEvent)
            and (change := ev.resize_change(p)) is not None
            and change.resize is None
            and p.uid in open_since
        ):
            del open_since[p.uid]
            points.append((env.time.timestamp(), -1))
    current = peak = 0
    for _, delta in sorted(points, key=lambda x: (x[0], x[1])):  # closes before opens on ties
        current += delta
        peak = max(peak, current)
    return peak


def proposals_per_pod_and_target(log: list[Envelope]) -> Counter[tuple[str, str]]:
    """ResizeProposed count per (pod uid, desired cpu request): one target = one revision."""
    counts: Counter[tuple[str, str]] = Counter()
    for env in log:
        p = env.payload
        if isinstance(p, ev.ResizeProposed):
            cpu = ",".join(str((c.resources.requests or {}).get("cpu")) for c in p.containers)
            counts[(p.uid, cpu)] += 1
    return counts
