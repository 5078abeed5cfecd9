"""The reusable vertical-update module (the proposal's `verticalupdate` package): decide
whether a template change can be carried out by resizing pods in place, what each pod's
containers must become, the patch that asks for it, and whether a pod got there.

Plain functions over plain data, so any workload kind that keeps pod templates per revision
can use it; nothing here knows about CloneSets, Kafka or HTTP.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from schemas.k8s import ContainerResizePolicy, Pod, PodSpec, ResourceList, ResourceRequirements
from schemas.workload import PodTemplateSpec


@dataclass(frozen=True)
class ContainerTarget:
    resources: ResourceRequirements
    resize_policy: list[ContainerResizePolicy] | None = None


@dataclass(frozen=True)
class UpdateSpec:
    """The proposal's UpdateSpec: the revision a pod moves to and, per container, the
    resources (and resizePolicy) it must end with."""

    revision: str
    container_resources: dict[str, ContainerTarget] = field(default_factory=dict)


def _without_resources(spec: PodSpec) -> dict[str, Any]:
    data = spec.to_k8s()
    for container in data.get("containers", []):
        container.pop("resources", None)
        container.pop("resizePolicy", None)
    return data


def calculate_spec(old: PodTemplateSpec, new: PodTemplateSpec, revision: str) -> UpdateSpec | None:
    """The UpdateSpec taking a pod from `old` to `new`, or None when the change is more than
    containers' resources and resizePolicy (then the pod has to be recreated)."""
    if old.metadata != new.metadata or _without_resources(old.spec) != _without_resources(new.spec):
        return None
    return UpdateSpec(
        revision,
        {
            c.name: ContainerTarget(c.resources.model_copy(deep=True), c.resize_policy)
            for c in new.spec.containers
        },
    )


def can_vertical_update(old: PodTemplateSpec, new: PodTemplateSpec) -> bool:
    return calculate_spec(old, new, "") is not None


def _defaulted(resources: ResourceRequirements) -> tuple[ResourceList, ResourceList]:
    """requests defaulted from limits per resource, as the apiserver stores a pod."""
    limits = dict(resources.limits or {})
    return {**limits, **(resources.requests or {})}, limits


def same_resources(a: ResourceRequirements | None, b: ResourceRequirements | None) -> bool:
    """Equal after defaulting; quantities compare by value (`0.2` == `200m`)."""
    return _defaulted(a or ResourceRequirements()) == _defaulted(b or ResourceRequirements())


def _covers(actual: ResourceRequirements | None, desired: ResourceRequirements) -> bool:
    """Every quantity the desired state names is what the runtime reports."""
    actual_requests, actual_limits = _defaulted(actual or ResourceRequirements())
    requests, limits = _defaulted(desired)
    return all(actual_requests.get(k) == v for k, v in requests.items()) and all(
        actual_limits.get(k) == v for k, v in limits.items()
    )


def needs_resize(pod: Pod, spec: UpdateSpec) -> bool:
    """The pod's desired resources (spec) are not yet the target: a resize must be asked for.
    Once asked, spec holds the target, so asking is never repeated (after a crash too)."""
    for container in pod.spec.containers:
        target = spec.container_resources.get(container.name)
        if target is None:
            continue
        if not same_resources(container.resources, target.resources):
            return True
        if (container.resize_policy or None) != (target.resize_policy or None):
            return True
    return False


def resize_patch(spec: UpdateSpec) -> dict[str, Any]:
    """Strategic merge patch for the pod `resize` subresource (containers keyed by name)."""
    containers = []
    for name, target in sorted(spec.container_resources.items()):
        entry: dict[str, Any] = {
            "name": name,
            "resources": {
                "requests": {k: str(v) for k, v in (target.resources.requests or {}).items()},
                "limits": {k: str(v) for k, v in (target.resources.limits or {}).items()},
            },
        }
        if target.resize_policy:
            entry["resizePolicy"] = [p.to_k8s() for p in target.resize_policy]
        containers.append(entry)
    return {"spec": {"containers": containers}}


def check_containers_update_completed(pod: Pod, spec: UpdateSpec) -> str | None:
    """None when every container reports the target resources (containerStatuses[].resources,
    KEP-2273); otherwise why not."""
    statuses = {s.name: s for s in pod.status.container_statuses or []}
    for name, target in sorted(spec.container_resources.items()):
        status = statuses.get(name)
        if status is None or not _covers(status.resources, target.resources):
            return f"container {name} not yet actuated"
    return None


def check_pod_update_completed(pod: Pod, spec: UpdateSpec) -> str | None:
    """Actuated: status.resize cleared and the containers report the target resources."""
    if needs_resize(pod, spec):
        return "resize not yet proposed"
    if pod.status.resize is not None:
        return f"resize {pod.status.resize}"
    return check_containers_update_completed(pod, spec)


@dataclass(frozen=True)
class ResizeFailure:
    pod: str
    reason: str  # Infeasible | DeferredTimeout
    message: str


def resize_failure(pod: Pod, *, now: datetime, deferred_timeout: timedelta) -> ResizeFailure | None:
    """Infeasible at once; Deferred once it has waited longer than `deferred_timeout`."""
    name = pod.metadata.name or ""
    pending = next((c for c in pod.status.conditions or [] if c.type == "PodResizePending"), None)
    message = (pending.message if pending else None) or ""
    if pod.status.resize == "Infeasible":
        return ResizeFailure(name, "Infeasible", message)
    if pod.status.resize == "Deferred":
        since = pending.last_transition_time if pending else None
        if since is not None and now - since > deferred_timeout:
            return ResizeFailure(name, "DeferredTimeout", message or "resize deferred too long")
    return None
