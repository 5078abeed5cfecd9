"""One look at a pod's resize as a pure function, like Kubernetes' allocation manager:
(the node's allocation checkpoint, the pod as the log has it) → the decision, the new
allocation and the log events to write. The node agent (nodeagent.py) keeps the I/O: it
writes what a Step says, updates its checkpoint, books metrics and runs the runtime.

`resize_step` covers the three cases of KEP-1287's kubelet flow:
- the desired resources differ from the allocation: decide (Accept / Deferred / Infeasible)
  and say so once (a decision already on the pod is not written again);
- they are equal while the pod still says Proposed and the runtime is behind: a restart cut
  the kubelet off between Allocated and InProgress, so InProgress is written now;
- `completion`: allocation, desired and actual agree while a resize is open: it completed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from schemas import events as ev
from schemas.envelope import EventPayload
from schemas.k8s import Container, EventType, Pod, ResourceRequirements
from schemas.keys import pod_key
from schemas.podview import ContainerView, PodLike
from schemas.resources import is_sidecar
from services.kubelet.admission import (
    POD_LEVEL,
    Accept,
    Deferred,
    Infeasible,
    NodeAllocation,
    decide_resize,
)
from services.kubelet.resizenotices import resize_message

__all__ = [
    "Resources",
    "Step",
    "actual_of",
    "actuated_event",
    "actuated_step",
    "allocated_event",
    "allocations",
    "applied_with",
    "completion",
    "resizable",
    "resize_step",
    "resources_of",
    "same_resources",
    "settled",
    "shrinks",
]

Resources = dict[str, ResourceRequirements]
Outcome = Literal["unchanged", "resume", "deferred", "infeasible", "accepted", "completed"]


@dataclass(frozen=True)
class Notice:
    """A Kubernetes Event about the pod (reason, message, type)."""

    reason: str
    message: str
    type: EventType = "Normal"


@dataclass(frozen=True)
class Step:
    """What one look at a pod's resize decided; the node agent carries it out."""

    outcome: Outcome
    decision: Accept | Deferred | Infeasible | None = None
    allocation: Pod | None = None  # accepted: the new allocated pod for the checkpoint
    writes: list[EventPayload] = field(default_factory=list)  # to the log, in order
    notices: list[Notice] = field(default_factory=list)
    frees_room: bool = False  # accepted and something shrank: retry Deferred resizes


def resizable(pod: PodLike) -> list[Container] | list[ContainerView]:
    """Containers whose resources the kubelet manages: sidecars, then regular containers.
    Non-sidecar init containers ran to completion and are never resized (KEP-1287)."""
    return [c for c in pod.spec.init_containers or [] if is_sidecar(c)] + pod.spec.containers


def resources_of(pod: PodLike) -> Resources:
    """What the kubelet allocates and actuates: each resizable container's resources, and
    the pod-level resources under POD_LEVEL when the pod has them."""
    resources = {c.name: c.resources for c in resizable(pod)}
    if pod.spec.resources is not None:
        resources[POD_LEVEL] = pod.spec.resources
    return resources


def _cpu_memory(r: ResourceRequirements | None) -> tuple[object, ...]:
    r = r or ResourceRequirements()
    pick = ("cpu", "memory")
    return (
        tuple((k, (r.requests or {}).get(k)) for k in pick),
        tuple((k, (r.limits or {}).get(k)) for k in pick),
    )


def same_resources(
    a: Mapping[str, ResourceRequirements | None], b: Mapping[str, ResourceRequirements | None]
) -> bool:
    """Equal cpu/memory requests and limits per container (quantities compare by value)."""
    return set(a) == set(b) and all(_cpu_memory(a[n]) == _cpu_memory(b[n]) for n in a)


def actual_of(pod: PodLike) -> dict[str, ResourceRequirements | None]:
    statuses = {
        s.name: s
        for s in [
            *(pod.status.init_container_statuses or []),
            *(pod.status.container_statuses or []),
        ]
    }
    actual = {
        c.name: statuses[c.name].resources if c.name in statuses else None for c in resizable(pod)
    }
    if pod.spec.resources is not None:
        actual[POD_LEVEL] = pod.status.resources
    return actual


