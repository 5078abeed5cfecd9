"""The event types the quota role folds; the other records of `pods` and `policy` are skipped
before decoding (issue 16, `headers.of_types`).

Every field quota reads (a pod's KEP-1287 requests and limits, phase, status.resize and
PodResizePending, deletion; quotas with their status.used; limit ranges) comes out the same as
when it folds everything: tests/unit/quota/test_reads.py folds a stream of every type both
ways and compares usage and admission decisions. Quota never writes a resourceVersion back.
"""

from __future__ import annotations

from schemas import events as ev

READS: frozenset[str] = frozenset(
    {
        ev.PodCreated.TYPE,  # the pod: requests, limits, QoS, priority class (scopes)
        ev.ResizeProposed.TYPE,  # desired requests and limits (spec), status.resize Proposed
        ev.ResizeStatusChanged.TYPE,  # Infeasible (or no longer): only what is granted counts
        ev.Allocated.TYPE,  # allocatedResources: part of max(spec, status)
        ev.Actuated.TYPE,  # status resources (requests and limits): part of max(spec, status)
        ev.PodPhaseChanged.TYPE,  # a terminal phase stops compute charges
        ev.PodEvicted.TYPE,  # Failed: stops compute charges
        ev.PodDeleted.TYPE,  # gone: charges nothing; releases its reservation
        ev.ResourceQuotaCreated.TYPE,  # the quota: hard limits, scopes
        ev.ResourceQuotaUpdated.TYPE,  # new hard limits or scopes
        ev.ResourceQuotaDeleted.TYPE,  # no longer enforced or kept
        ev.ResourceQuotaUsageChanged.TYPE,  # status.used as published: compared before publishing
        ev.LimitRangeCreated.TYPE,  # defaults and bounds for admission
        ev.LimitRangeUpdated.TYPE,  # new defaults and bounds
        ev.LimitRangeDeleted.TYPE,  # no longer enforced
    }
)

# What the rest change, none of which quota reads.
SKIPS: dict[str, str] = {
    ev.PodUpdated.TYPE: "labels, annotations, images (no quota scope selects by them)",
    ev.PodBound.TYPE: "spec.nodeName and PodScheduled",
    ev.PodUnschedulable.TYPE: "the PodScheduled condition",
    ev.PodReadinessChanged.TYPE: "the Ready condition (no quota scope reads it)",
    ev.ContainerRestarted.TYPE: "restart count and container state",
    ev.ResizeRefused.TYPE: "nothing (a refused resize changes no object); it only recomputed",
    ev.NamespaceCreated.TYPE: "namespace objects, which quota does not keep",
    ev.NamespaceTerminating.TYPE: "namespace objects, which quota does not keep",
    ev.NamespaceDeleted.TYPE: "namespace objects, which quota does not keep",
    ev.NamespaceUpdated.TYPE: "namespace objects, which quota does not keep",
    ev.PodDisruptionBudgetCreated.TYPE: "disruption budgets (evictions, not admission)",
    ev.PodDisruptionBudgetUpdated.TYPE: "disruption budgets (evictions, not admission)",
    ev.PodDisruptionBudgetDeleted.TYPE: "disruption budgets (evictions, not admission)",
    ev.PodDisruptionBudgetStatusChanged.TYPE: "disruption budgets (evictions, not admission)",
}
