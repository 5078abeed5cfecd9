"""Taints and tolerations, the one rule the scheduler (which nodes a pod may go to) and the
node lifecycle (which pods a NoExecute taint evicts, and when) share: core/v1's
`Toleration.ToleratesTaint`."""

from __future__ import annotations

from collections.abc import Sequence

from schemas.k8s import Taint, Toleration


def tolerates_one(toleration: Toleration, taint: Taint) -> bool:
    """`Toleration.ToleratesTaint`: an empty effect matches every effect, an empty key with
    Exists every key; Equal ("" too) compares values."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator == "Exists":
        return True
    return toleration.operator in (None, "", "Equal") and (toleration.value or "") == (
        taint.value or ""
    )


def tolerates(tolerations: Sequence[Toleration], taint: Taint) -> bool:
    """Whether any of the pod's tolerations tolerates `taint`."""
    return any(tolerates_one(t, taint) for t in tolerations)


def toleration_seconds(tolerations: Sequence[Toleration], taints: Sequence[Taint]) -> float | None:
    """How long a pod may stay on a node with these NoExecute `taints`, by the taint eviction
    controller's rule: each taint is tolerated by the pod's first toleration that matches it;
    0 when one is not tolerated; else the least tolerationSeconds of those tolerations (0 or
    less: 0); None, forever, when none of them sets any."""
    least: float | None = None
    for taint in taints:
        used = next((t for t in tolerations if tolerates_one(t, taint)), None)
        if used is None:
            return 0.0
        if used.toleration_seconds is not None:
            seconds = max(0.0, float(used.toleration_seconds))
            least = seconds if least is None else min(least, seconds)
    return least
