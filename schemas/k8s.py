"""Kubernetes API objects: a faithful subset of k8s.io/api/core/v1 (and metav1 meta types).

JSON names and shapes follow the Go types. Go fields without `omitempty` (for example
`ContainerStatus.ready`, `restartCount`, `image`) have non-None defaults here, so they are always
serialized, as Go does; `omitempty` and pointer fields default to None and are omitted when unset.
In-place resize (KEP-1287) adds `Container.resizePolicy`, `ContainerStatus.allocatedResources`,
`ContainerStatus.resources` and `PodStatus.resize`; node resize (KEP-3953) adds
`NodeStatus.initialCapacity`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from schemas.base import K8sModel, MicroTime, Time
from schemas.quantity import Quantity

__all__ = [
    "HUGEPAGES_PREFIX",
    "RESOURCE_CPU",
    "RESOURCE_EPHEMERAL_STORAGE",
    "RESOURCE_MEMORY",
    "RESOURCE_PODS",
    "Affinity",
    "ConditionStatus",
    "Container",
    "ContainerPort",
    "ContainerResizePolicy",
    "ContainerRestartPolicy",
    "ContainerState",
    "ContainerStateRunning",
    "ContainerStateTerminated",
    "ContainerStateWaiting",
    "ContainerStatus",
    "EnvVar",
    "Event",
    "EventList",
    "EventSource",
    "EventType",
    "HostIP",
    "LimitRange",
    "LimitRangeItem",
    "LimitRangeList",
    "LimitRangeSpec",
    "LimitType",
    "ListMeta",
    "Node",
    "NodeAddress",
    "NodeAffinity",
    "NodeCondition",
    "NodeList",
    "NodeSelector",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "NodeSpec",
    "NodeStatus",
    "NodeSwapStatus",
    "NodeSystemInfo",
    "ObjectMeta",
    "ObjectReference",
    "OwnerReference",
    "Pod",
    "PodCondition",
    "PodIP",
    "PodList",
    "PodPhase",
    "PodQOSClass",
    "PodResizeStatus",
    "PodSpec",
    "PodStatus",
    "PreferredSchedulingTerm",
    "ResourceList",
    "ResourceQuota",
    "ResourceQuotaList",
    "ResourceQuotaScope",
    "ResourceQuotaSpec",
    "ResourceQuotaStatus",
    "ResourceRequirements",
    "ResourceResizeRestartPolicy",
    "RestartPolicy",
    "Status",
    "StatusCause",
    "StatusDetails",
    "Taint",
    "Toleration",
]

# --- resource names and enumerations (core/v1 string types) ------------------------------------

RESOURCE_CPU = "cpu"
RESOURCE_MEMORY = "memory"
RESOURCE_EPHEMERAL_STORAGE = "ephemeral-storage"
RESOURCE_PODS = "pods"
HUGEPAGES_PREFIX = "hugepages-"

ResourceList = dict[str, Quantity]
"""core/v1 ResourceList: resource name (`cpu`, `memory`, `hugepages-2Mi`, …) → quantity."""

ConditionStatus = Literal["True", "False", "Unknown"]
RestartPolicy = Literal["Always", "OnFailure", "Never"]
ContainerRestartPolicy = Literal["Always"]
ResourceResizeRestartPolicy = Literal["NotRequired", "RestartContainer"]
PodPhase = Literal["Pending", "Running", "Succeeded", "Failed", "Unknown"]
PodQOSClass = Literal["Guaranteed", "Burstable", "BestEffort"]
PodResizeStatus = Literal["Proposed", "InProgress", "Deferred", "Infeasible"]
LimitType = Literal["Container", "Pod", "PersistentVolumeClaim"]
ResourceQuotaScope = Literal[
    "Terminating",
    "NotTerminating",
    "BestEffort",
    "NotBestEffort",
    "PriorityClass",
    "CrossNamespacePodAffinity",
    "VolumeAttributesClass",
]
EventType = Literal["Normal", "Warning"]


# --- meta/v1 ------------------------------------------------------------------------------------


class OwnerReference(K8sModel):
    """metav1.OwnerReference: the object that owns (and garbage-collects) this one."""

    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(K8sModel):
    """metav1.ObjectMeta (selfLink and the rest travel as JSON)."""

    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    creation_timestamp: Time | None = None
    deletion_timestamp: Time | None = None
    deletion_grace_period_seconds: int | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    owner_references: list[OwnerReference] | None = None
    finalizers: list[str] | None = None
    # Server-side apply's field ownership (FieldsV1 entries), kept as JSON.
    managed_fields: list[dict[str, Any]] | None = None


class ListMeta(K8sModel):
    """metav1.ListMeta: metadata of a list (and of a Status)."""

    self_link: str | None = None
    resource_version: str | None = None
    continue_: str | None = Field(default=None, alias="continue")
    remaining_item_count: int | None = None


class StatusCause(K8sModel):
    """metav1.StatusCause: one reason a request failed (e.g. one invalid field)."""

    reason: str | None = None
    message: str | None = None
    field: str | None = None


class StatusDetails(K8sModel):
    """metav1.StatusDetails: which object a Status is about, and the individual causes."""

    name: str | None = None
    group: str | None = None
    kind: str | None = None
    uid: str | None = None
    causes: list[StatusCause] | None = None
    retry_after_seconds: int | None = None


class Status(K8sModel):
    """metav1.Status: the body of every Kubernetes API error (and of some successes)."""

    api_version: Literal["v1"] = "v1"
    kind: Literal["Status"] = "Status"
    metadata: ListMeta = Field(default_factory=ListMeta)
    status: Literal["Success", "Failure"] | None = None
    message: str | None = None
    reason: str | None = None
    details: StatusDetails | None = None
    code: int | None = None


# --- containers ---------------------------------------------------------------------------------


class ResourceRequirements(K8sModel):
    """core/v1 ResourceRequirements (no `claims`)."""

    limits: ResourceList | None = None
    requests: ResourceList | None = None


class ContainerResizePolicy(K8sModel):
    """core/v1 ContainerResizePolicy (KEP-1287): restart needed to resize this resource?"""

    resource_name: str
    restart_policy: ResourceResizeRestartPolicy


class ContainerPort(K8sModel):
    """core/v1 ContainerPort."""

    name: str | None = None
    host_port: int | None = None
    container_port: int
    protocol: Literal["TCP", "UDP", "SCTP"] | None = None
    host_ip: str | None = Field(default=None, alias="hostIP")


class EnvVar(K8sModel):
    """core/v1 EnvVar (literal values only, no valueFrom)."""

    name: str
    value: str | None = None


class Container(K8sModel):
    """core/v1 Container (subset). `restartPolicy: Always` on an init container makes a sidecar."""

    name: str
    image: str | None = None
    command: list[str] | None = None
    args: list[str] | None = None
    working_dir: str | None = None
    ports: list[ContainerPort] | None = None
    env: list[EnvVar] | None = None
    # A struct without a pointer in Go: always present (possibly `{}`).
    resources: ResourceRequirements = Field(default_factory=ResourceRequirements)
    resize_policy: list[ContainerResizePolicy] | None = None
    restart_policy: ContainerRestartPolicy | None = None
    image_pull_policy: Literal["Always", "Never", "IfNotPresent"] | None = None


class Toleration(K8sModel):
    """core/v1 Toleration: lets a pod onto (or stay on) a node with a matching taint."""

    key: str | None = None
    # Exists | Equal ("" means Equal); an empty effect matches every effect. Strings, not
    # Literals: a bad value is a 422 naming the field (validation), as kube-apiserver answers.
    operator: str | None = None
    value: str | None = None
    effect: str | None = None
    toleration_seconds: int | None = None


class NodeSelectorRequirement(K8sModel):
    """core/v1 NodeSelectorRequirement: `key <operator> values` on a node's labels or fields."""

    key: str
    operator: str  # In | NotIn | Exists | DoesNotExist | Gt | Lt (validation: 422 otherwise)
    values: list[str] | None = None


