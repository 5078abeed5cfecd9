"""A pod's resource fields, read from its stored JSON without the rest (issue 16).

Read models keep pods as validated Kubernetes JSON (`PodStore`). A role that needs every pod at
once (the scheduler's cache and quota's totals, seeded from a snapshot; the kubelet looking for
unsettled resizes) reads them through this view: the fields the resource rules of
`schemas.resources` read (containers' resources, the status KEP-1287 adds, phase, node),
with the same names and shapes as `schemas.k8s.Pod`, so those rules take either; the leaves
(`ResourceRequirements`, `ContainerResizePolicy`) are Pod's own models, so they compare equal.
Everything else (probes, env, volumes, timestamps, container states) is skipped by the JSON
parser instead of being built into models: ~2x faster than decoding the whole `Pod`, and
less than half its memory when kept.

A view is for reading: a role that changes a pod, or needs fields not here, decodes the `Pod`.
"""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel
from pydantic.main import IncEx

from schemas.base import Time
from schemas.k8s import (
    ConditionStatus,
    ContainerResizePolicy,
    ContainerRestartPolicy,
    OwnerReference,
    Pod,
    PodPhase,
    PodResizeStatus,
    ResourceList,
    ResourceRequirements,
    RestartPolicy,
)

__all__ = [
    "RESOURCE_FIELDS",
    "TERMINAL_PHASES",
    "ContainerView",
    "ObjectMetaView",
    "PodHealth",
    "PodHealthLike",
    "PodLike",
    "PodProgress",
    "PodResources",
    "PodSpecView",
    "PodStatusView",
    "controller_kind",
    "is_terminal",
    "pod_ready",
    "resource_json",
]


class _View(BaseModel):
    # The JSON was validated when it was stored; a view reads only its own fields of it.
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", strict=True
    )


class ContainerView(_View):
    name: str
    resources: ResourceRequirements = Field(default_factory=ResourceRequirements)
    resize_policy: list[ContainerResizePolicy] | None = None
    restart_policy: ContainerRestartPolicy | None = None


class PodSpecView(_View):
    init_containers: list[ContainerView] | None = None
    containers: list[ContainerView] = Field(default_factory=list)
    restart_policy: RestartPolicy = "Always"
    node_name: str | None = None
    scheduler_name: str | None = None
    priority_class_name: str | None = None
    priority: int | None = None
    overhead: ResourceList | None = None
    resources: ResourceRequirements | None = None


class ContainerStatusView(_View):
    name: str
    allocated_resources: ResourceList | None = None
    resources: ResourceRequirements | None = None


class PodConditionView(_View):
    type: str
    status: ConditionStatus
    reason: str | None = None
    message: str | None = None


class PodStatusView(_View):
    observed_generation: int | None = None
    phase: PodPhase | None = None
    conditions: list[PodConditionView] | None = None
    init_container_statuses: list[ContainerStatusView] | None = None
    container_statuses: list[ContainerStatusView] | None = None
    resize: PodResizeStatus | None = None
    allocated_resources: ResourceList | None = None
    resources: ResourceRequirements | None = None


class ObjectMetaView(_View):
    name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    deletion_timestamp: Time | None = None
    deletion_grace_period_seconds: int | None = None


class PodResources(_View):
    """The resource fields of a pod, shaped as `Pod` (metadata, spec, status)."""

    metadata: ObjectMetaView = Field(default_factory=ObjectMetaView)
    spec: PodSpecView = Field(default_factory=PodSpecView)
    status: PodStatusView = Field(default_factory=PodStatusView)

    @classmethod
    def of(cls, pod: PodLike) -> PodResources:
        """The resource fields of `pod` (a view is returned as it is): what a holder keeps
        of a pod for as long as it runs (the kubelet's checkpoint) instead of the whole tree."""
        if isinstance(pod, PodResources):
            return pod
        return cls.model_validate_json(
            pod.__pydantic_serializer__.to_json(pod, by_alias=True, exclude_none=True)
        )


