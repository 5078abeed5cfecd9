"""Folds of events into Kubernetes objects: (object, event, position) → object.

The projector (Postgres rows), `inplace replay state --at` (in memory) and read models all use
these, so every view of the log agrees. No I/O here. A reducer owns the object it is given and
may change it in place (copying every pod per event cost 85% of rebuild time); what it takes
from the event payload it copies, so payloads stay untouched, unless the caller passes
`adopt=True`: it gives the envelope up (the rebuild, once it has written the event's history
row), and the reducer keeps the payload's objects instead of deep-copying them (a third of the
rebuild's fold).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, TypeVar

from pydantic import BaseModel

from inplace.core.bus.producer import Position
from schemas import events as ev
from schemas.envelope import Envelope
from schemas.k8s import (
    ContainerState,
    ContainerStateRunning,
    ContainerStateTerminated,
    ContainerStatus,
    Event,
    HostIP,
    LimitRange,
    Node,
    NodeCondition,
    Pod,
    PodCondition,
    PodIP,
    PodStatus,
    ResourceQuota,
    ResourceQuotaStatus,
)
from schemas.nodeswap import place_swap
from schemas.policy import PodDisruptionBudget, PodDisruptionBudgetStatus

# Partitions per topic are far below this, so the pair (offset, partition) packs into one
# integer that is unique per topic and grows with the offset: it is the resourceVersion, and
# a replay reproduces it exactly (DESIGN.md §1). Offsets count from 1 in it: a resourceVersion
# is never "0", which Kubernetes reads as "any version" (a read with it waits for nothing).
PARTITION_SPACE = 1024


def resource_version(position: Position) -> int:
    return (position.offset + 1) * PARTITION_SPACE + position.partition


def position_of(rv: int, topic: str) -> Position:
    return Position(topic, rv % PARTITION_SPACE, rv // PARTITION_SPACE - 1)


M = TypeVar("M", bound=BaseModel)


def _take(model: M, adopt: bool) -> M:
    """The payload's own object when the caller gave the envelope up, else a deep copy."""
    return model if adopt else model.model_copy(deep=True)


def _stamp_rv(
    obj: Pod | Node | ResourceQuota | LimitRange | PodDisruptionBudget | Event, rv: int
) -> None:
    obj.metadata.resource_version = str(rv)


# --- pods -------------------------------------------------------------------------------------


def _set_condition(
    status: PodStatus,
    cond_type: str,
    value: str | None,
    when: datetime,
    reason: str | None = None,
    message: str | None = None,
    generation: int | None = None,
) -> None:
    """Upsert (value) or remove (None) a pod condition; lastTransitionTime moves on change."""
    current = status.conditions or []
    old = None
    for c in current:  # a plain loop: this runs twice per resize step
        if c.type == cond_type:
            old = c
            break
    if value is None and old is None:
        # Removing an absent condition (most resize steps): the list stays as it is.
        if status.conditions == []:
            status.conditions = None
        return
    conditions = [c for c in current if c.type != cond_type]
    if value is not None:
        changed = old is None or old.status != value
        conditions.append(
            PodCondition(
                type=cond_type,
                observed_generation=generation,
                status=value,
                reason=reason,
                message=message,
                last_transition_time=when if changed or old is None else old.last_transition_time,
            )
        )
    status.conditions = conditions or None


def _container_status(pod: Pod, name: str, *, init: bool) -> ContainerStatus:
    statuses = (pod.status.init_container_statuses if init else pod.status.container_statuses) or []
    for status in statuses:
        if status.name == name:
            return status
    spec = pod.spec.init_containers if init else pod.spec.containers
    image = next((c.image for c in spec or [] if c.name == name), None)
    status = ContainerStatus(name=name, ready=False, restart_count=0, image=image or "")
    statuses.append(status)
    if init:
        pod.status.init_container_statuses = statuses
    else:
        pod.status.container_statuses = statuses
    return status


def _resize_conditions(
    pod: Pod, when: datetime, reason: str | None, message: str | None, generation: int | None
) -> None:
    """Mirror status.resize in the PodResizePending / PodResizeInProgress conditions, which
    observe `generation` (the spec the writer decided on)."""
    resize = pod.status.resize
    pending = "True" if resize in ("Deferred", "Infeasible") else None
    _set_condition(
        pod.status,
        "PodResizePending",
        pending,
        when,
        resize if pending else None,
        message if pending else None,
        generation,
    )
    in_progress = "True" if resize == "InProgress" else None
    _set_condition(
        pod.status,
        "PodResizeInProgress",
        in_progress,
        when,
        reason,
        message,
        generation,
    )