class NodeSelectorTerm(K8sModel):
    """core/v1 NodeSelectorTerm: its requirements are ANDed; an empty term matches nothing."""

    match_expressions: list[NodeSelectorRequirement] | None = None
    match_fields: list[NodeSelectorRequirement] | None = None


class NodeSelector(K8sModel):
    """core/v1 NodeSelector: its terms are ORed."""

    node_selector_terms: list[NodeSelectorTerm] = Field(default_factory=list)


class PreferredSchedulingTerm(K8sModel):
    """core/v1 PreferredSchedulingTerm: a weighted (1-100) preference."""

    weight: int
    preference: NodeSelectorTerm


class NodeAffinity(K8sModel):
    """core/v1 NodeAffinity."""

    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] | None = (
        None
    )


class Affinity(K8sModel):
    """core/v1 Affinity. Pod (anti-)affinity travels as JSON: no role interprets it yet."""

    node_affinity: NodeAffinity | None = None


class PodSpec(K8sModel):
    """core/v1 PodSpec (subset)."""

    init_containers: list[Container] | None = None
    containers: list[Container] = Field(default_factory=list)
    restart_policy: RestartPolicy = "Always"
    termination_grace_period_seconds: int | None = None
    dns_policy: Literal["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"] | None = None
    node_selector: dict[str, str] | None = None
    affinity: Affinity | None = None
    tolerations: list[Toleration] | None = None
    node_name: str | None = None
    scheduler_name: str | None = None
    priority_class_name: str | None = None
    priority: int | None = None
    overhead: ResourceList | None = None
    # Pod-level resources (KEP-2837, beta 1.34): cpu, memory, hugepages-* for the whole pod.
    resources: ResourceRequirements | None = None


