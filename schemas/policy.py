"""policy/v1 PodDisruptionBudget, and the label selectors it (and kube's controllers) use.

A budget says how many of the pods its selector picks must stay healthy (`minAvailable`) or may
be down (`maxUnavailable`), each an absolute number or a percentage; the eviction API refuses
an eviction that would break it (429), `kubectl drain` and autoscalers' updaters retry.
Its status is written by the disruption controller (services/apiserver/disruption.py).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from schemas.base import K8sModel, Time
from schemas.k8s import ConditionStatus, ObjectMeta

__all__ = [
    "GROUP",
    "VERSION",
    "Condition",
    "LabelSelector",
    "LabelSelectorRequirement",
    "PodDisruptionBudget",
    "PodDisruptionBudgetSpec",
    "PodDisruptionBudgetStatus",
    "selects",
]

GROUP = "policy"
VERSION = "v1"


class LabelSelectorRequirement(K8sModel):
    """metav1.LabelSelectorRequirement."""

    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist (validated, so a bad one is a 422)
    values: list[str] | None = None


class LabelSelector(K8sModel):
    """metav1.LabelSelector: every matchLabels pair and every expression must hold."""

    match_labels: dict[str, str] | None = None
    match_expressions: list[LabelSelectorRequirement] | None = None


def selects(selector: LabelSelector | None, labels: dict[str, str] | None) -> bool:
    """Whether `selector` picks an object with `labels` (metav1.LabelSelectorAsSelector).
    A null selector picks nothing, an empty one everything (policy/v1's meaning)."""
    if selector is None:
        return False
    labels = labels or {}
    for key, value in (selector.match_labels or {}).items():
        if labels.get(key) != value:
            return False
    for req in selector.match_expressions or []:
        present = req.key in labels
        if req.operator == "In" and (not present or labels[req.key] not in (req.values or [])):
            return False
        if req.operator == "NotIn" and present and labels[req.key] in (req.values or []):
            return False
        if req.operator == "Exists" and not present:
            return False
        if req.operator == "DoesNotExist" and present:
            return False
    return True


class Condition(K8sModel):
    """metav1.Condition (the shape newer APIs use: reason and lastTransitionTime required)."""

    type: str
    status: ConditionStatus
    observed_generation: int | None = None
    last_transition_time: Time
    reason: str
    message: str = ""


class PodDisruptionBudgetSpec(K8sModel):
    """policy/v1 PodDisruptionBudgetSpec. An int or a percentage string ("50%")."""

    min_available: int | str | None = None
    selector: LabelSelector | None = None
    max_unavailable: int | str | None = None
    # IfHealthyBudget (default behaviour when unset) or AlwaysAllow; validated.
    unhealthy_pod_eviction_policy: str | None = None


class PodDisruptionBudgetStatus(K8sModel):
    """policy/v1 PodDisruptionBudgetStatus. The four counts have no `omitempty` in Go, so they
    are always serialized, 0 included."""

    observed_generation: int | None = None
    # Pods the eviction API let go that the controller has not seen leave yet: name -> when.
    disrupted_pods: dict[str, Time] | None = None
    disruptions_allowed: int = 0
    current_healthy: int = 0
    desired_healthy: int = 0
    expected_pods: int = 0
    conditions: list[Condition] | None = None


class PodDisruptionBudget(K8sModel):
    api_version: Literal["policy/v1"] = "policy/v1"
    kind: Literal["PodDisruptionBudget"] = "PodDisruptionBudget"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PodDisruptionBudgetSpec = Field(default_factory=PodDisruptionBudgetSpec)
    status: PodDisruptionBudgetStatus = Field(default_factory=PodDisruptionBudgetStatus)