def _set_resize(
    pod: Pod,
    when: datetime,
    payload: ev.KubeletPodEvent,
    change: ev.ResizeStatusChanged | ev.ResizeStatusUpdate,
) -> None:
    """status.resize and its conditions as a kubelet event sets them (on its own, or with an
    allocation or actuation). A completion decided on an older generation than a proposal
    the apiserver has since written leaves that proposal open: the kubelet completed the
    resize it saw, not the one asked for after it (it answers that one when it reads it)."""
    generation = observed_generation(pod, payload)
    if (
        change.resize is None
        and pod.status.resize == "Proposed"
        and generation < (pod.metadata.generation or 1)
    ):
        return
    pod.status.resize = change.resize
    _resize_conditions(pod, when, change.reason, change.message, generation)


def reduce_pod(
    pod: Pod | None, env: Envelope, position: Position, *, adopt: bool = False
) -> Pod | None:
    """Apply one `pods` event. Unknown pods (events before PodCreated) stay unknown."""
    payload = env.payload
    when = env.time
    if isinstance(payload, ev.PodCreated):
        new = _take(payload.pod, adopt)
        new.metadata.creation_timestamp = new.metadata.creation_timestamp or when
        new.metadata.generation = new.metadata.generation or 1
        if new.status is None:
            new.status = PodStatus(phase="Pending")
        new.status.phase = new.status.phase or "Pending"
        _stamp_rv(new, resource_version(position))
        return new
    if pod is None or isinstance(payload, ev.PodDeleted):
        return None
    if pod.status is None:
        pod.status = PodStatus(phase="Pending")
    status = pod.status
    if isinstance(payload, ev.ResizeProposed):
        for desired, containers in (
            (payload.containers, pod.spec.containers),
            (payload.init_containers, pod.spec.init_containers or []),
        ):
            by_name = {c.name: c for c in containers}
            for change in desired:
                if change.name in by_name:
                    by_name[change.name].resources = _take(change.resources, adopt)
                    if change.resize_policy is not None:
                        by_name[change.name].resize_policy = list(change.resize_policy)
        if payload.pod_resources is not None:
            pod.spec.resources = _take(payload.pod_resources, adopt)
        pod.metadata.generation = (pod.metadata.generation or 1) + 1
        if payload.managed_fields is not None:
            pod.metadata.managed_fields = list(payload.managed_fields)
        status.resize = "Proposed"
        _resize_conditions(pod, when, None, None, pod.metadata.generation)
    elif isinstance(payload, ev.PodUpdated):
        pod.metadata.labels = dict(payload.labels) if payload.labels else None
        pod.metadata.annotations = dict(payload.annotations) if payload.annotations else None
        if payload.managed_fields is not None:
            pod.metadata.managed_fields = list(payload.managed_fields)
        changed = False
        for container in [*pod.spec.containers, *(pod.spec.init_containers or [])]:
            image = payload.images.get(container.name, container.image)
            changed = changed or image != container.image
            container.image = image
        if changed:  # a spec change: the kubelet observes it (status.observedGeneration)
            pod.metadata.generation = (pod.metadata.generation or 1) + 1
    elif isinstance(payload, ev.ResizeStatusChanged):
        _set_resize(pod, when, payload, payload)
    elif isinstance(payload, ev.Allocated):
        for allocs, init in ((payload.containers, False), (payload.init_containers, True)):
            for alloc in allocs:
                cs = _container_status(pod, alloc.name, init=init)
                cs.allocated_resources = dict(alloc.resources.requests or {})
        if payload.pod_resources is not None:
            status.allocated_resources = dict(payload.pod_resources.requests or {})
        if payload.actuated is not None:
            _applied(pod, payload.actuated, adopt)
        if payload.resize_status is not None:
            _set_resize(pod, when, payload, payload.resize_status)
    elif isinstance(payload, ev.Actuated):
        _applied(pod, payload, adopt)
        if payload.resize_status is not None:
            _set_resize(pod, when, payload, payload.resize_status)
    elif isinstance(payload, ev.PodBound):
        pod.spec.node_name = payload.node_name
        _set_condition(status, "PodScheduled", "True", when)
    elif isinstance(payload, ev.PodUnschedulable):
        _set_condition(status, "PodScheduled", "False", when, "Unschedulable", payload.message)
    elif isinstance(payload, ev.PodPhaseChanged):
        status.phase = payload.phase
        status.reason = payload.reason
        status.message = payload.message
        if payload.phase == "Running" and status.start_time is None:
            status.start_time = when
        running = payload.phase == "Running"
        if payload.containers is not None:
            _started(pod, payload, when)
        if running:
            # A pod created with spec.nodeName never met the scheduler: the kubelet says so.
            _set_condition(status, "PodScheduled", "True", when)
            _set_condition(status, "PodReadyToStartContainers", "True", when)
            _set_condition(status, "Initialized", "True", when)
        _set_condition(status, "ContainersReady", "True" if running else "False", when)
        _set_condition(status, "Ready", "True" if running else "False", when)
        for cs in [*(status.init_container_statuses or []), *(status.container_statuses or [])]:
            cs.ready = running
    elif isinstance(payload, ev.ContainerRestarted):
        init = any(c.name == payload.container for c in pod.spec.init_containers or [])
        cs = _container_status(pod, payload.container, init=init)
        cs.restart_count = payload.restart_count
        cs.last_state = _terminated(cs, when, 0, "Completed")
        cs.state = ContainerState(running=ContainerStateRunning(started_at=when))
        if payload.image is not None:
            cs.image, cs.image_id = payload.image, payload.image_id
    elif isinstance(payload, ev.PodEvicted):
        _evicted(pod, payload, when)
    elif isinstance(payload, ev.PodReadinessChanged):
        held = next((c for c in status.conditions or [] if c.type == "Ready"), None)
        generation = held.observed_generation if held is not None else None
        _set_condition(
            status, "Ready", "True" if payload.ready else "False", when, generation=generation
        )
    if isinstance(payload, ev.KubeletPodEvent):
        # 1.34+: the generation of the spec the kubelet acted on (a resize bumps it); never
        # backwards, though the apiserver may be ahead of it.
        observed = observed_generation(pod, payload)
        if status.observed_generation is None or status.observed_generation < observed:
            status.observed_generation = observed
    _stamp_rv(pod, resource_version(position))
    return pod