# --- pod status ---------------------------------------------------------------------------------


class ContainerStateWaiting(K8sModel):
    """core/v1 ContainerStateWaiting."""

    reason: str | None = None
    message: str | None = None


class ContainerStateRunning(K8sModel):
    """core/v1 ContainerStateRunning."""

    started_at: Time | None = None


class ContainerStateTerminated(K8sModel):
    """core/v1 ContainerStateTerminated."""

    exit_code: int
    signal: int | None = None
    reason: str | None = None
    message: str | None = None
    started_at: Time | None = None
    finished_at: Time | None = None
    container_id: str | None = Field(default=None, alias="containerID")


class ContainerState(K8sModel):
    """core/v1 ContainerState: at most one of waiting, running, terminated."""

    waiting: ContainerStateWaiting | None = None
    running: ContainerStateRunning | None = None
    terminated: ContainerStateTerminated | None = None


class ContainerStatus(K8sModel):
    """core/v1 ContainerStatus, with KEP-1287's allocatedResources and resources."""

    name: str
    state: ContainerState = Field(default_factory=ContainerState)
    last_state: ContainerState = Field(default_factory=ContainerState)
    ready: bool = False
    restart_count: int = 0
    image: str = ""
    image_id: str = Field(default="", alias="imageID")
    container_id: str | None = Field(default=None, alias="containerID")
    started: bool | None = None
    # Requests the kubelet admitted (its checkpoint).
    allocated_resources: ResourceList | None = None
    # What the runtime actually applied (allocated, for non-running containers).
    resources: ResourceRequirements | None = None


class PodCondition(K8sModel):
    """core/v1 PodCondition (PodScheduled, Initialized, ContainersReady, Ready, …)."""

    type: str
    # 1.34+: the metadata.generation this condition was computed for.
    observed_generation: int | None = None
    status: ConditionStatus
    last_probe_time: Time | None = None
    last_transition_time: Time | None = None
    reason: str | None = None
    message: str | None = None


class HostIP(K8sModel):
    """core/v1 HostIP."""

    ip: str


class PodIP(K8sModel):
    """core/v1 PodIP."""

    ip: str


