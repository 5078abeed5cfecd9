"""The disruption controller's loop: each PodDisruptionBudget's status kept current (what
kube-controller-manager's disruption controller does), in the apiserver beside its other
controllers. The decision is `disruption.budget_sync`; this reads pods and CloneSets from the
read model and writes a PodDisruptionBudgetStatusChanged when the status differs.

A pass runs every `every` seconds (kube's controller reacts to each pod change; a budget here
is at most that much behind, and an eviction spends its disruptions at once, under the same
lock, so a stale count never lets more pods go than the budget allows).
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime

from inplace.core.readmodel import ReadModel
from schemas import events as ev
from schemas.envelope import EventPayload
from schemas.kubeevents import event_about, occurrence_name, reference
from schemas.podview import PodHealth, PodHealthLike
from schemas.policy import PodDisruptionBudget
from services.apiserver.auth.identity import controller, set_current_user
from services.apiserver.disruption import budget_sync
from services.apiserver.eviction import budget_lock
from services.apiserver.writer import Writer

log = logging.getLogger(__name__)

COMPONENT = "disruption-controller"
RECORDER = "controllermanager"  # the Event source kube's disruption controller records with


def pods_in(model: ReadModel, namespace: str) -> list[PodHealthLike]:
    """The namespace's pods as the controller reads them (labels, owner, phase, readiness),
    each decoded for those fields only."""
    keys = [key for key in model.pods if key[0] == namespace]
    return [pod for _, pod in model.pods.views(keys, view=PodHealth)]


def scale_of(model: ReadModel, namespace: str, kind: str, name: str) -> int | None:
    """The replicas a controller wants (CloneSets are the workloads served here)."""
    if kind != "CloneSet":
        return None
    workload = model.get("clonesets", (namespace, name))
    return workload.spec.replicas if workload is not None else None


def synced(model: ReadModel, budget: PodDisruptionBudget, now: datetime) -> list[EventPayload]:
    """The writes one sync of `budget` makes: its status when that changed, and the Events
    it tells on the budget (as kube-controller-manager's recorder, "controllermanager")."""
    namespace = budget.metadata.namespace or ""

    def scale(kind: str, name: str) -> int | None:
        return scale_of(model, namespace, kind, name)

    sync = budget_sync(budget, pods_in(model, namespace), now, scale)
    written: list[EventPayload] = []
    if sync.status != budget.status:
        written.append(
            ev.PodDisruptionBudgetStatusChanged(
                namespace=namespace,
                name=budget.metadata.name or "",
                status=sync.status,
                precondition=budget.metadata.resource_version,
            )
        )
    for notice in sync.notices:
        event = event_about(
            reference(budget.kind, budget.metadata, api_version=budget.api_version),
            name=occurrence_name(budget.metadata.name or "", now),
            namespace=namespace,
            reason=notice.reason,
            message=notice.message,
            type_=notice.type,
            now=now,
            component=RECORDER,
            instance=RECORDER,
            counted=True,
        )
        written.append(ev.KubeEventRecorded(event=event))
    return written


def inputs_of(model: ReadModel, namespace: str) -> tuple[int, int, int]:
    """What a sync of the namespace's budgets reads, in three numbers that change whenever it
    does: how many pods, and the sums of its pods' and CloneSets' resourceVersions (each
    object's grows with every change). Read without decoding anything."""
    pods = model.pods
    versions = [pods.resource_version(key) or 0 for key in pods if key[0] == namespace]
    workloads = sum(
        int(workload.metadata.resource_version or 0)
        for (ns, _), workload in model.objects("clonesets").items()
        if ns == namespace
    )
    return len(versions), sum(versions), workloads


async def sync_forever(model: ReadModel, writer: Writer, every: float) -> None:
    """Every `every` seconds, each budget synced under its namespace's eviction lock; a failed
    pass is logged and the next one tries again. A budget whose inputs did not change since
    its last sync is not synced again (a namespace of 50,000 pods would be decoded every
    pass), unless it lists disrupted pods, whose entries expire with time."""
    set_current_user(controller(COMPONENT))  # this task writes as kube's disruption controller
    synced_on: dict[tuple[str, str], tuple[str | None, tuple[int, int, int]]] = {}
    while True:
        await asyncio.sleep(every)
        try:
            keys = list(model.objects("poddisruptionbudgets"))
            inputs = {ns: inputs_of(model, ns) for ns in {ns for ns, _ in keys}}
            for key in keys:
                async with writer.lock(budget_lock(key[0])):
                    budget = model.get("poddisruptionbudgets", key)
                    if budget is None:
                        continue
                    seen = (budget.metadata.resource_version, inputs[key[0]])
                    if synced_on.get(key) == seen and not budget.status.disrupted_pods:
                        continue
                    if written := synced(model, budget, datetime.now(UTC)):
                        if writer.refused(await writer.commit_all(written)):
                            continue  # an eviction through another replica came first
                        after = model.get("poddisruptionbudgets", key)
                        # Its own status write is no reason to sync it again.
                        rv = after.metadata.resource_version if after is not None else None
                        seen = (rv, seen[1])
                    synced_on[key] = seen
            for gone in synced_on.keys() - set(keys):
                del synced_on[gone]
        except Exception as exc:  # the log unreachable, a timeout: the next pass retries
            log.warning("disruption controller pass failed: %s", exc)