def _applied(pod: Pod, applied: ev.Actuated | ev.AppliedResources, adopt: bool) -> None:
    """The resources the runtime applied, as the pod's status reports them (KEP-2273)."""
    for actuals, init in ((applied.containers, False), (applied.init_containers, True)):
        for actual in actuals:
            cs = _container_status(pod, actual.name, init=init)
            cs.resources = _take(actual.resources, adopt)
    if applied.pod_resources is not None:
        pod.status.resources = _take(applied.pod_resources, adopt)


def observed_generation(pod: Pod, payload: ev.KubeletPodEvent) -> int:
    """The generation a kubelet event acted on: the one it carries, or, in logs written before
    events carried it, the pod's generation when the event is folded."""
    if payload.observed_generation is not None:
        return payload.observed_generation
    return pod.metadata.generation or 1


def _terminated(cs: ContainerStatus, when: datetime, exit_code: int, reason: str) -> ContainerState:
    """The container's running state, ended at `when`."""
    started = cs.state.running.started_at if cs.state.running else None
    return ContainerState(
        terminated=ContainerStateTerminated(
            exit_code=exit_code,
            reason=reason,
            started_at=started,
            finished_at=when,
            container_id=cs.container_id,
        )
    )


def _evicted(pod: Pod, payload: ev.PodEvicted, when: datetime) -> None:
    """Evicted as Kubernetes evicts (KEP-3953 hot unplug): the pod ends Failed with the reason
    and message, keeps its nodeName (immutable once bound), its containers terminated (137,
    killed) and a DisruptionTarget condition (1.26+); its owner makes a replacement."""
    status = pod.status
    status.phase = "Failed"
    status.reason = payload.reason
    status.message = payload.message
    status.resize = None
    for cs in [*(status.init_container_statuses or []), *(status.container_statuses or [])]:
        if cs.state.running is not None or cs.state.terminated is None:
            cs.state = _terminated(cs, when, 137, "Error")  # killed
        cs.ready = False
        cs.started = False
    _set_condition(
        status, "DisruptionTarget", "True", when, "TerminationByKubelet", payload.message
    )
    _set_condition(status, "ContainersReady", "False", when, "PodFailed")
    _set_condition(status, "Ready", "False", when, "PodFailed")
    _set_condition(status, "PodResizePending", None, when)
    _set_condition(status, "PodResizeInProgress", None, when)