class PodStatus(K8sModel):
    """core/v1 PodStatus (subset), with KEP-1287's `resize` (PodResizeStatus)."""

    # 1.34+: the metadata.generation the kubelet last acted on.
    observed_generation: int | None = None
    phase: PodPhase | None = None
    conditions: list[PodCondition] | None = None
    message: str | None = None
    reason: str | None = None
    nominated_node_name: str | None = None
    host_ip: str | None = Field(default=None, alias="hostIP")
    host_ips: list[HostIP] | None = Field(default=None, alias="hostIPs")
    pod_ip: str | None = Field(default=None, alias="podIP")
    pod_ips: list[PodIP] | None = Field(default=None, alias="podIPs")
    start_time: Time | None = None
    init_container_statuses: list[ContainerStatus] | None = None
    container_statuses: list[ContainerStatus] | None = None
    qos_class: PodQOSClass | None = None
    resize: PodResizeStatus | None = None
    # 1.34+: what the node allocated to the pod as a whole (pod-level requests, or the
    # containers' aggregate) and, with pod-level resources, what is applied to its cgroup.
    allocated_resources: ResourceList | None = None
    resources: ResourceRequirements | None = None


class Pod(K8sModel):
    """core/v1 Pod."""

    api_version: Literal["v1"] = "v1"
    kind: Literal["Pod"] = "Pod"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PodSpec = Field(default_factory=PodSpec)
    status: PodStatus = Field(default_factory=PodStatus)


# --- nodes --------------------------------------------------------------------------------------


class Taint(K8sModel):
    """core/v1 Taint."""

    key: str
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
    time_added: Time | None = None


class NodeSpec(K8sModel):
    """core/v1 NodeSpec (subset)."""

    pod_cidr: str | None = Field(default=None, alias="podCIDR")
    pod_cidrs: list[str] | None = Field(default=None, alias="podCIDRs")
    provider_id: str | None = Field(default=None, alias="providerID")
    unschedulable: bool | None = None
    taints: list[Taint] | None = None


class NodeCondition(K8sModel):
    """core/v1 NodeCondition (Ready, MemoryPressure, DiskPressure, PIDPressure, …)."""

    type: str
    status: ConditionStatus
    last_heartbeat_time: Time | None = None
    last_transition_time: Time | None = None
    reason: str | None = None
    message: str | None = None


class NodeAddress(K8sModel):
    """core/v1 NodeAddress."""

    type: Literal["Hostname", "InternalIP", "ExternalIP", "InternalDNS", "ExternalDNS"]
    address: str


class NodeSwapStatus(K8sModel):
    """core/v1 NodeSwapStatus: swap capacity in bytes."""

    capacity: int | None = None


class NodeSystemInfo(K8sModel):
    """core/v1 NodeSystemInfo. The string fields have no omitempty in Go: always serialized."""

    machine_id: str = Field(default="", alias="machineID")
    system_uuid: str = Field(default="", alias="systemUUID")
    boot_id: str = Field(default="", alias="bootID")
    kernel_version: str = ""
    os_image: str = ""
    container_runtime_version: str = ""
    kubelet_version: str = ""
    kube_proxy_version: str = ""
    operating_system: str = ""
    architecture: str = ""
    swap: NodeSwapStatus | None = None


class NodeStatus(K8sModel):
    """core/v1 NodeStatus (subset), with KEP-3953's initialCapacity."""

    capacity: ResourceList | None = None
    allocatable: ResourceList | None = None
    # KEP-3953: capacity when the node registered; unchanged by hotplug resizes.
    initial_capacity: ResourceList | None = None
    conditions: list[NodeCondition] | None = None
    addresses: list[NodeAddress] | None = None
    node_info: NodeSystemInfo | None = None


class Node(K8sModel):
    """core/v1 Node."""

    api_version: Literal["v1"] = "v1"
    kind: Literal["Node"] = "Node"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: NodeSpec = Field(default_factory=NodeSpec)
    status: NodeStatus = Field(default_factory=NodeStatus)


# --- policy -------------------------------------------------------------------------------------


class ResourceQuotaSpec(K8sModel):
    """core/v1 ResourceQuotaSpec (no scopeSelector)."""

    hard: ResourceList | None = None
    scopes: list[ResourceQuotaScope] | None = None