def allocations(containers: list[Container]) -> list[ev.ContainerAllocation]:
    return [ev.ContainerAllocation(name=c.name, resources=c.resources) for c in containers]


def shrinks(before: Resources, after: Resources) -> bool:
    """Does the new allocation free anything (so Deferred resizes deserve another look)?"""
    for name, old in before.items():
        new = after.get(name)
        for attr in ("requests", "limits"):
            old_rl, new_rl = getattr(old, attr) or {}, getattr(new, attr) or {} if new else {}
            if any(k in new_rl and new_rl[k] < q for k, q in old_rl.items()):
                return True
    return False


def _ids(pod: Pod) -> dict[str, Any]:
    """Who a kubelet event is about, and the generation of the spec it was decided on."""
    return {**ev.pod_ids(pod), "observed_generation": pod.metadata.generation}


IN_PROGRESS = ev.ResizeStatusUpdate(resize="InProgress")


def allocated_event(
    pod: Pod, allocation: Pod, node_name: str, resize_status: ev.ResizeStatusUpdate | None = None
) -> ev.Allocated:
    """The checkpoint entry of an admitted pod or resize (sidecars with the containers), and
    the status.resize it sets with it (InProgress for an accepted resize)."""
    sidecars = [c for c in allocation.spec.init_containers or [] if is_sidecar(c)]
    return ev.Allocated(
        **_ids(pod),
        node_name=node_name,
        containers=allocations(allocation.spec.containers),
        init_containers=allocations(sidecars),
        pod_resources=allocation.spec.resources,
        resize_status=resize_status,
    )


def resize_step(node: NodeAllocation, pod: Pod, node_name: str) -> Step:
    """Decide `pod`'s resize against `node` (which must hold the pod's allocation)."""
    allocated = node.allocated(pod_key(pod))
    if allocated is None:
        raise KeyError(pod_key(pod))
    desired = resources_of(pod)
    if same_resources(desired, resources_of(allocated)):
        if pod.status.resize == "Proposed" and not same_resources(actual_of(pod), desired):
            return Step("resume", writes=[ev.ResizeStatusChanged(**_ids(pod), resize="InProgress")])
        return Step("unchanged")
    decision = decide_resize(node, pod)
    if isinstance(decision, Deferred | Infeasible):
        state: Literal["Deferred", "Infeasible"] = (
            "Deferred" if isinstance(decision, Deferred) else "Infeasible"
        )
        if pod.status.resize == state:
            return Step(state.lower(), decision)  # type: ignore[arg-type]
        status = ev.ResizeStatusChanged(
            **_ids(pod), resize=state, message=decision.explained, decision=decision.record
        )
        # Warning since 1.34, as the kubelet reports both; the desired resources and why.
        generation = pod.metadata.generation or 1
        message = resize_message(f"Pod resize {state}", pod, generation, decision.explained)
        notice = Notice(f"Resize{state}", message, "Warning")
        return Step(state.lower(), decision, writes=[status], notices=[notice])  # type: ignore[arg-type]
    generation = pod.metadata.generation or 1
    target = decision.pod
    return Step(
        "accepted",
        decision,
        allocation=target,
        # Allocation and InProgress in one status update, as the kubelet's status manager
        # writes them (one event for every reader instead of two).
        writes=[allocated_event(pod, target, node_name, IN_PROGRESS)],
        notices=[Notice("ResizeStarted", resize_message("Pod resize started", target, generation))],
        frees_room=decision.changed and shrinks(resources_of(allocated), resources_of(target)),
    )


def settled(pod: PodLike, allocated: Resources) -> bool:
    """Nothing for a reconcile to do with a running pod re-admitted at `allocated`: no resize
    open or unobserved, and desired, allocated and the actual resources the status reports
    all agree (the runtime was just set to `allocated`). Anything else is reconciled."""
    generation = pod.metadata.generation or 1
    observed = pod.status.observed_generation or 0
    return (
        pod.status.phase == "Running"
        and pod.status.resize is None
        and not (generation > 1 and observed < generation)
        and same_resources(resources_of(pod), allocated)
        and same_resources(actual_of(pod), allocated)
    )