def _started(pod: Pod, payload: ev.PodPhaseChanged, when: datetime) -> None:
    """The kubelet started the pod: its addresses, and each container running since `when`
    with the identities the runtime gave it."""
    status = pod.status
    if payload.pod_ip:
        status.pod_ip = payload.pod_ip
        status.pod_ips = [PodIP(ip=payload.pod_ip)]
    if payload.host_ip:
        status.host_ip = payload.host_ip
        status.host_ips = [HostIP(ip=payload.host_ip)]
    for started in payload.containers or []:
        cs = _container_status(pod, started.name, init=started.init)
        cs.container_id = started.container_id
        cs.image_id = started.image_id
        cs.state = ContainerState(running=ContainerStateRunning(started_at=when))
        cs.started = True


# --- nodes ------------------------------------------------------------------------------------


def reduce_node(
    node: Node | None, env: Envelope, position: Position, *, adopt: bool = False
) -> Node | None:
    payload = env.payload
    if isinstance(payload, ev.NodeRegistered):
        new = _take(payload.node, adopt)
        new.metadata.creation_timestamp = new.metadata.creation_timestamp or env.time
        if new.status is not None:
            place_swap(new.status, new.status.capacity or {}, new.status.allocatable or {})
            if new.status.initial_capacity is None:
                # KEP-3953: initialCapacity is fixed at registration, never moved by a resize.
                new.status.initial_capacity = dict(new.status.capacity or {})
        _stamp_rv(new, resource_version(position))
        return new
    if node is None or isinstance(payload, ev.NodeDeleted):
        return None
    if isinstance(payload, ev.NodeUpdated):
        # Labels, annotations and spec as the user wrote them; identity and status stay.
        meta = _take(payload.metadata, adopt)
        meta.name = node.metadata.name
        meta.uid = node.metadata.uid
        meta.creation_timestamp = node.metadata.creation_timestamp
        node.metadata = meta
        node.spec = _take(payload.spec, adopt)
    elif isinstance(payload, ev.NodeCapacityChanged) and node.status is not None:
        place_swap(node.status, payload.new_capacity, payload.new_allocatable)
    elif isinstance(payload, ev.NodeConditionChanged) and node.status is not None:
        old = next(
            (c for c in node.status.conditions or [] if c.type == payload.condition.type), None
        )
        conditions = [c for c in node.status.conditions or [] if c.type != payload.condition.type]
        conditions.append(_condition_times(_take(payload.condition, adopt), old, env.time))
        node.status.conditions = conditions
    _stamp_rv(node, resource_version(position))
    return node


def _condition_times(
    new: NodeCondition, old: NodeCondition | None, when: datetime
) -> NodeCondition:
    """A node condition as the kubelet's status setters write it: heartbeat now, transition
    when its status changed (else the old one's). A writer that leaves them out (the
    ResourceStarvation and FailedNodeResize conditions) gets the event's time, never Go's
    zero time (`kubectl describe node` printed 0001-01-01)."""
    if new.last_heartbeat_time is None:
        new.last_heartbeat_time = when
    if new.last_transition_time is None:
        changed = old is None or old.status != new.status or old.last_transition_time is None
        new.last_transition_time = when if changed else old.last_transition_time
    return new


# --- policy: namespaces, quotas, limit ranges ---------------------------------------------------


Collection = Literal[
    "pods",
    "nodes",
    "namespaces",
    "resourcequotas",
    "limitranges",
    "poddisruptionbudgets",
    "events",
    "clonesets",
]

# The namespaced policy kinds, by kind: their collection.
POLICY_COLLECTIONS: dict[str, Collection] = {
    "ResourceQuota": "resourcequotas",
    "LimitRange": "limitranges",
    "PodDisruptionBudget": "poddisruptionbudgets",
}


