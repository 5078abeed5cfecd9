"""Pure admission of new pods and of resizes against a node's allocation checkpoint (KEP-1287).

"Kubelet first checks if the new desired resources can fit the Node allocatable resources by
computing the sum of resources allocated for all Pods in the Node, except the Pod being resized.
For the Pod being resized, it adds the new desired resources" (Kubelet and API Server
Interaction). Fits now → accept; larger than allocatable outright → Infeasible; fits in theory
but not now → Deferred, re-evaluated when resources free up, in `retry_order`.

Requests are the effective pod requests of schemas.resources (init containers, sidecars and
`spec.overhead` included, as PodRequests computes them). All containers of a pod are admitted
together or not at all (Atomic Resizes). Messages are the kubelet's own, so an operator who knows
Kubernetes recognises them: "Node didn't have enough resource: cpu, requested: 500, used: 7600,
capacity: 8000" (lifecycle.InsufficientResourceError; CPU in milli-CPU, the rest in units).

Nothing here does I/O or mutates its inputs; `NodeAllocation` is an immutable value whose
`with_pod` / `without_pod` return the next checkpoint.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from schemas.events import DecisionRecord, ResourceHolder
from schemas.k8s import (
    RESOURCE_CPU,
    RESOURCE_EPHEMERAL_STORAGE,
    RESOURCE_MEMORY,
    RESOURCE_PODS,
    Container,
    Node,
    Pod,
    ResourceList,
    ResourceRequirements,
)
from schemas.keys import pod_key
from schemas.podview import PodLike, PodResources
from schemas.quantity import ZERO, Quantity
from schemas.resources import add, is_sidecar, pod_requests, qos_class, subtract
from services.kubelet.allocatedpods import AllocatedPods
from services.kubelet.interning import InternTable

__all__ = [
    "POD_LEVEL",
    "RESIZABLE_RESOURCES",
    "Accept",
    "Admit",
    "CPUManagerPolicy",
    "Decision",
    "Deferred",
    "Infeasible",
    "MemoryManagerPolicy",
    "NodeAllocation",
    "Reject",
    "UnknownPodError",
    "Waiting",
    "admit_pod",
    "allocated_resources",
    "decide_resize",
    "decision_record",
    "retry_order",
    "with_resources",
]

CPUManagerPolicy = Literal["none", "static"]
MemoryManagerPolicy = Literal["None", "Static"]

# KEP-1287 Non-Goals: only cpu and memory can be resized.
RESIZABLE_RESOURCES: Final = frozenset({RESOURCE_CPU, RESOURCE_MEMORY})
# Pod-level resources (spec.resources) ride in the per-container maps under a key no container
# can have (container names are DNS labels), so a resize of both is one allocation, decided,
# checkpointed and actuated whole.
POD_LEVEL: Final = "[pod]"

# The order in which the scheduler's fit check (and so the kubelet's) reports a shortage.
_CHECK_ORDER: Final = (RESOURCE_CPU, RESOURCE_MEMORY, RESOURCE_EPHEMERAL_STORAGE)


def _amount(name: str, quantity: Quantity) -> int:
    """A quantity as the scheduler counts it: milli-CPU for cpu, whole units otherwise."""
    return quantity.milli_value() if name == RESOURCE_CPU else quantity.value()


# --- the checkpoint -----------------------------------------------------------------------------

# Effective requests already cached by some checkpoint, by their text: pods of one shape (the
# replicas of a workload) share one read-only mapping instead of a dict each (~180 bytes a pod
# for as long as the kubelet runs).
_SHARED_REQUESTS: InternTable[tuple[tuple[str, str], ...], ResourceList] = InternTable()


def shared_requests(requests: ResourceList) -> ResourceList:
    """`requests`, or an equal mapping held already (same names, same quantities as written,
    in the same order). The result is for reading: nobody writes into a cached one."""
    key = tuple((name, str(quantity)) for name, quantity in requests.items())
    return _SHARED_REQUESTS.held(key, requests)


@dataclass(frozen=True)
class NodeAllocation:
    """A node's allocatable resources and the allocated pods: the kubelet's checkpoint.

    Each pod is stored as the kubelet's UpdatePodFromAllocation would give it: its spec
    resources are the *allocated* ones. Insertion order is admission order.
    """

    name: str
    allocatable: ResourceList
    pods: Mapping[str, PodLike] = field(default_factory=dict)
    cpu_manager_policy: CPUManagerPolicy = "none"
    memory_manager_policy: MemoryManagerPolicy = "None"
    exclusive_cpus_resize: bool = False  # the InPlacePodVerticalScalingExclusiveCPUs gate
    # Effective requests per pod, cached: every decision sums all other pods.
    _requests: Mapping[str, ResourceList] = field(default_factory=dict, repr=False, compare=False)
    # Their sum, carried from checkpoint to checkpoint: summing every pod on each decision was
    # the kubelet's largest cost at 110 pods per node.
    _total: ResourceList | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.pods, AllocatedPods):
            object.__setattr__(self, "pods", AllocatedPods.of(self.pods))
        missing = [key for key in self.pods if key not in self._requests]
        if missing:
            cache = dict(self._requests)
            for key in missing:
                cache[key] = shared_requests(pod_requests(self.pods[key]))
            object.__setattr__(self, "_requests", cache)
        if self._total is None or missing:
            total: ResourceList = {}
            for requests in self._requests.values():
                total = add(total, requests)
            object.__setattr__(self, "_total", total)

    @classmethod
    def from_node(
        cls,
        node: Node,
        *,
        cpu_manager_policy: CPUManagerPolicy = "none",
        memory_manager_policy: MemoryManagerPolicy = "None",
        exclusive_cpus_resize: bool = False,
    ) -> NodeAllocation:
        """An empty checkpoint for a registered node (its `status.allocatable`)."""
        return cls(
            name=node.metadata.name or "",
            allocatable=dict(node.status.allocatable or {}),
            cpu_manager_policy=cpu_manager_policy,
            memory_manager_policy=memory_manager_policy,
            exclusive_cpus_resize=exclusive_cpus_resize,
        )

    def allocated(self, key: str) -> PodLike | None:
        """The allocated pod under `key`, if admitted."""
        return self.pods.get(key)

    def requests_of(self, key: str) -> ResourceList:
        """Effective requests of an admitted pod (overhead included)."""
        return dict(self._requests[key])

    def used(self, *, excluding: str | None = None) -> ResourceList:
        """Sum of the allocated requests of all pods, optionally leaving one out; resources
        that sum to zero are left out."""
        total = self._total or {}
        if excluding is not None and excluding in self._requests:
            total = subtract(total, self._requests[excluding])
        return {name: quantity for name, quantity in total.items() if quantity}

    @property
    def _held(self) -> AllocatedPods:
        pods = self.pods
        assert isinstance(pods, AllocatedPods)  # __post_init__ made it one
        return pods

    def with_pod(self, pod: PodLike) -> NodeAllocation:
        """The checkpoint after allocating `pod` (admission or accepted resize); a pod already
        present keeps its place in admission order. The checkpoint keeps the pod's resource
        fields, not the whole pod, and those as JSON (allocatedpods.py): a kubelet holds every
        pod of its nodes for as long as it runs, and no copy is shared with anyone."""
        view = PodResources.of(pod)
        key = pod_key(view)
        requests = shared_requests(pod_requests(view))
        return NodeAllocation(
            name=self.name,
            allocatable=self.allocatable,
            pods=self._held.with_pods([(key, view)]),
            cpu_manager_policy=self.cpu_manager_policy,
            memory_manager_policy=self.memory_manager_policy,
            exclusive_cpus_resize=self.exclusive_cpus_resize,
            _requests={**self._requests, key: requests},
            _total=add(self.used(excluding=key), requests),
        )

    def with_pods(self, pods: list[PodLike]) -> NodeAllocation:
        """`with_pod` for many pods at once, in order (a restart re-admitting a node's pods):
        one new checkpoint, not one per pod."""
        if not pods:
            return self
        added = {pod_key(view): view for view in map(PodResources.of, pods)}
        requests = {k: r for k, r in self._requests.items() if k not in added}
        requests.update((key, shared_requests(pod_requests(view))) for key, view in added.items())
        return NodeAllocation(
            name=self.name,
            allocatable=self.allocatable,
            pods=self._held.with_pods(added.items()),
            cpu_manager_policy=self.cpu_manager_policy,
            memory_manager_policy=self.memory_manager_policy,
            exclusive_cpus_resize=self.exclusive_cpus_resize,
            _requests=requests,
        )

    def without_pod(self, key: str) -> NodeAllocation:
        """The checkpoint after a pod left the node (deleted, evicted, terminated)."""
        return NodeAllocation(
            name=self.name,
            allocatable=self.allocatable,
            pods=self._held.without(key),
            cpu_manager_policy=self.cpu_manager_policy,
            memory_manager_policy=self.memory_manager_policy,
            exclusive_cpus_resize=self.exclusive_cpus_resize,
            _requests={k: r for k, r in self._requests.items() if k != key},
            _total=self.used(excluding=key),
        )

    def with_allocatable(self, allocatable: Mapping[str, Quantity]) -> NodeAllocation:
        """The checkpoint after the node's allocatable changed (KEP-3953 hotplug)."""
        return NodeAllocation(
            name=self.name,
            allocatable=dict(allocatable),
            pods=self.pods,
            cpu_manager_policy=self.cpu_manager_policy,
            memory_manager_policy=self.memory_manager_policy,
            exclusive_cpus_resize=self.exclusive_cpus_resize,
            _requests=self._requests,
            _total=self._total,
        )


# --- decisions ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Admit:
    """A new pod fits: `pod` is what to checkpoint as allocated."""

    pod: Pod


@dataclass(frozen=True)
class Reject:
    """A new pod does not fit: the kubelet's reason (`OutOfcpu` …) and message."""

    reason: str
    message: str


@dataclass(frozen=True)
class Accept:
    """The resize fits now: checkpoint `pod` (its spec is the new allocation), then actuate.

    `changed` is False when desired already equals allocated (nothing to allocate; the
    kubelet just clears a pending Deferred/Infeasible).
    """

    pod: Pod
    changed: bool = True

    reason: str = field(default="InProgress", init=False)


@dataclass(frozen=True)
class Deferred:
    """Fits the node in theory but not now; re-evaluated whenever resources free up."""

    message: str
    # The inputs the decision was made on (issue 19); not part of what the decision *is*.
    record: DecisionRecord | None = field(default=None, compare=False)

    reason: str = field(default="Deferred", init=False)

    @property
    def explained(self) -> str:
        return self.record.explain(self.message) if self.record else self.message


@dataclass(frozen=True)
class Infeasible:
    """Can never fit this node (or is not allowed here); not re-evaluated."""

    message: str
    record: DecisionRecord | None = field(default=None, compare=False)

    reason: str = field(default="Infeasible", init=False)

    @property
    def explained(self) -> str:
        return self.record.explain(self.message) if self.record else self.message


Decision = Accept | Deferred | Infeasible


class UnknownPodError(KeyError):
    """A resize for a pod this node never admitted."""


# --- helpers ------------------------------------------------------------------------------------


def _all_containers(pod: Pod) -> Iterable[Container]:
    yield from pod.spec.init_containers or []
    yield from pod.spec.containers


def allocated_resources(pod: Pod) -> dict[str, ResourceRequirements]:
    """Per container name (init containers included), the resources in the pod's spec; the
    pod-level resources under POD_LEVEL when it has them."""
    resources = {c.name: c.resources for c in _all_containers(pod)}
    if pod.spec.resources is not None:
        resources[POD_LEVEL] = pod.spec.resources
    return resources


def with_resources(pod: Pod, resources: Mapping[str, ResourceRequirements]) -> Pod:
    """A copy of `pod` whose named containers (regular or init) carry `resources`, and whose
    pod-level resources are `resources[POD_LEVEL]` when given."""

    def swap(containers: list[Container]) -> list[Container]:
        return [
            c.model_copy(update={"resources": resources[c.name]}) if c.name in resources else c
            for c in containers
        ]

    update: dict[str, object] = {
        "containers": swap(pod.spec.containers),
        "init_containers": (
            swap(pod.spec.init_containers) if pod.spec.init_containers is not None else None
        ),
    }
    if POD_LEVEL in resources:
        update["resources"] = resources[POD_LEVEL]
    spec = pod.spec.model_copy(update=update)
    return pod.model_copy(update={"spec": spec})


def _checked_names(requests: Mapping[str, Quantity], allocatable: ResourceList) -> list[str]:
    """Resources to check, in the scheduler's order. Extended resources the node does not
    advertise are skipped (the kubelet's removeMissingExtendedResources)."""
    rest = sorted(
        name
        for name in requests
        if name not in _CHECK_ORDER and ("/" not in name or name in allocatable)
    )
    return [*(n for n in _CHECK_ORDER if n in requests), *rest]


def _shortage(
    requested: ResourceList, used: ResourceList, allocatable: ResourceList
) -> tuple[str, str] | None:
    """(resource, message) of the first resource that does not fit, or None when all fit."""
    for name in _checked_names(requested, allocatable):
        want = requested[name]
        if not ZERO < want:
            continue
        have = used.get(name, ZERO)
        capacity = allocatable.get(name, ZERO)
        if capacity < have + want:
            return name, (
                f"Node didn't have enough resource: {name}, requested: {_amount(name, want)}, "
                f"used: {_amount(name, have)}, capacity: {_amount(name, capacity)}"
            )
    return None


def _infeasibility(requested: ResourceList, allocatable: ResourceList) -> tuple[str, str] | None:
    """(resource, message) when the pod alone exceeds allocatable (memory reported first, as
    the kubelet's canResizePod does), else None."""
    names = _checked_names(requested, allocatable)
    if RESOURCE_MEMORY in names:
        names.remove(RESOURCE_MEMORY)
        names.insert(0, RESOURCE_MEMORY)
    for name in names:
        want = requested[name]
        capacity = allocatable.get(name, ZERO)
        if ZERO < want and capacity < want:
            return name, (
                f"Node didn't have enough capacity: {name}, requested: {_amount(name, want)}, "
                f"capacity: {_amount(name, capacity)}"
            )
    return None


def _request(resources: ResourceRequirements, name: str) -> Quantity:
    requests = {**(resources.limits or {}), **(resources.requests or {})}
    return requests.get(name, ZERO)


def _limit(resources: ResourceRequirements, name: str) -> Quantity:
    return (resources.limits or {}).get(name, ZERO)


def _changes(
    before: Mapping[str, ResourceRequirements], after: Mapping[str, ResourceRequirements]
) -> dict[str, set[str]]:
    """Per container, the resource names whose request or limit differs."""
    changed: dict[str, set[str]] = {}
    for name, new in after.items():
        old = before.get(name, ResourceRequirements())
        names = {*(old.requests or {}), *(old.limits or {}), *(new.requests or {})}
        names |= set(new.limits or {})
        diff = {
            r
            for r in names
            if _request(old, r) != _request(new, r) or _limit(old, r) != _limit(new, r)
        }
        if diff:
            changed[name] = diff
    return changed


# --- admission of a new pod ---------------------------------------------------------------------


def admit_pod(node: NodeAllocation, pod: Pod) -> Admit | Reject:
    """Admit a pod bound to this node (the kubelet's canAdmitPod for an AddOperation).

    A pod the checkpoint already holds is re-admitted with its *allocated* resources, not its
    spec (Kubelet Restart Tolerance: "all Pods are re-admitted based on their current allocated
    resources"); its pending resize is then handled separately, after all pods are back.
    """
    key = pod_key(pod)
    allocated = node.allocated(key)
    if allocated is not None:
        pod = with_resources(pod, allocated_resources(allocated))
    requested = pod_requests(pod)
    used = node.used(excluding=key)
    pods_capacity = node.allocatable.get(RESOURCE_PODS)
    if pods_capacity is not None:
        others = len(node.pods) - (1 if allocated is not None else 0)
        if pods_capacity.value() < others + 1:
            return Reject(
                reason="OutOfpods",
                message=(
                    f"Node didn't have enough resource: pods, requested: 1, used: {others}, "
                    f"capacity: {pods_capacity.value()}"
                ),
            )
    shortage = _shortage(requested, used, node.allocatable)
    if shortage is not None:
        resource, message = shortage
        return Reject(reason=f"OutOf{resource}", message=message)
    return Admit(pod=pod)


# --- admission of a resize ----------------------------------------------------------------------


def _invalid_resize(pod: Pod, changes: Mapping[str, set[str]]) -> str | None:
    """Why a resize can never be actuated here, or None. The apiserver validates these too;
    the kubelet re-checks because it must never act on a resize it cannot honour."""
    init = {c.name: c for c in pod.spec.init_containers or []}
    regular = {c.name for c in pod.spec.containers}
    for name, resources in sorted(changes.items()):
        if name == POD_LEVEL:
            other = sorted(resources - RESIZABLE_RESOURCES)
            if other:
                return f"only cpu and memory can be resized, not {', '.join(other)} of the pod"
            continue
        if name not in regular and name not in init:
            return f"container {name!r} is not part of the pod"
        if name in init and not is_sidecar(init[name]):
            # KEP-1287 Sidecars: "Non-restartable InitContainers cannot be resized."
            return f"init container {name!r} is not restartable and cannot be resized"
        other = sorted(resources - RESIZABLE_RESOURCES)
        if other:
            return f"only cpu and memory can be resized, not {', '.join(other)} of {name!r}"
    return None


def _static_policy_conflict(node: NodeAllocation, desired_pod: Pod) -> tuple[str, str] | None:
    """(policy, message) when the node's static CPU or memory manager forbids resizing this
    pod, as the 1.35 kubelet's canResizePod does: ANY resize of a Guaranteed pod (memory-only
    and fractional CPU included) is Infeasible there, unless the node opts in with
    InPlacePodVerticalScalingExclusiveCPUs (`exclusive_cpus_resize`). The KEP text only named
    exclusive (integral) CPUs and pinned memory; we follow Kubernetes."""
    if node.exclusive_cpus_resize or qos_class(desired_pod) != "Guaranteed":
        return None
    if node.cpu_manager_policy == "static":
        return "cpuManagerPolicy=static", (
            "Resize is infeasible for Guaranteed Pods alongside CPU Manager static policy"
        )
    if node.memory_manager_policy == "Static":
        return "memoryManagerPolicy=Static", (
            "Resize is infeasible for Guaranteed Pods alongside Memory Manager static policy"
        )
    return None


def decide_resize(
    node: NodeAllocation, pod: Pod, desired: Mapping[str, ResourceRequirements] | None = None
) -> Decision:
    """Decide a resize of an admitted pod: Accept, Deferred or Infeasible.

    `pod` is the pod as the kubelet knows it (its spec is the desired state); `desired`
    overrides the resources of the named containers (the newest ResizeProposed wins, and
    several proposals before a decision are one atomic request). The pod is decided as a whole:
    every container's new resources are accepted together or none are.
    """
    key = pod_key(pod)
    allocated = node.allocated(key)
    if allocated is None:
        raise UnknownPodError(key)
    before = allocated_resources(allocated)
    unknown = sorted(set(desired or {}) - set(before))
    if unknown:
        return Infeasible(f"container {unknown[0]!r} is not part of the pod")
    desired_pod = with_resources(pod, desired or {})
    after = allocated_resources(desired_pod)
    changes = _changes(before, after)
    if not changes:
        return Accept(pod=allocated, changed=False)
    invalid = _invalid_resize(allocated, changes)
    if invalid is not None:
        return Infeasible(invalid)
    # Keep everything but the resources from the checkpoint: the decision is about resources.
    target = with_resources(allocated, after)
    requested = pod_requests(target)
    conflict = _static_policy_conflict(node, target)
    if conflict is not None:
        policy, message = conflict
        return Infeasible(message, decision_record(node, key, requested, [], policy))
    infeasible = _infeasibility(requested, node.allocatable)
    if infeasible is not None:
        resource, message = infeasible
        return Infeasible(message, decision_record(node, key, requested, [resource]))
    shortage = _shortage(requested, node.used(excluding=key), node.allocatable)
    if shortage is not None:
        resource, message = shortage
        return Deferred(message, decision_record(node, key, requested, [resource]))
    return Accept(pod=target)


_RECORDED = (RESOURCE_CPU, RESOURCE_MEMORY)


def _recorded(amounts: Mapping[str, Quantity]) -> dict[str, str]:
    return {name: str(amounts[name]) for name in _RECORDED if name in amounts}


def decision_record(
    node: NodeAllocation,
    key: str,
    requested: ResourceList,
    short: list[str],
    policy: str | None = None,
) -> DecisionRecord:
    """The inputs of a decision about pod `key`: the node's allocatable, what the other pods
    hold (in sum, and the largest holders of the resource that did not fit), what it asked."""
    focus = short[0] if short else RESOURCE_CPU
    others = ((k, node.requests_of(k)) for k in node.pods if k != key)
    largest = (  # a policy refusal names no holder: room was not the reason
        heapq.nlargest(
            DecisionRecord.MAX_HOLDERS, others, key=lambda held: held[1].get(focus, ZERO)
        )
        if short
        else []
    )
    return DecisionRecord(
        node=node.name,
        allocatable=_recorded(node.allocatable),
        allocated=_recorded(node.used(excluding=key)),
        requested=_recorded(requested),
        short=short,
        holders=[
            ResourceHolder(pod=k, requests=_recorded(r))
            for k, r in largest
            if ZERO < r.get(focus, ZERO)
        ],
        policy=policy,
    )


# --- deferred resizes ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Waiting:
    """A Deferred resize waiting for a retry: the pod as desired, and when it was deferred."""

    pod: Pod
    since: float

    @property
    def key(self) -> str:
        return pod_key(self.pod)


_QOS_RANK: Final = {"Guaranteed": 0, "Burstable": 1, "BestEffort": 2}


def _increases(node: NodeAllocation, pod: Pod) -> bool:
    """Does the desired pod ask more of any resource than its allocation holds?"""
    held = node.requests_of(pod_key(pod))
    return any(held.get(name, ZERO) < amount for name, amount in pod_requests(pod).items())


def retry_order(node: NodeAllocation, waiting: Sequence[Waiting]) -> list[str]:
    """The order the kubelet retries Deferred resizes in (sortPendingResizes): resizes that
    increase no request first (they always fit and may make room), then higher priority
    (`spec.priority`), then higher QoS class, then the one waiting longest. Pods no longer on
    the node are dropped. Each is then decided in turn, every acceptance allocated before the
    next decision, so two can never take the same room."""
    present = [w for w in waiting if node.allocated(w.key) is not None]
    return [
        w.key
        for w in sorted(
            present,
            key=lambda w: (
                _increases(node, w.pod),
                -(w.pod.spec.priority or 0),
                _QOS_RANK.get(qos_class(w.pod), 3),
                w.since,
            ),
        )
    ]
