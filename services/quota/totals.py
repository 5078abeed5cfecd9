"""Per-namespace running usage totals, so a quota decision does not re-sum every pod.

Each pod's charge (`usage.pod_usage`, KEP-1287 max(spec, status)) is kept with the only facts
any quota scope looks at (`usage.ScopeFacts`: BestEffort, names a PriorityClass), and the
namespace's totals are kept per such group. When the read model applies a pod event the pod's
old charge is taken out of its group and the new one put in (`moved`), so a quota's usage is
the sum of at most four groups' totals: O(resources), not O(pods in the namespace).

Only namespaces that have a ResourceQuota are kept (`tracked`): a namespace is summed from its
pods once, when its first quota appears (or a decision first asks about it), and followed from
then on; the pod events of other namespaces cost nothing (under a resize load without quotas
the charges were a fifth of the role's CPU, and at a restart with 50,000 pods 2 s of seeding).
In the role the read model holds only those namespaces' pods (`namespaces.NamespacePods`): a
namespace is summed once they are all held, and its decisions wait for that (`until_held`).

Usage is time-independent here (`now` is never given, as the webhook and the status loop never
gave it), so a charge changes only when a pod event changes the pod.

The values are exact (quantities are integers of nano-units). The printed form of a total is
the format of its left operand, as in any Kubernetes quantity sum; it can differ from a fresh
sum only when a namespace's pods spell one resource in different formats ("1Gi" and "1G"),
where the fresh sum's form already depended on the order of a set of names.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from inplace.core.bus.consumer import Record
from inplace.core.readmodel import ReadModel
from schemas import events as ev
from schemas.k8s import ResourceList, ResourceQuota
from schemas.podview import PodLike
from schemas.quantity import ZERO
from services.quota.namespaces import NamespacePods, quota_namespaces
from services.quota.usage import (
    ScopeFacts,
    matching_resources,
    pod_usage,
    quota_hard,
    scope_facts,
    scopes_select,
)

__all__ = ["Charge", "UsageTotals", "charge", "moved"]


@dataclass(frozen=True, slots=True)
class Charge:
    """What one pod adds to its namespace's usage, and the group its scope facts put it in."""

    group: ScopeFacts
    usage: ResourceList


def charge(pod: PodLike) -> Charge:
    return Charge(scope_facts(pod), pod_usage(pod))


def moved(
    totals: Mapping[ScopeFacts, ResourceList], old: Charge | None, new: Charge | None
) -> dict[ScopeFacts, ResourceList]:
    """The incremental rule: `totals` with the `old` charge of a pod taken out and its `new`
    one put in (None: the pod was not there / is gone). Pure; a resource whose total comes
    back to zero is dropped (a fresh sum never has it unless a pod spells a zero), and so is a
    group left empty, so the totals never keep a trace of a pod that is gone."""
    result = dict(totals)
    if old is not None:
        group = dict(result.get(old.group, {}))
        for name, quantity in old.usage.items():
            left = group[name] - quantity
            if left.is_zero():
                del group[name]
            else:
                group[name] = left
        if group:
            result[old.group] = group
        else:
            result.pop(old.group, None)
    if new is not None:
        group = dict(result.get(new.group, {}))
        for name, quantity in new.usage.items():
            # As `schemas.resources.add`: a resource new to the total is taken as is.
            group[name] = group[name] + quantity if name in group else quantity
        result[new.group] = group
    return result