# The fields of a Pod that PodResources reads, and those the reducers read to keep them right
# as events fold in: generation and observedGeneration (a completion of an older spec leaves a
# newer proposal open), each container's image (PodUpdated bumps the generation when one
# changes), the owner references (the `controller` header of what the holder writes). Not the
# conditions: the reducers set PodResizePending together with status.resize, which is kept.
# What a holder that only prices pods keeps of each (its PodStore form, `resource_json`).
_CONTAINER: IncEx = {"name", "image", "resources", "resize_policy", "restart_policy"}
_CONTAINER_STATUS: IncEx = {"name", "allocated_resources", "resources"}
RESOURCE_FIELDS: IncEx = {
    "api_version": True,
    "kind": True,
    "metadata": {
        "name",
        "namespace",
        "uid",
        "resource_version",
        "generation",
        "owner_references",
        "deletion_timestamp",
        "deletion_grace_period_seconds",
    },
    "spec": {
        "containers": {"__all__": _CONTAINER},
        "init_containers": {"__all__": _CONTAINER},
        "node_name": True,
        "scheduler_name": True,
        "restart_policy": True,
        "priority": True,
        "priority_class_name": True,
        "overhead": True,
        "resources": True,
    },
    "status": {
        "observed_generation": True,
        "phase": True,
        "resize": True,
        "allocated_resources": True,
        "resources": True,
        "container_statuses": {"__all__": _CONTAINER_STATUS},
        "init_container_statuses": {"__all__": _CONTAINER_STATUS},
    },
}


def resource_json(pod: Pod) -> bytes:
    """The pod's Kubernetes JSON of RESOURCE_FIELDS only (a running pod's ~2.7 KB becomes
    ~0.7 KB); decoded again, a `Pod` the resource rules read as they read the whole one."""
    return pod.k8s_json(include=RESOURCE_FIELDS)


class _GenerationView(_View):
    generation: int | None = None


class _ProgressStatusView(_View):
    observed_generation: int | None = None
    resize: PodResizeStatus | None = None


class PodProgress(_View):
    """How far a pod's resize has come, and nothing else (metadata.generation,
    status.observedGeneration, status.resize): what a kubelet taking over nodes asks of each
    of their pods to find those with a resize still to finish (~5x cheaper than the
    resource fields)."""

    metadata: _GenerationView = Field(default_factory=_GenerationView)
    status: _ProgressStatusView = Field(default_factory=_ProgressStatusView)


def resize_open(generation: int | None, observed: int | None, resize: str | None) -> bool:
    """A resize a kubelet may still have to decide or finish: `status.resize` set, or a
    spec generation past the first that the kubelet has not observed."""
    generation, observed = generation or 1, observed or 0
    return resize is not None or (generation > 1 and observed < generation)


# `resize_open` over the projection's pods columns (migration 0007), for a kubelet starting
# from the projection (tests/integration/test_projector.py checks that both agree).
RESIZE_OPEN_SQL = (
    "resize_status IS NOT NULL OR (coalesce(generation, 1) > 1"
    " AND coalesce(observed_generation, 0) < coalesce(generation, 1))"
)


class _HealthMetaView(_View):
    name: str | None = None
    labels: dict[str, str] | None = None
    deletion_timestamp: Time | None = None
    owner_references: list[OwnerReference] | None = None


class _HealthStatusView(_View):
    phase: PodPhase | None = None
    conditions: list[PodConditionView] | None = None


class PodHealth(_View):
    """What the disruption controller reads of each pod a budget may select: its labels,
    controller, deletion, phase and Ready condition (services/apiserver/disruption.py)."""

    metadata: _HealthMetaView = Field(default_factory=_HealthMetaView)
    status: _HealthStatusView = Field(default_factory=_HealthStatusView)


# What the resource rules read: a whole pod, or its resource fields.
PodLike = Pod | PodResources
# What the disruption rules read: a whole pod, or its health fields.
PodHealthLike = Pod | PodHealth


# podutil.IsPodPhaseTerminal: a pod in these phases has ended and never runs again.
TERMINAL_PHASES: Final = frozenset({"Succeeded", "Failed"})


def is_terminal(pod: PodLike | PodHealthLike) -> bool:
    """podutil.IsPodTerminal: the pod has ended (Succeeded or Failed); it holds nothing on
    its node, counts toward no quota or replicas, and its kubelet lets it go."""
    return pod.status.phase in TERMINAL_PHASES


def pod_ready(pod: PodHealthLike) -> bool:
    """podutil.IsPodReady: the pod's Ready condition is True."""
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])


def controller_kind(pod: Pod) -> str:
    """The kind of the pod's controlling owner ("" for none). Owner references are set at
    creation, so this never changes over a pod's life."""
    for ref in pod.metadata.owner_references or []:
        if ref.controller:
            return ref.kind
    return ""
