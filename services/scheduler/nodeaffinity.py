"""Where a pod may go, by its placement fields, as kube-scheduler's filters decide it.

Pure functions over a pod's `PodPlacement` and a node's labels, taints and cordon flag, in the
order of kube-scheduler's default filter plugins (a node fails on the first that fails):

- NodeUnschedulable: a cordoned node, unless the pod tolerates
  `node.kubernetes.io/unschedulable:NoSchedule` — "node(s) were unschedulable";
- NodeAffinity: `nodeSelector` (every label equal) AND the required node affinity (terms
  ORed; within a term every expression and field requirement ANDed; In, NotIn, Exists,
  DoesNotExist, Gt, Lt on labels, In/NotIn on `metadata.name`) — "node(s) didn't match Pod's
  node affinity/selector";
- TaintToleration: every NoSchedule / NoExecute taint tolerated (`ToleratesTaint`) —
  "node(s) had untolerated taint {key: value}".

Preferred node affinity scores (NodeAffinity's score plugin: sum of the weights of the
matching terms, normalized to 0-100 over the candidates). Resources are `placement.py`'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from schemas.k8s import NodeSelectorRequirement, NodeSelectorTerm, Pod, Taint, Toleration
from schemas.taints import tolerates

__all__ = [
    "AFFINITY_MISMATCH",
    "DEFAULT_PLACEMENT",
    "UNSCHEDULABLE",
    "NodeFacts",
    "PodPlacement",
    "filter_reason",
    "is_default",
    "matches_term",
    "placement_of",
    "preference_score",
    "taint_reason",
    "tolerates",
]

UNSCHEDULABLE: Final = "node(s) were unschedulable"
AFFINITY_MISMATCH: Final = "node(s) didn't match Pod's node affinity/selector"
_UNSCHEDULABLE_TAINT = Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")
# DefaultTolerationSeconds gives every pod these (NoExecute, 300 s), so merely not-ready or
# unreachable nodes do not repel new pods; pods created before that defaulting lack them.
_DEFAULT_TOLERATIONS: Final = (
    Toleration(key="node.kubernetes.io/not-ready", operator="Exists", effect="NoExecute"),
    Toleration(key="node.kubernetes.io/unreachable", operator="Exists", effect="NoExecute"),
)


@dataclass(frozen=True, slots=True)
class NodeFacts:
    """What the placement filters read of a node."""

    name: str
    labels: Mapping[str, str]
    taints: Sequence[Taint]
    unschedulable: bool


@dataclass(frozen=True, slots=True)
class PodPlacement:
    """A pod's placement fields, read once per decision."""

    node_selector: Mapping[str, str]
    required: Sequence[NodeSelectorTerm] | None  # None: no required node affinity
    preferred: Sequence[tuple[int, NodeSelectorTerm]]
    tolerations: Sequence[Toleration]


DEFAULT_PLACEMENT: Final = PodPlacement({}, None, (), _DEFAULT_TOLERATIONS)
"""A pod with no placement fields: what every node must pass to take any pod at all."""


def is_default(placement: PodPlacement) -> bool:
    """True when the pod asks nothing of a node beyond DEFAULT_PLACEMENT (the scheduler's
    fast path): no selector, no node affinity, only the not-ready/unreachable NoExecute
    tolerations DefaultTolerationSeconds adds (with any tolerationSeconds)."""
    if placement.node_selector or placement.required is not None or placement.preferred:
        return False
    return all(
        t.operator == "Exists"
        and t.effect == "NoExecute"
        and any(t.key == d.key for d in _DEFAULT_TOLERATIONS)
        for t in placement.tolerations
    )


def placement_of(pod: Pod) -> PodPlacement:
    spec = pod.spec
    node_affinity = spec.affinity.node_affinity if spec.affinity else None
    required = None
    preferred: list[tuple[int, NodeSelectorTerm]] = []
    if node_affinity is not None:
        selector = node_affinity.required_during_scheduling_ignored_during_execution
        if selector is not None:
            required = list(selector.node_selector_terms)
        for term in node_affinity.preferred_during_scheduling_ignored_during_execution or []:
            preferred.append((term.weight, term.preference))
    return PodPlacement(
        node_selector=dict(spec.node_selector or {}),
        required=required,
        preferred=preferred,
        tolerations=[*(spec.tolerations or []), *_DEFAULT_TOLERATIONS],
    )


def filter_reason(placement: PodPlacement, node: NodeFacts) -> str | None:
    """Why `node` is filtered out before resources are even looked at; None when it passes."""
    if node.unschedulable and not tolerates(placement.tolerations, _UNSCHEDULABLE_TAINT):
        return UNSCHEDULABLE
    if any(node.labels.get(k) != v for k, v in placement.node_selector.items()):
        return AFFINITY_MISMATCH
    if placement.required is not None and not any(
        matches_term(term, node) for term in placement.required
    ):
        return AFFINITY_MISMATCH
    for taint in node.taints:
        if taint.effect == "PreferNoSchedule":
            continue
        if not tolerates(placement.tolerations, taint):
            return taint_reason(taint)
    return None


def taint_reason(taint: Taint) -> str:
    return f"node(s) had untolerated taint {{{taint.key}: {taint.value or ''}}}"


def matches_term(term: NodeSelectorTerm, node: NodeFacts) -> bool:
    """A term matches when it has requirements and all of them hold (an empty term matches
    no node, as in Kubernetes)."""
    expressions = term.match_expressions or []
    fields = term.match_fields or []
    if not expressions and not fields:
        return False
    return all(_holds(r, node.labels) for r in expressions) and all(
        _holds(r, {"metadata.name": node.name}) for r in fields
    )


def _holds(req: NodeSelectorRequirement, labels: Mapping[str, str]) -> bool:
    values = req.values or []
    present = req.key in labels
    value = labels.get(req.key)
    if req.operator == "In":
        return present and value in values
    if req.operator == "NotIn":
        return not present or value not in values
    if req.operator == "Exists":
        return present
    if req.operator == "DoesNotExist":
        return not present
    # Gt / Lt: both sides must be integers, else the requirement does not hold.
    if not present or len(values) != 1:
        return False
    try:
        mine, theirs = int(value or ""), int(values[0])
    except ValueError:
        return False
    return mine > theirs if req.operator == "Gt" else mine < theirs


def preference_score(placement: PodPlacement, node: NodeFacts) -> int:
    """NodeAffinity's raw score: the sum of the weights of the preferred terms that match."""
    return sum(weight for weight, term in placement.preferred if matches_term(term, node))