def locate(payload: ev.EventPayload) -> tuple[Collection, Any]:
    """(collection, key) of the object an event changes: the one answer the read models, the
    in-memory ClusterState and the projector's loader share. Collections are named as the
    Kubernetes resources (and the projection's tables) are."""
    if isinstance(payload, ev.PodEvent):
        return "pods", (payload.namespace, payload.name)
    if isinstance(payload, ev.NodeEvent):
        return "nodes", payload.name
    if isinstance(payload, ev.KubeEventPayload):
        meta = payload.event.metadata
        return "events", (meta.namespace or "default", meta.name or "")
    if isinstance(payload, ev.CloneSetEvent):
        return "clonesets", (payload.namespace, payload.name)
    if isinstance(payload, ev.PolicyEvent):
        kind, ns, name = policy_key(payload)
        if kind == "Namespace":
            return "namespaces", name
        return POLICY_COLLECTIONS[kind], (ns, name)
    raise TypeError(f"no collection for {type(payload).__name__}")


def reduce_namespace(
    namespace: dict[str, Any] | None, env: Envelope, position: Position
) -> dict[str, Any] | None:
    """Namespaces are held as their JSON (nothing reads more than names and labels)."""
    payload = env.payload
    if isinstance(payload, ev.NamespaceDeleted):
        return None
    if isinstance(payload, ev.NamespaceTerminating):
        if namespace is None:
            return None
        metadata = {**namespace["metadata"], "resourceVersion": str(resource_version(position))}
        metadata.setdefault("deletionTimestamp", env.time.strftime("%Y-%m-%dT%H:%M:%SZ"))
        return {**namespace, "metadata": metadata, "status": {"phase": "Terminating"}}
    if not isinstance(payload, ev.NamespaceCreated | ev.NamespaceUpdated):
        return namespace
    if isinstance(payload, ev.NamespaceUpdated) and namespace is not None:
        created = namespace["metadata"].get("creationTimestamp")
    else:
        created = env.time.strftime("%Y-%m-%dT%H:%M:%SZ")
    metadata: dict[str, Any] = {"name": payload.namespace, "labels": dict(payload.labels)}
    if payload.annotations:
        metadata["annotations"] = dict(payload.annotations)
    if payload.managed_fields:
        metadata["managedFields"] = list(payload.managed_fields)
    metadata["resourceVersion"] = str(resource_version(position))
    metadata["creationTimestamp"] = created
    status = {"phase": "Active"}
    if namespace is not None and (deleting := namespace["metadata"].get("deletionTimestamp")):
        metadata["deletionTimestamp"] = deleting  # labels may change while it terminates
        status = {"phase": "Terminating"}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata, "status": status}


def policy_key(payload: ev.PolicyEvent) -> tuple[str, str, str]:
    """(kind, namespace, name) of the object a policy event touches."""
    if isinstance(
        payload,
        ev.NamespaceCreated | ev.NamespaceUpdated | ev.NamespaceTerminating | ev.NamespaceDeleted,
    ):
        return ("Namespace", "", payload.namespace)
    if isinstance(payload, ev.ResourceQuotaCreated | ev.ResourceQuotaUpdated):
        return ("ResourceQuota", payload.namespace, payload.quota.metadata.name or "")
    if isinstance(payload, ev.ResourceQuotaDeleted | ev.ResourceQuotaUsageChanged):
        return ("ResourceQuota", payload.namespace, payload.name)
    if isinstance(payload, ev.LimitRangeCreated | ev.LimitRangeUpdated):
        return ("LimitRange", payload.namespace, payload.limit_range.metadata.name or "")
    if isinstance(payload, ev.LimitRangeDeleted):
        return ("LimitRange", payload.namespace, payload.name)
    if isinstance(payload, ev.PodDisruptionBudgetCreated | ev.PodDisruptionBudgetUpdated):
        return ("PodDisruptionBudget", payload.namespace, payload.budget.metadata.name or "")
    if isinstance(payload, ev.PodDisruptionBudgetDeleted | ev.PodDisruptionBudgetStatusChanged):
        return ("PodDisruptionBudget", payload.namespace, payload.name)
    raise TypeError(f"not a policy event: {type(payload).__name__}")


