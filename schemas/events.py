"""Every event payload on the log, grouped by topic (DESIGN.md §1).

Topic → key (the ordering unit): `pods` → namespace/name, `nodes` → node name,
`policy` → namespace, `k8s-events` → namespace/involved object name, `workloads` → namespace/name.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, TypedDict

from pydantic import BaseModel, Field

from schemas.envelope import EventPayload, PayloadModel
from schemas.k8s import (
    ContainerResizePolicy,
    Event,
    LimitRange,
    Node,
    NodeCondition,
    NodeSpec,
    ObjectMeta,
    Pod,
    ResourceList,
    ResourceQuota,
    ResourceRequirements,
)
from schemas.keys import object_key
from schemas.policy import PodDisruptionBudget, PodDisruptionBudgetStatus
from schemas.workload import CloneSet, CloneSetStatus

PODS = "pods"
NODES = "nodes"
POLICY = "policy"
K8S_EVENTS = "k8s-events"
WORKLOADS = "workloads"
DEAD_LETTER = "dead-letter"
EVENT_TOPICS: tuple[str, ...] = (PODS, NODES, POLICY, K8S_EVENTS, WORKLOADS)

ResizeStatus = Literal["Proposed", "InProgress", "Deferred", "Infeasible"]
PodPhase = Literal["Pending", "Running", "Succeeded", "Failed", "Unknown"]


class Conditional(BaseModel):
    """Mixed into the updates a writer decides from one version of their object (an apiserver
    replica's update, an eviction spending a budget's disruption): `precondition` is that
    resourceVersion, and every fold of the log takes the update only while the object still
    has it (ClusterState.apply). Of two replicas deciding from one version, the later on the
    log is folded to nothing, as etcd's compare-and-swap refuses kube-apiserver's stale update.
    None (writers that decide from nothing, events written before it): taken as it comes."""

    precondition: str | None = None


# --- pods -------------------------------------------------------------------------------------


class PodEvent(EventPayload):
    TOPIC: ClassVar[str] = PODS
    namespace: str = Field(min_length=1, max_length=63)
    name: str = Field(min_length=1, max_length=253)
    uid: str = Field(min_length=1)

    def partition_key(self) -> str:
        return object_key(self.namespace, self.name)


class PodIds(TypedDict):
    namespace: str
    name: str
    uid: str


def pod_ids(pod: Pod) -> PodIds:
    """Who a pod event is about (a PodEvent's namespace, name and uid), from the pod itself."""
    meta = pod.metadata
    return {"namespace": meta.namespace or "", "name": meta.name or "", "uid": meta.uid or ""}


class KubeletPodEvent(PodEvent):
    """A pod event the kubelet writes about the pod it looked at."""

    # metadata.generation of the pod spec the kubelet decided on (1.34+ observedGeneration):
    # the apiserver may have written a newer generation by the time this lands. None in logs
    # written before the field existed (the pod's generation then stands in for it).
    observed_generation: int | None = Field(default=None, ge=1)


class PodCreated(PodEvent):
    """A pod was accepted by the apiserver (defaults applied, status Pending)."""

    TYPE: ClassVar[str] = "PodCreated"
    pod: Pod


class PodUpdated(PodEvent, Conditional):
    """A regular update the apiserver allowed (labels, annotations, container images);
    resources change only through ResizeProposed."""

    TYPE: ClassVar[str] = "PodUpdated"
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    images: dict[str, str] = Field(default_factory=dict)
    # Server-side apply's field ownership after this write (None: unchanged).
    managed_fields: list[dict[str, Any]] | None = None


class ContainerResources(PayloadModel):
    """Desired resources of one container in a resize (KEP-1287: spec is the desired state)."""

    name: str = Field(min_length=1)
    resources: ResourceRequirements
    resize_policy: list[ContainerResizePolicy] | None = None


class ResizeProposed(PodEvent):
    """The desired resources changed through the `resize` subresource; newest desired wins."""

    TYPE: ClassVar[str] = "ResizeProposed"
    containers: list[ContainerResources] = Field(default_factory=list)
    init_containers: list[ContainerResources] = Field(default_factory=list)
    # Desired pod-level resources (spec.resources); None: the pod has none.
    pod_resources: ResourceRequirements | None = None
    # Server-side apply's field ownership after this write (None: unchanged).
    managed_fields: list[dict[str, Any]] | None = None


class ResourceHolder(PayloadModel):
    """A pod holding part of a node's allocation, with its effective requests."""

    pod: str = Field(min_length=1)  # namespace/name
    requests: dict[str, str] = Field(default_factory=dict)


class DecisionRecord(PayloadModel):
    """What a kubelet admission decision was made on (issue 19): enough to explain it from
    the log alone, and bounded (at most MAX_HOLDERS holders) so the log does not balloon."""

    MAX_HOLDERS: ClassVar[int] = 5

    node: str = Field(min_length=1)
    allocatable: dict[str, str] = Field(default_factory=dict)
    # Sum of the other pods' allocated requests, and this pod's requests after the resize.
    allocated: dict[str, str] = Field(default_factory=dict)
    requested: dict[str, str] = Field(default_factory=dict)
    short: list[str] = Field(default_factory=list)  # resources that did not fit
    holders: list[ResourceHolder] = Field(default_factory=list, max_length=5)
    policy: str | None = None  # the node policy that refused (static CPU/memory manager)

    def held_by(self) -> str:
        """The short form for conditions and Events: "most held by ns/db-0 (cpu 4), …"."""
        if not self.short:
            return ""  # refused by a policy, not for room: no holder is the reason
        resource = self.short[0]
        held = [
            f"{h.pod} ({resource} {h.requests[resource]})"
            for h in self.holders
            if resource in h.requests
        ]
        return f"most held by {', '.join(held)}" if held else ""

    def explain(self, message: str) -> str:
        """`message` (the kubelet's own words) plus which pods hold the resource."""
        held = self.held_by()
        return f"{message}; {held}" if held else message


class ResizeStatusChanged(KubeletPodEvent):
    """status.resize moved: InProgress / Deferred / Infeasible, or cleared (None)."""

    TYPE: ClassVar[str] = "ResizeStatusChanged"
    # None clears status.resize; it must default (envelopes omit nulls on the wire).
    resize: ResizeStatus | None = None
    reason: str | None = None
    message: str | None = None
    decision: DecisionRecord | None = None  # the inputs of a Deferred / Infeasible decision


class ResizeStatusUpdate(PayloadModel):
    """status.resize as an Allocated or Actuated leaves it, in the same event (the kubelet
    updates allocation and status, or actual resources and status, in one status update, as
    Kubernetes' status manager does): InProgress when a resize is accepted, cleared (None)
    when the actuation completes it. Saves every reader a ResizeStatusChanged per step."""

    resize: ResizeStatus | None = None
    reason: str | None = None
    message: str | None = None


class ContainerAllocation(PayloadModel):
    """The kubelet's checkpoint per container: requests AND limits (actuation needs both);
    the API shows the requests as containerStatuses[].allocatedResources."""

    name: str = Field(min_length=1)
    resources: ResourceRequirements


class QuotaRefusal(PayloadModel):
    """The ResourceQuota that refused a request, with the exceeded resources' amounts (what the
    request adds, what is used, the hard limit); all empty for a "must specify" refusal."""

    quota: str = Field(min_length=1)
    requested: dict[str, str] = Field(default_factory=dict)
    used: dict[str, str] = Field(default_factory=dict)
    hard: dict[str, str] = Field(default_factory=dict)


class LimitRangeViolation(PayloadModel):
    """One LimitRange bound a request broke: "maximum cpu usage per Container is 1, but limit
    is 2" → resource cpu, per Container, bound maximum, enforced 1, field limit, actual 2."""

    resource: str = Field(min_length=1)
    per: str = Field(min_length=1)  # Container | Pod
    bound: Literal["minimum", "maximum", "maxLimitRequestRatio"]
    enforced: str
    field: Literal["request", "limit", "ratio"] | None = None  # None: none specified
    actual: str | None = None


class ResizeRefused(PodEvent):
    """The apiserver refused a resize request (quota or LimitRange admission, validation):
    nothing changed, but "why was my resize not applied" has an answer in the log."""

    TYPE: ClassVar[str] = "ResizeRefused"
    CHANGES_STATE: ClassVar[bool] = False
    code: int = Field(ge=400, le=599)
    reason: str = ""
    message: str = ""
    containers: list[ContainerResources] = Field(default_factory=list)  # what was asked
    # The policy's facts, when a ResourceQuota or LimitRange refused (None: another reason).
    quota: QuotaRefusal | None = None
    limit_range: list[LimitRangeViolation] | None = None


class ContainerActual(PayloadModel):
    name: str = Field(min_length=1)
    resources: ResourceRequirements


class AppliedResources(PayloadModel):
    """What the runtime applied with an allocation, reported in the Allocated itself
    (ContainerStatus.resources and status.resources, as an Actuated reports them)."""

    containers: list[ContainerActual] = Field(default_factory=list)
    init_containers: list[ContainerActual] = Field(default_factory=list)
    pod_resources: ResourceRequirements | None = None


class Allocated(KubeletPodEvent):
    """The kubelet admitted a pod or a resize: the allocated checkpoint, per container."""

    TYPE: ClassVar[str] = "Allocated"
    node_name: str = Field(min_length=1)
    containers: list[ContainerAllocation] = Field(default_factory=list)
    init_containers: list[ContainerAllocation] = Field(default_factory=list)
    # Allocated pod-level resources (status.allocatedResources shows the requests).
    pod_resources: ResourceRequirements | None = None
    resize_status: ResizeStatusUpdate | None = None  # None: status.resize unchanged
    # A resize the runtime applied before the allocation went out (within the kubelet's
    # hold, services/kubelet/heldallocation.py): its actual resources in the same status
    # update, one record for every reader instead of an Allocated and an Actuated. None: not
    # applied yet (an Actuated reports it later), or an admission.
    actuated: AppliedResources | None = None


class Actuated(KubeletPodEvent):
    """Resources the runtime reports as applied (ContainerStatus.resources, KEP-2273)."""

    TYPE: ClassVar[str] = "Actuated"
    node_name: str = Field(min_length=1)
    containers: list[ContainerActual] = Field(default_factory=list)
    init_containers: list[ContainerActual] = Field(default_factory=list)
    # Pod-level resources applied to the pod's cgroup (status.resources).
    pod_resources: ResourceRequirements | None = None
    resize_status: ResizeStatusUpdate | None = None  # None: status.resize unchanged


def applied(payload: EventPayload) -> Actuated | AppliedResources | None:
    """The actual resources an event reports: an Actuated's, or those an Allocated carries
    when the runtime applied it first; None when it reports none."""
    if isinstance(payload, Actuated):
        return payload
    if isinstance(payload, Allocated):
        return payload.actuated
    return None


def resize_change(payload: EventPayload) -> ResizeStatusChanged | ResizeStatusUpdate | None:
    """The status.resize change an event makes: a ResizeStatusChanged, or the status an
    Allocated or Actuated sets with it; None when it leaves status.resize alone."""
    if isinstance(payload, ResizeStatusChanged):
        return payload
    if isinstance(payload, Allocated | Actuated):
        return payload.resize_status
    return None


class PodBound(PodEvent):
    TYPE: ClassVar[str] = "PodBound"
    node_name: str = Field(min_length=1)


class NodeFit(PayloadModel):
    """One node as the scheduler saw it for a pod: what was free, and why it did not fit."""

    node: str
    free: dict[str, str] = Field(default_factory=dict)
    reasons: list[str] = Field(default_factory=list)


class SchedulingRecord(PayloadModel):
    """What a FailedScheduling decision was made on (issue 19), bounded: how many nodes, the
    reasons counted as kube-scheduler counts them, and the nodes that came closest."""

    MAX_NODES: ClassVar[int] = 5

    nodes: int = Field(ge=0)
    requested: dict[str, str] = Field(default_factory=dict)
    reasons: dict[str, int] = Field(default_factory=dict)
    closest: list[NodeFit] = Field(default_factory=list, max_length=5)


class PodUnschedulable(PodEvent):
    """The scheduler found no node: PodScheduled=False with Kubernetes' reason text."""

    TYPE: ClassVar[str] = "PodUnschedulable"
    message: str
    record: SchedulingRecord | None = None


class ContainerStarted(PayloadModel):
    """A container the kubelet started, as its status reports it (`containerID`, `imageID`)."""

    name: str
    container_id: str
    image_id: str
    init: bool = False


class PodPhaseChanged(KubeletPodEvent):
    TYPE: ClassVar[str] = "PodPhaseChanged"
    phase: PodPhase
    reason: str | None = None
    message: str | None = None
    # When the pod starts running: its addresses and its containers (absent in older logs).
    pod_ip: str | None = None
    host_ip: str | None = None
    containers: list[ContainerStarted] | None = None


class ContainerRestarted(KubeletPodEvent):
    TYPE: ClassVar[str] = "ContainerRestarted"
    container: str = Field(min_length=1)
    restart_count: int = Field(ge=0)
    reason: str | None = None
    # Restarted with a new image (the spec's changed): what it runs now.
    image: str | None = None
    image_id: str | None = None


class PodEvicted(PodEvent):
    TYPE: ClassVar[str] = "PodEvicted"
    node_name: str = Field(min_length=1)
    reason: str
    message: str | None = None


class PodReadinessChanged(PodEvent):
    """The pod's Ready condition, set apart from its containers: False by the node lifecycle
    controller for the pods of a node that stopped posting status (MarkPodsNotReady), True
    again by the kubelet once its node is Ready (its status manager's next sync)."""

    TYPE: ClassVar[str] = "PodReadinessChanged"
    ready: bool


class PodDeleted(PodEvent):
    TYPE: ClassVar[str] = "PodDeleted"


# --- nodes ------------------------------------------------------------------------------------


class NodeEvent(EventPayload):
    TOPIC: ClassVar[str] = NODES
    name: str = Field(min_length=1, max_length=253)

    def partition_key(self) -> str:
        return self.name


class NodeRegistered(NodeEvent):
    TYPE: ClassVar[str] = "NodeRegistered"
    node: Node


class NodeUpdated(NodeEvent, Conditional):
    """The user-writable part of a Node changed (labels, annotations, spec: cordon, taints).

    Its status is not carried: capacity, allocatable and conditions move only by their own
    events (hotplug, the kubelet), so an update never writes back a status it read earlier.
    """

    TYPE: ClassVar[str] = "NodeUpdated"
    metadata: ObjectMeta
    spec: NodeSpec


class NodeCapacityChanged(NodeEvent):
    """KEP-3953: capacity changed on a live node; initialCapacity is never touched."""

    TYPE: ClassVar[str] = "NodeCapacityChanged"
    old_capacity: ResourceList
    new_capacity: ResourceList
    old_allocatable: ResourceList
    new_allocatable: ResourceList


class NodeConditionChanged(NodeEvent):
    TYPE: ClassVar[str] = "NodeConditionChanged"
    condition: NodeCondition


class NodeResizeFailed(NodeEvent):
    TYPE: ClassVar[str] = "NodeResizeFailed"
    reason: str
    message: str
    attempt: int = Field(ge=1)


class NodeDeleted(NodeEvent):
    TYPE: ClassVar[str] = "NodeDeleted"


# --- policy -----------------------------------------------------------------------------------


class PolicyEvent(EventPayload):
    TOPIC: ClassVar[str] = POLICY
    namespace: str = Field(min_length=1, max_length=63)

    def partition_key(self) -> str:
        return self.namespace


class NamespaceCreated(PolicyEvent):
    TYPE: ClassVar[str] = "NamespaceCreated"
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    # Server-side apply's record of who owns which field (metadata.managedFields).
    managed_fields: list[dict[str, Any]] | None = None


class NamespaceUpdated(PolicyEvent, Conditional):
    """New labels and annotations (a Namespace's only user-writable fields here)."""

    TYPE: ClassVar[str] = "NamespaceUpdated"
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    managed_fields: list[dict[str, Any]] | None = None


class NamespaceTerminating(PolicyEvent):
    """A namespace's deletion began: phase Terminating and a deletionTimestamp, so every
    apiserver replica refuses new content in it while its content is deleted."""

    TYPE: ClassVar[str] = "NamespaceTerminating"


class NamespaceDeleted(PolicyEvent):
    TYPE: ClassVar[str] = "NamespaceDeleted"


class ResourceQuotaCreated(PolicyEvent):
    TYPE: ClassVar[str] = "ResourceQuotaCreated"
    quota: ResourceQuota


class ResourceQuotaUpdated(PolicyEvent, Conditional):
    TYPE: ClassVar[str] = "ResourceQuotaUpdated"
    quota: ResourceQuota


class ResourceQuotaDeleted(PolicyEvent):
    TYPE: ClassVar[str] = "ResourceQuotaDeleted"
    name: str = Field(min_length=1)


class ResourceQuotaUsageChanged(PolicyEvent):
    """The quota service's view of status.used (usage = max(spec, allocated), KEP-1287)."""

    TYPE: ClassVar[str] = "ResourceQuotaUsageChanged"
    name: str = Field(min_length=1)
    used: ResourceList


class LimitRangeCreated(PolicyEvent):
    TYPE: ClassVar[str] = "LimitRangeCreated"
    limit_range: LimitRange


class LimitRangeUpdated(PolicyEvent, Conditional):
    TYPE: ClassVar[str] = "LimitRangeUpdated"
    limit_range: LimitRange


class LimitRangeDeleted(PolicyEvent):
    TYPE: ClassVar[str] = "LimitRangeDeleted"
    name: str = Field(min_length=1)


class PodDisruptionBudgetCreated(PolicyEvent):
    TYPE: ClassVar[str] = "PodDisruptionBudgetCreated"
    budget: PodDisruptionBudget


class PodDisruptionBudgetUpdated(PolicyEvent, Conditional):
    """A new spec (or labels, annotations); the status stays the controller's."""

    TYPE: ClassVar[str] = "PodDisruptionBudgetUpdated"
    budget: PodDisruptionBudget


class PodDisruptionBudgetDeleted(PolicyEvent):
    TYPE: ClassVar[str] = "PodDisruptionBudgetDeleted"
    name: str = Field(min_length=1)


class PodDisruptionBudgetStatusChanged(PolicyEvent, Conditional):
    """The disruption controller's count of healthy pods, or an eviction taking one of the
    disruptions it allowed (the pod then listed in disruptedPods until it is gone)."""

    TYPE: ClassVar[str] = "PodDisruptionBudgetStatusChanged"
    name: str = Field(min_length=1)
    status: PodDisruptionBudgetStatus


# --- k8s-events -------------------------------------------------------------------------------


class KubeEventPayload(EventPayload):
    """An event carrying a Kubernetes Event object, ordered with the others of its object."""

    TOPIC: ClassVar[str] = K8S_EVENTS
    event: Event

    def partition_key(self) -> str:
        return object_key(self.event.metadata.namespace, self.event.involved_object.name)


class KubeEventRecorded(KubeEventPayload):
    """A Kubernetes Event object (Resizing, ResizeDeferred, FailedNodeResize, …); one recorded
    again under the same name aggregates (count + 1), as the kubelet's correlator does."""

    TYPE: ClassVar[str] = "KubeEventRecorded"


class KubeEventUpdated(KubeEventPayload, Conditional):
    """An Event written through the API (PUT/PATCH): client-go's recorder patches count,
    lastTimestamp and message of a repeated Event. Taken as written."""

    TYPE: ClassVar[str] = "KubeEventUpdated"


class KubeEventDeleted(KubeEventPayload):
    """An Event deleted through the API, with its namespace, or expired (the apiserver's event
    TTL); it carries the Event as it was, so it travels on its object's partition, after what
    it deletes. An expiry names the version it expires: recorded again since, the Event
    stays (several apiserver replicas may expire one Event)."""

    TYPE: ClassVar[str] = "KubeEventDeleted"
    expires_version: str | None = None


# --- workloads --------------------------------------------------------------------------------


class CloneSetEvent(EventPayload):
    TOPIC: ClassVar[str] = WORKLOADS
    namespace: str = Field(min_length=1, max_length=63)
    name: str = Field(min_length=1, max_length=253)

    def partition_key(self) -> str:
        return object_key(self.namespace, self.name)


class CloneSetCreated(CloneSetEvent):
    TYPE: ClassVar[str] = "CloneSetCreated"
    clone_set: CloneSet


class CloneSetUpdated(CloneSetEvent, Conditional):
    """metadata and spec replaced (a new template is a new revision); status untouched."""

    TYPE: ClassVar[str] = "CloneSetUpdated"
    clone_set: CloneSet


class CloneSetStatusChanged(CloneSetEvent):
    """The `status` subresource: what the workload controller observed."""

    TYPE: ClassVar[str] = "CloneSetStatusChanged"
    status: CloneSetStatus


class CloneSetDeleted(CloneSetEvent):
    TYPE: ClassVar[str] = "CloneSetDeleted"


def event_types() -> dict[str, type[EventPayload]]:
    """Every registered event type (the JSON Schema generator and docs walk this)."""
    return dict(EventPayload.registry)