COMPLETED = ev.ResizeStatusUpdate(resize=None)


def completion(pod: Pod, allocated: Resources) -> Step | None:
    """The resize is done when desired, allocated and actual agree while one is open."""
    if not _completes(pod, allocated, actual_of(pod)):
        return None
    return Step(
        "unchanged",
        writes=[ev.ResizeStatusChanged(**_ids(pod), resize=None)],
        notices=[_completed(pod)],
    )


def actuated_event(
    pod: Pod, node_name: str, generation: int | None, actual: Resources
) -> ev.Actuated | None:
    """What the runtime reports (`actual`: per container name, the pod-level resources under
    POD_LEVEL) as an Actuated that observes `generation` (the spec the reconcile decided on);
    None when the pod's status says it already. Equal values are not enough: a container whose
    status reports no `resources` yet gets them, `{}` for one without any (a BestEffort pod), as
    the kubelet always sets them; kube-apiserver reads their absence as a node without resize
    support."""
    reported = actual_of(pod)
    if same_resources(actual, reported) and None not in reported.values():
        return None
    sidecars = {c.name for c in pod.spec.init_containers or []}
    return ev.Actuated(
        **{**_ids(pod), "observed_generation": generation},
        node_name=node_name,
        containers=[
            ev.ContainerActual(name=n, resources=r)
            for n, r in actual.items()
            if n not in sidecars and n != POD_LEVEL
        ],
        init_containers=[
            ev.ContainerActual(name=n, resources=r) for n, r in actual.items() if n in sidecars
        ],
        pod_resources=actual.get(POD_LEVEL),
    )


def actuated_step(pod: Pod, allocated: Resources, actual: Resources, event: ev.Actuated) -> Step:
    """Report what the runtime applied (`event`, carrying `actual`); when that completes the
    open resize, the same event clears status.resize: resources and status in one status
    update, as Kubernetes' status manager writes them, one event for every reader instead of
    two. `Step.outcome` "completed" says it did."""
    if not _completes(pod, allocated, actual):
        return Step("unchanged", writes=[event])
    return Step(
        "completed",
        writes=[event.model_copy(update={"resize_status": COMPLETED})],
        notices=[_completed(pod)],
    )


def applied_with(accepted: Step, actuated: Step) -> Step:
    """An accepted allocation not yet written, and what the runtime then applied
    (`actuated_step`), as one status update: the Allocated reports the actual resources and
    leaves the status the actuation leaves (cleared when it completed the resize), then both
    steps' Events. One record for every reader of the log instead of two (README: where we
    coalesce what the 1.35 kubelet usually sends as two status updates)."""
    allocated, report = accepted.writes[0], actuated.writes[0]
    assert isinstance(allocated, ev.Allocated) and isinstance(report, ev.Actuated)
    actual = ev.AppliedResources(
        containers=report.containers,
        init_containers=report.init_containers,
        pod_resources=report.pod_resources,
    )
    status = report.resize_status if report.resize_status is not None else allocated.resize_status
    merged = allocated.model_copy(update={"actuated": actual, "resize_status": status})
    return Step(
        actuated.outcome,
        accepted.decision,
        allocation=accepted.allocation,
        writes=[merged, *accepted.writes[1:], *actuated.writes[1:]],
        notices=[*accepted.notices, *actuated.notices],
    )


def _completed(pod: Pod) -> Notice:
    """ResizeCompleted: the pod's spec is what was allocated and is now actual."""
    generation = pod.metadata.generation or 1
    return Notice("ResizeCompleted", resize_message("Pod resize completed", pod, generation))


def _completes(pod: Pod, allocated: Resources, actual: Resources) -> bool:
    return (
        pod.status.resize is not None
        and same_resources(resources_of(pod), allocated)
        and same_resources(actual, allocated)
    )