def reduce_quota(
    quota: ResourceQuota | None, env: Envelope, position: Position, *, adopt: bool = False
) -> ResourceQuota | None:
    payload = env.payload
    if isinstance(payload, ev.ResourceQuotaCreated | ev.ResourceQuotaUpdated):
        new = _take(payload.quota, adopt)
        new.metadata.namespace = payload.namespace
        if quota is not None:
            new.metadata.uid = quota.metadata.uid or new.metadata.uid
            new.metadata.creation_timestamp = quota.metadata.creation_timestamp
            used = quota.status.used if quota.status else None
        else:
            new.metadata.creation_timestamp = new.metadata.creation_timestamp or env.time
            used = None
        hard = dict(new.spec.hard or {}) if new.spec else {}
        new.status = ResourceQuotaStatus(hard=hard, used=used if used is not None else None)
    elif isinstance(payload, ev.ResourceQuotaDeleted) or quota is None:
        return None
    elif isinstance(payload, ev.ResourceQuotaUsageChanged):
        new = quota
        hard = dict(new.spec.hard or {}) if new.spec else {}
        new.status = ResourceQuotaStatus(hard=hard, used=dict(payload.used))
    else:
        return quota
    _stamp_rv(new, resource_version(position))
    return new


def reduce_limit_range(
    limit_range: LimitRange | None, env: Envelope, position: Position, *, adopt: bool = False
) -> LimitRange | None:
    payload = env.payload
    if isinstance(payload, ev.LimitRangeCreated | ev.LimitRangeUpdated):
        new = _take(payload.limit_range, adopt)
        new.metadata.namespace = payload.namespace
        if limit_range is not None:
            new.metadata.creation_timestamp = limit_range.metadata.creation_timestamp
        else:
            new.metadata.creation_timestamp = new.metadata.creation_timestamp or env.time
        _stamp_rv(new, resource_version(position))
        return new
    return None if isinstance(payload, ev.LimitRangeDeleted) else limit_range


def reduce_pdb(
    budget: PodDisruptionBudget | None, env: Envelope, position: Position, *, adopt: bool = False
) -> PodDisruptionBudget | None:
    """A budget's spec from its writes (generation 1, then one more per spec change, as
    kube-apiserver counts), its status from the disruption controller and evictions."""
    payload = env.payload
    if isinstance(payload, ev.PodDisruptionBudgetCreated | ev.PodDisruptionBudgetUpdated):
        new = _take(payload.budget, adopt)
        new.metadata.namespace = payload.namespace
        if budget is not None:
            new.metadata.creation_timestamp = budget.metadata.creation_timestamp
            new.metadata.uid = budget.metadata.uid or new.metadata.uid
            generation = budget.metadata.generation or 1
            new.metadata.generation = generation + (new.spec != budget.spec)
            new.status = budget.status
        else:
            new.metadata.creation_timestamp = new.metadata.creation_timestamp or env.time
            new.metadata.generation = 1
            new.status = PodDisruptionBudgetStatus()
    elif isinstance(payload, ev.PodDisruptionBudgetDeleted) or budget is None:
        return None
    elif isinstance(payload, ev.PodDisruptionBudgetStatusChanged):
        new = budget
        new.status = _take(payload.status, adopt)
    else:
        return budget
    _stamp_rv(new, resource_version(position))
    return new


# --- k8s-events ---------------------------------------------------------------------------------


def reduce_event(
    existing: Event | None, env: Envelope, position: Position, *, adopt: bool = False
) -> Event | None:
    """Events with the same name aggregate: count grows, lastTimestamp moves (like kubelet's
    event correlator)."""
    payload = env.payload
    if not isinstance(payload, ev.KubeEventPayload):
        raise TypeError(f"not an Event: {type(payload).__name__}")
    if isinstance(payload, ev.KubeEventDeleted):
        expires = payload.expires_version
        if expires is not None and existing is not None:
            if existing.metadata.resource_version != expires:
                return existing  # recorded again after the expiry was decided
        return None
    new = _take(payload.event, adopt)
    new.first_timestamp = new.first_timestamp or env.time
    new.last_timestamp = new.last_timestamp or env.time
    new.count = new.count or 1
    if isinstance(payload, ev.KubeEventUpdated):
        if existing is not None:  # written through the API: as the writer sent it
            new.metadata.creation_timestamp = existing.metadata.creation_timestamp
    elif existing is not None:
        new.count = (existing.count or 1) + 1
        new.first_timestamp = existing.first_timestamp
        new.metadata.creation_timestamp = existing.metadata.creation_timestamp
    new.metadata.creation_timestamp = new.metadata.creation_timestamp or env.time
    _stamp_rv(new, resource_version(position))
    return new