class UsageTotals:
    """Every namespace's pods' charges and their totals, kept from the quota read model."""

    def __init__(self, model: ReadModel, pods: NamespacePods | None = None) -> None:
        """`pods`: which namespaces' pods the model holds (None: every pod)."""
        self.model = model
        self.pods = pods
        self.charges: defaultdict[str, dict[str, Charge]] = defaultdict(dict)
        self.totals: defaultdict[str, dict[ScopeFacts, ResourceList]] = defaultdict(dict)
        self.tracked: set[str] = set()  # the namespaces whose totals are kept
        model.on_apply(self._observe)
        model.on_snapshot(self._seed)
        if pods is not None:
            pods.on_held(self.track)

    def holds(self, namespace: str) -> bool:
        """Does the model hold every pod of `namespace`, so its totals can be summed?"""
        return self.pods is None or namespace in self.pods.held

    async def until_held(self, namespace: str) -> None:
        """Return once `namespace`'s totals can be kept (a quota just created there waits for
        its pods to be taken over)."""
        if self.pods is not None:
            await self.pods.until_held(namespace)

    def _seed(self) -> None:
        """Started from a snapshot: the namespaces that have a quota, from their pods."""
        for namespace in sorted(quota_namespaces(self.model.state)):
            self.track(namespace)

    def track(self, namespace: str) -> None:
        """Keep `namespace`'s totals from now on: summed once from its pods as the read model
        has them, then moved by each of its pod events; not before the model holds them all."""
        if namespace in self.tracked or not self.holds(namespace):
            return
        self.tracked.add(namespace)
        pods = self.model.pods
        for (ns, name), pod in pods.views(pods.keys_in(namespace)):
            self._set(ns, name, pod)

    def _observe(self, record: Record) -> None:
        payload = record.envelope.payload
        if isinstance(payload, ev.PodEvent):
            if payload.namespace in self.tracked:
                pod = self.model.get("pods", (payload.namespace, payload.name))
                self._set(payload.namespace, payload.name, pod)
        elif isinstance(payload, ev.ResourceQuotaCreated | ev.ResourceQuotaUpdated):
            self.track(payload.namespace)
        elif isinstance(payload, ev.ResourceQuotaDeleted):
            if payload.namespace not in quota_namespaces(self.model.state):
                self.tracked.discard(payload.namespace)  # its last quota: stop following it
                self.charges.pop(payload.namespace, None)
                self.totals.pop(payload.namespace, None)

    def _set(self, namespace: str, name: str, pod: PodLike | None) -> None:
        old = self.charge_of(namespace, name)
        new = None if pod is None else charge(pod)
        if old is None and new is None:
            return  # an event of a pod never seen: no entry made for its namespace
        if new is None:
            del self.charges[namespace][name]
        else:
            self.charges[namespace][name] = new
        totals = moved(self.totals[namespace], old, new)
        if totals:
            self.totals[namespace] = totals
        else:  # nothing left: no empty entry per namespace that once had a pod
            self.totals.pop(namespace, None)
            self.charges.pop(namespace, None)

    def charge_of(self, namespace: str, name: str) -> Charge | None:
        """The charge of a pod as the log has it (None: no such pod)."""
        self.track(namespace)
        charges = self.charges.get(namespace)
        return None if charges is None else charges.get(name)

    def used(
        self,
        namespace: str,
        quota: ResourceQuota,
        *,
        without: Iterable[Charge] = (),
        plus: Iterable[Charge] = (),
    ) -> ResourceList:
        """`usage.quota_used` of `quota` over `namespace`'s pods as the log has them, less the
        `without` charges and with the `plus` ones (each counted only where the quota's scopes
        select it): the pods replaced by a request in flight, and those requests."""
        self.track(namespace)
        scopes = quota.spec.scopes
        names = matching_resources(quota_hard(quota))
        sums: ResourceList = {}
        for group, total in self.totals.get(namespace, {}).items():
            if scopes_select(scopes, group):
                for name in names:
                    if name in total:  # as `add`: a first term is taken as is
                        sums[name] = sums[name] + total[name] if name in sums else total[name]
        for item in without:
            if scopes_select(scopes, item.group):
                for name in names:
                    if name in item.usage:
                        sums[name] = sums.get(name, ZERO) - item.usage[name]
        for item in plus:
            if scopes_select(scopes, item.group):
                for name in names:
                    if name in item.usage:
                        q = item.usage[name]
                        sums[name] = sums[name] + q if name in sums else q
        return {name: sums.get(name, ZERO) for name in names}