class ResourceQuotaStatus(K8sModel):
    """core/v1 ResourceQuotaStatus."""

    hard: ResourceList | None = None
    used: ResourceList | None = None


class ResourceQuota(K8sModel):
    """core/v1 ResourceQuota."""

    api_version: Literal["v1"] = "v1"
    kind: Literal["ResourceQuota"] = "ResourceQuota"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ResourceQuotaSpec = Field(default_factory=ResourceQuotaSpec)
    status: ResourceQuotaStatus = Field(default_factory=ResourceQuotaStatus)


class LimitRangeItem(K8sModel):
    """core/v1 LimitRangeItem: bounds and defaults for one kind of object."""

    type: LimitType
    max: ResourceList | None = None
    min: ResourceList | None = None
    default: ResourceList | None = None
    default_request: ResourceList | None = None
    max_limit_request_ratio: ResourceList | None = None


class LimitRangeSpec(K8sModel):
    """core/v1 LimitRangeSpec."""

    limits: list[LimitRangeItem] = Field(default_factory=list)


class LimitRange(K8sModel):
    """core/v1 LimitRange."""

    api_version: Literal["v1"] = "v1"
    kind: Literal["LimitRange"] = "LimitRange"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: LimitRangeSpec = Field(default_factory=LimitRangeSpec)


# --- events -------------------------------------------------------------------------------------


class ObjectReference(K8sModel):
    """core/v1 ObjectReference."""

    kind: str | None = None
    namespace: str | None = None
    name: str | None = None
    uid: str | None = None
    api_version: str | None = None
    resource_version: str | None = None
    field_path: str | None = None


class EventSource(K8sModel):
    """core/v1 EventSource: the component (and host) that reported an event."""

    component: str | None = None
    host: str | None = None


class Event(K8sModel):
    """core/v1 Event (the `kubectl get events` kind; no series/related)."""

    api_version: Literal["v1"] = "v1"
    kind: Literal["Event"] = "Event"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    involved_object: ObjectReference
    reason: str | None = None
    message: str | None = None
    source: EventSource = Field(default_factory=EventSource)
    first_timestamp: Time | None = None
    last_timestamp: Time | None = None
    count: int | None = None
    type: EventType | None = None
    event_time: MicroTime | None = None
    action: str | None = None
    # No omitempty in Go: always serialized.
    reporting_component: str = ""
    reporting_instance: str = ""


# --- lists --------------------------------------------------------------------------------------


class PodList(K8sModel):
    """core/v1 PodList."""

    api_version: Literal["v1"] = "v1"
    kind: Literal["PodList"] = "PodList"
    metadata: ListMeta = Field(default_factory=ListMeta)
    items: list[Pod] = Field(default_factory=list)


class NodeList(K8sModel):
    """core/v1 NodeList."""

    api_version: Literal["v1"] = "v1"
    kind: Literal["NodeList"] = "NodeList"
    metadata: ListMeta = Field(default_factory=ListMeta)
    items: list[Node] = Field(default_factory=list)


class ResourceQuotaList(K8sModel):
    """core/v1 ResourceQuotaList."""

    api_version: Literal["v1"] = "v1"
    kind: Literal["ResourceQuotaList"] = "ResourceQuotaList"
    metadata: ListMeta = Field(default_factory=ListMeta)
    items: list[ResourceQuota] = Field(default_factory=list)


class LimitRangeList(K8sModel):
    """core/v1 LimitRangeList."""

    api_version: Literal["v1"] = "v1"
    kind: Literal["LimitRangeList"] = "LimitRangeList"
    metadata: ListMeta = Field(default_factory=ListMeta)
    items: list[LimitRange] = Field(default_factory=list)


class EventList(K8sModel):
    """core/v1 EventList."""

    api_version: Literal["v1"] = "v1"
    kind: Literal["EventList"] = "EventList"
    metadata: ListMeta = Field(default_factory=ListMeta)
    items: list[Event] = Field(default_factory=list)
