"""Builders for realistic objects and event streams used across tests."""

from __future__ import annotations

import copy
import gc
import random
from collections.abc import AsyncIterator, Collection, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from aiokafka import TopicPartition
from aiokafka.structs import ConsumerRecord
from google.protobuf.message import Message

from inplace.core.bus.consumer import Batch, Record, decode_batch
from inplace.core.bus.headers import NODE_HEADER, TYPE_HEADER, Accept
from inplace.core.bus.producer import Position
from inplace.core.projection.state import ClusterState
from inplace.core.readmodel import ReadModel
from schemas import events as ev
from schemas.envelope import Envelope
from schemas.k8s import (
    Event,
    LimitRange,
    Node,
    NodeCondition,
    ObjectMeta,
    Pod,
    ResourceQuota,
    ResourceRequirements,
    Taint,
)
from schemas.k8sproto.k8s.io.apimachinery.pkg.runtime import generated_pb2 as runtime_pb2
from schemas.kubeevents import event_about, occurrence_name, reference
from schemas.policy import PodDisruptionBudget, PodDisruptionBudgetStatus
from schemas.quantity import Quantity
from services.kubelet.resizestep import COMPLETED, IN_PROGRESS, Step, applied_with


def pod(namespace: str, name: str, cpu: str = "100m", memory: str = "128Mi") -> Pod:
    return Pod.model_validate(
        {
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"},
            "spec": {
                "containers": [
                    {
                        "name": "app",
                        "image": "nginx:1.27",
                        "resources": {
                            "requests": {"cpu": cpu, "memory": memory},
                            "limits": {"cpu": cpu, "memory": memory},
                        },
                        "resizePolicy": [
                            {"resourceName": "cpu", "restartPolicy": "NotRequired"},
                            {"resourceName": "memory", "restartPolicy": "NotRequired"},
                        ],
                    }
                ]
            },
        }
    )


def node(name: str, cpu: str = "8", memory: str = "32Gi") -> Node:
    return Node.model_validate(
        {
            "metadata": {"name": name, "uid": f"uid-node-{name}"},
            "status": {
                "capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
                "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
            },
        }
    )


def node_manifest(name: str) -> dict[str, Any]:
    """A Ready 4-CPU Node as a user creates one with kubectl (no kubelet serves it)."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def resource_list(**values: str) -> dict[str, Quantity]:
    """A ResourceList from keyword args (`resource_list(**{"nvidia.com/gpu": "1"})` for other
    names)."""
    return {name: Quantity.parse(value) for name, value in values.items()}


def container_json(
    name: str,
    requests: dict[str, str] | None = None,
    limits: dict[str, str] | None = None,
    *,
    sidecar: bool = False,
) -> dict[str, Any]:
    """A container as a manifest has it; `sidecar`: an init container that keeps running."""
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    out: dict[str, Any] = {"name": name, "image": "busybox", "resources": resources}
    if sidecar:
        out["restartPolicy"] = "Always"
    return out


def resources(cpu: str, memory: str) -> ResourceRequirements:
    return ResourceRequirements.model_validate(
        {"requests": {"cpu": cpu, "memory": memory}, "limits": {"cpu": cpu, "memory": memory}}
    )


def resize_flow(
    namespace: str, name: str, node_name: str, cpu: str, memory: str
) -> list[ev.PodEvent]:
    """One accepted resize, as the KEP's flow produces it: Proposed → InProgress (Allocated)
    → Actuated → cleared."""
    uid = f"uid-{namespace}-{name}"
    want = resources(cpu, memory)
    return [
        ev.ResizeProposed(
            namespace=namespace,
            name=name,
            uid=uid,
            containers=[ev.ContainerResources(name="app", resources=want)],
        ),
        ev.Allocated(
            namespace=namespace,
            name=name,
            uid=uid,
            node_name=node_name,
            containers=[ev.ContainerAllocation(name="app", resources=want)],
        ),
        ev.ResizeStatusChanged(namespace=namespace, name=name, uid=uid, resize="InProgress"),
        ev.Actuated(
            namespace=namespace,
            name=name,
            uid=uid,
            node_name=node_name,
            containers=[ev.ContainerActual(name="app", resources=want)],
        ),
        ev.ResizeStatusChanged(namespace=namespace, name=name, uid=uid, resize=None),
    ]


def applied_in_one_flow(
    namespace: str, name: str, node_name: str, cpu: str, memory: str
) -> list[ev.PodEvent]:
    """One accepted resize the runtime applied within the kubelet's sync: Proposed, then one
    Allocated reporting the actual resources and the cleared status (resizestep.applied_with)."""
    proposed, allocated, _, actuated, _ = resize_flow(namespace, name, node_name, cpu, memory)
    allocated = allocated.model_copy(update={"resize_status": IN_PROGRESS})
    accepted = Step("accepted", writes=[allocated])
    done = Step("completed", writes=[actuated.model_copy(update={"resize_status": COMPLETED})])
    merged = applied_with(accepted, done).writes[0]
    assert isinstance(merged, ev.Allocated)
    return [proposed, merged]


def cluster_stream(
    pods: int, resizes_per_pod: int, nodes: int = 10, seed: int = 7
) -> Iterator[Envelope]:
    """Nodes, pods created and bound, then interleaved resize flows, some deletions and
    Kubernetes Events: a realistic mix over every event topic."""
    rng = random.Random(seed)
    node_names = [f"node-{i}" for i in range(nodes)]
    for n in node_names:
        yield Envelope.wrap(ev.NodeRegistered(name=n, node=node(n)), producer="kubelet")
    yield Envelope.wrap(ev.NamespaceCreated(namespace="team-a"), producer="apiserver")
    flows: list[list[ev.PodEvent]] = []
    for i in range(pods):
        ns, name, where = "team-a", f"web-{i}", node_names[i % nodes]
        uid = f"uid-{ns}-{name}"
        yield Envelope.wrap(
            ev.PodCreated(namespace=ns, name=name, uid=uid, pod=pod(ns, name)), producer="apiserver"
        )
        yield Envelope.wrap(
            ev.PodBound(namespace=ns, name=name, uid=uid, node_name=where), producer="scheduler"
        )
        yield Envelope.wrap(
            ev.PodPhaseChanged(namespace=ns, name=name, uid=uid, phase="Running"),
            producer="kubelet",
        )
        flow: list[ev.PodEvent] = []
        for _ in range(resizes_per_pod):
            cpu = f"{rng.randrange(1, 40) * 50}m"
            memory = f"{rng.randrange(1, 16) * 64}Mi"
            flow.extend(resize_flow(ns, name, where, cpu, memory))
        flows.append(flow)
    # Interleave the pods' flows (per-pod order kept) like concurrent users would.
    correlation: dict[str, str] = {}
    while any(flows):
        flow = rng.choice([f for f in flows if f])
        payload = flow.pop(0)
        if isinstance(payload, ev.ResizeProposed):
            env = Envelope.wrap(payload, producer="apiserver")
            correlation[payload.name] = env.correlation_id
        else:
            env = Envelope.wrap(
                payload, producer="kubelet", correlation_id=correlation[payload.name]
            )
        yield env
        if rng.random() < 0.02:
            yield Envelope.wrap(
                ev.KubeEventRecorded(event=kube_event(payload.namespace, payload.name)),
                producer="kubelet",
            )
    for i in range(0, pods, 10):
        name = f"web-{i}"
        yield Envelope.wrap(
            ev.PodDeleted(namespace="team-a", name=name, uid=f"uid-team-a-{name}"),
            producer="apiserver",
        )


def every_type_stream(pods: int = 60, nodes: int = 4, seed: int = 11) -> list[Envelope]:
    """Every event type of `pods`, `nodes`, `policy` and `k8s-events`, in the orders that
    matter to a reader that folds only some of them: pods pending, refused by every node,
    relabelled while pending and then bound; resizes accepted, Deferred then admitted,
    Infeasible, superseded after their allocation, refused by the apiserver; containers
    restarted before and after an allocation; nodes shrunk (evictions), grown, failing a
    resync, deleted, relabelled, tainted, cordoned; a namespace relabelled; quotas and limit
    ranges created, updated, deleted and their usage."""
    rng = random.Random(seed)
    ns, other = "team-a", "team-b"
    out: list[Envelope] = []

    def emit(payload: ev.EventPayload, producer: str = "kubelet") -> None:
        out.append(Envelope.wrap(payload, producer=producer))

    node_names = [f"node-{i}" for i in range(nodes)]
    for n in node_names:
        emit(ev.NodeRegistered(name=n, node=node(n, cpu="16", memory="64Gi")))
    for namespace in (ns, other):
        emit(ev.NamespaceCreated(namespace=namespace, labels={"team": namespace}), "apiserver")
    compute = ResourceQuota.model_validate(
        {
            "metadata": {"name": "compute", "namespace": ns, "uid": "uid-quota-compute"},
            "spec": {"hard": {"requests.cpu": "40", "limits.memory": "64Gi", "pods": "100"}},
        }
    )
    best_effort = ResourceQuota.model_validate(
        {
            "metadata": {"name": "besteffort", "namespace": ns},
            "spec": {"hard": {"pods": "5", "count/pods": "200"}, "scopes": ["BestEffort"]},
        }
    )
    limits = LimitRange.model_validate(
        {
            "metadata": {"name": "limits", "namespace": ns},
            "spec": {"limits": [{"type": "Container", "max": {"cpu": "8"}}]},
        }
    )
    for payload in (
        ev.ResourceQuotaCreated(namespace=ns, quota=compute),
        ev.ResourceQuotaCreated(namespace=ns, quota=best_effort),
        ev.LimitRangeCreated(namespace=ns, limit_range=limits),
        ev.LimitRangeCreated(namespace=other, limit_range=limits),
        ev.ResourceQuotaCreated(namespace=other, quota=compute),
    ):
        emit(payload, "apiserver")

    flows: list[list[ev.EventPayload]] = []
    for i in range(pods):
        name, where = f"web-{i}", node_names[i % nodes]
        uid = f"uid-{ns}-{name}"
        ids = {"namespace": ns, "name": name, "uid": uid}
        cpu = f"{rng.randrange(1, 8) * 100}m"
        flow: list[ev.EventPayload] = [ev.PodCreated(**ids, pod=pod(ns, name, cpu=cpu))]
        if i % 7 == 3:  # waits for a node, relabelled meanwhile, then placed
            flow += [
                ev.PodUnschedulable(**ids, message="0/4 nodes are available: 4 Insufficient cpu."),
                ev.PodUpdated(**ids, labels={"app": "web", "tier": "a"}),
                ev.ResizeProposed(
                    **ids,
                    containers=[
                        ev.ContainerResources(name="app", resources=resources("50m", "64Mi"))
                    ],
                ),
                ev.PodUnschedulable(**ids, message="0/4 nodes are available: 4 Too many pods."),
                ev.PodUpdated(**ids, labels={"app": "web", "tier": "b"}),
            ]
            if i % 2:
                flows.append(flow)
                continue  # stays pending
        granted = resources(cpu, "128Mi")
        flow += [
            ev.PodBound(**ids, node_name=where),
            ev.Allocated(
                **ids,
                node_name=where,
                containers=[ev.ContainerAllocation(name="app", resources=granted)],
            ),
            ev.PodPhaseChanged(
                **ids,
                phase="Running",
                pod_ip=f"10.0.0.{i % 250}",
                containers=[ev.ContainerStarted(name="app", container_id=f"c-{i}", image_id="i")],
            ),
            ev.Actuated(
                **ids,
                node_name=where,
                containers=[ev.ContainerActual(name="app", resources=granted)],
            ),
        ]
        for step in range(3):
            kind = (i + step) % 6
            want_cpu, want_mem = f"{rng.randrange(1, 30) * 50}m", f"{rng.randrange(1, 8) * 64}Mi"
            flow_ = resize_flow(ns, name, where, want_cpu, want_mem)
            proposed, allocated, in_progress, actuated, cleared = flow_
            if kind == 0:  # accepted
                flow += flow_
            elif kind == 1:  # Deferred, then admitted
                deferred = ev.ResizeStatusChanged(
                    **ids,
                    resize="Deferred",
                    reason="Deferred",
                    message="Node didn't have enough resource: cpu",
                    decision=ev.DecisionRecord(node=where, short=["cpu"]),
                )
                flow += [proposed, deferred, allocated, in_progress, actuated, cleared]
            elif kind == 2:  # Infeasible: only what was granted counts, until the next one
                infeasible = ev.ResizeStatusChanged(
                    **ids, resize="Infeasible", reason="Infeasible", message="too big"
                )
                big = resize_flow(ns, name, where, "64", "512Gi")[0]
                flow += [big, infeasible]
            elif kind == 3:  # superseded after its allocation: allocated exceeds spec and actual
                smaller = resize_flow(ns, name, where, "50m", "64Mi")
                flow += [proposed, allocated, in_progress, smaller[0], actuated, *smaller[1:]]
            elif kind == 4:  # refused by the apiserver, a container restarts
                flow += [
                    ev.ResizeRefused(**ids, code=403, reason="Forbidden", message="exceeded quota"),
                    ev.ContainerRestarted(**ids, container="app", restart_count=step + 1),
                    *flow_,
                ]
            else:  # relabelled by a controller, then resized
                flow += [ev.PodUpdated(**ids, labels={"app": "web", "step": str(step)}), *flow_]
        if i % 11 == 5:
            flow.append(ev.PodPhaseChanged(**ids, phase="Succeeded", reason="Completed"))
        elif i % 13 == 6:
            flow.append(ev.PodDeleted(**ids))
        elif i % 17 == 8:
            flow.append(ev.PodPhaseChanged(**ids, phase="Failed", reason="Error", message="exit 1"))
        flows.append(flow)
    # A restart reported before any allocation (its container status is created by it).
    early = {"namespace": other, "name": "early", "uid": "uid-early"}
    flows.append(
        [
            ev.PodCreated(**early, pod=pod(other, "early", cpu="200m")),
            ev.PodBound(**early, node_name=node_names[0]),
            ev.ContainerRestarted(**early, container="app", restart_count=1),
            ev.Allocated(
                **early,
                node_name=node_names[0],
                containers=[
                    ev.ContainerAllocation(name="app", resources=resources("200m", "128Mi"))
                ],
            ),
        ]
    )
    # Interleave the pods' flows, per-pod order kept, with Kubernetes Events among them.
    while any(flows):
        flow = rng.choice([f for f in flows if f])
        payload = flow.pop(0)
        emit(
            payload,
            "apiserver" if isinstance(payload, ev.ResizeProposed | ev.PodCreated) else "kubelet",
        )
        if rng.random() < 0.05 and isinstance(payload, ev.PodEvent):
            emit(ev.KubeEventRecorded(event=kube_event(payload.namespace, payload.name)))
    # Nodes change: one shrinks (its pods evicted), one grows, one fails a resync, one goes.
    small, big, failing, gone = node_names[:4]
    emit(capacity_changed(small, cpu="1", memory="2Gi"), "hotplug")
    emit(
        ev.NodeConditionChanged(
            name=small, condition=NodeCondition(type="MemoryPressure", status="True")
        )
    )
    for i in range(0, pods, nodes * 3):
        emit(
            ev.PodEvicted(
                namespace=ns,
                name=f"web-{i}",
                uid=f"uid-{ns}-web-{i}",
                node_name=small,
                reason="Evicted",
            )
        )
    emit(capacity_changed(big, cpu="32", memory="128Gi"), "hotplug")
    # A node goes silent: its pods are marked not ready, then ready again.
    for ready in (False, True):
        emit(ev.PodReadinessChanged(namespace=ns, name="web-1", uid=f"uid-{ns}-web-1", ready=ready))
    emit(ev.NodeResizeFailed(name=failing, reason="FailedNodeResize", message="cgroup", attempt=1))
    emit(
        ev.NodeConditionChanged(name=failing, condition=NodeCondition(type="Ready", status="False"))
    )
    emit(ev.NodeDeleted(name=gone))
    emit(ev.NodeRegistered(name="node-late", node=node("node-late")))
    # Users relabel, taint and cordon nodes (kubectl label / taint / cordon).
    relabelled = node(big, cpu="16", memory="64Gi")
    relabelled.metadata.labels = {"disk": "ssd"}
    relabelled.spec.taints = [Taint(key="dedicated", value="db", effect="NoSchedule")]
    emit(ev.NodeUpdated(name=big, metadata=relabelled.metadata, spec=relabelled.spec), "apiserver")
    cordoned = node("node-late")
    cordoned.spec.unschedulable = True
    emit(
        ev.NodeUpdated(name="node-late", metadata=cordoned.metadata, spec=cordoned.spec),
        "apiserver",
    )
    emit(ev.NamespaceUpdated(namespace=other, labels={"team": other, "tier": "gold"}), "apiserver")
    # Policy changes: usage published, a quota and a limit range replaced, others deleted.
    emit(
        ev.ResourceQuotaUsageChanged(namespace=ns, name="compute", used={"pods": Quantity("3")}),
        "quota",
    )
    tighter = compute.model_copy(deep=True)
    tighter.spec.hard = {"requests.cpu": Quantity("20"), "pods": Quantity("50")}
    emit(ev.ResourceQuotaUpdated(namespace=ns, quota=tighter), "apiserver")
    wider = limits.model_copy(deep=True)
    wider.spec.limits[0].max = {"cpu": Quantity("16")}
    emit(ev.LimitRangeUpdated(namespace=ns, limit_range=wider), "apiserver")
    emit(ev.ResourceQuotaDeleted(namespace=ns, name="besteffort"), "apiserver")
    emit(ev.LimitRangeDeleted(namespace=other, name="limits"), "apiserver")
    # A disruption budget: created, given a new spec and a status, deleted.
    budget = PodDisruptionBudget.model_validate(
        {"metadata": {"name": "web"}, "spec": {"minAvailable": 1, "selector": {}}}
    )
    emit(ev.PodDisruptionBudgetCreated(namespace=ns, budget=budget), "apiserver")
    budget.spec.min_available = 2
    emit(ev.PodDisruptionBudgetUpdated(namespace=ns, budget=budget), "apiserver")
    counted = PodDisruptionBudgetStatus(current_healthy=3, desired_healthy=2, expected_pods=3)
    emit(ev.PodDisruptionBudgetStatusChanged(namespace=ns, name="web", status=counted), "apiserver")
    emit(ev.PodDisruptionBudgetDeleted(namespace=ns, name="web"), "apiserver")
    emit(ev.NamespaceTerminating(namespace="team-c"), "apiserver")
    emit(ev.NamespaceDeleted(namespace="team-c"), "apiserver")
    return out


def scoped_pod(
    namespace: str,
    name: str,
    requests: dict[str, str] | None = None,
    limits: dict[str, str] | None = None,
    priority_class: str | None = None,
) -> Pod:
    """A one-container pod with exactly these requests and limits (none at all: BestEffort),
    optionally naming a PriorityClass: the facts quota scopes select by."""
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    spec: dict[str, Any] = {
        "containers": [{"name": "app", "image": "nginx:1.27", "resources": resources}]
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    return Pod.model_validate(
        {
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"},
            "spec": spec,
        }
    )


def scoped_pods_stream(namespace: str = "team-s", pods: int = 40, seed: int = 5) -> list[Envelope]:
    """Pods of every kind a quota scope tells apart, in one namespace: BestEffort, Burstable
    with requests only, Guaranteed, naming a PriorityClass or not, with hugepages and
    ephemeral storage, memory spelt in binary and decimal; resized (some Infeasible), finished,
    evicted and deleted in an interleaved order. No quota: usage is asked of any quota."""
    rng = random.Random(seed)
    out: list[Envelope] = []
    flows: list[list[ev.PodEvent]] = []
    for i in range(pods):
        name, where = f"s-{i}", f"node-{i % 3}"
        ids = {"namespace": namespace, "name": name, "uid": f"uid-{namespace}-{name}"}
        cpu = f"{rng.randrange(1, 20) * 50}m"
        memory = f"{rng.randrange(1, 8) * 64}{'Mi' if i % 5 else 'M'}"
        kind = i % 4
        requests: dict[str, str] | None = None
        limits: dict[str, str] | None = None
        if kind == 1:  # Burstable, requests only
            requests = {"cpu": cpu, "ephemeral-storage": "1Gi"}
        elif kind == 2:  # Guaranteed, with hugepages
            requests = limits = {"cpu": cpu, "memory": memory, "hugepages-2Mi": "4Mi"}
        elif kind == 3:  # Burstable
            requests, limits = {"cpu": cpu}, {"cpu": "2", "memory": memory}
        priority = "high" if i % 3 == 0 else None
        flow: list[ev.PodEvent] = [
            ev.PodCreated(
                **ids, pod=scoped_pod(namespace, name, requests, limits, priority_class=priority)
            )
        ]
        if kind in (1, 2, 3):
            for _ in range(2):
                want = f"{rng.randrange(1, 20) * 50}m"
                proposed, *rest = resize_flow(namespace, name, where, want, memory)
                if rng.random() < 0.3:  # Infeasible: only what was granted counts
                    rest = [
                        ev.ResizeStatusChanged(
                            **ids, resize="Infeasible", reason="Infeasible", message="too big"
                        )
                    ]
                flow += [proposed, *rest]
        end = i % 6
        if end == 1:
            flow.append(ev.PodPhaseChanged(**ids, phase="Succeeded", reason="Completed"))
        elif end == 2:
            flow.append(ev.PodEvicted(**ids, node_name=where, reason="Evicted"))
        elif end == 3:
            flow.append(ev.PodDeleted(**ids))
        flows.append(flow)
    while any(flows):
        flow = rng.choice([f for f in flows if f])
        payload = flow.pop(0)
        producer = (
            "apiserver" if isinstance(payload, ev.ResizeProposed | ev.PodCreated) else "kubelet"
        )
        out.append(Envelope.wrap(payload, producer=producer))
    return out


def capacity_changed(name: str, cpu: str, memory: str) -> ev.NodeCapacityChanged:
    """`node(name)` resized to `cpu` and `memory` (capacity and allocatable alike)."""
    before = node(name).status
    after = {"cpu": Quantity(cpu), "memory": Quantity(memory), "pods": Quantity("110")}
    return ev.NodeCapacityChanged(
        name=name,
        old_capacity=before.capacity,
        new_capacity=after,
        old_allocatable=before.allocatable,
        new_allocatable=after,
    )


def cpu_over_container_max() -> ev.LimitRangeViolation:
    """A LimitRange refusal: a container's cpu limit 2 over the maximum 1."""
    return ev.LimitRangeViolation(
        resource="cpu", per="Container", bound="maximum", enforced="1", field="limit", actual="2"
    )


def assert_every_type_decided(
    reads: Collection[str], skips: Collection[str], topics: Collection[str], stream: list[Envelope]
) -> None:
    """A role's type filter names every event type of its topics once, as read or skipped
    (a new type fails this until someone decides for the role), and `stream` has them all."""
    on_topics = {name for name, t in ev.event_types().items() if t.TOPIC in topics}
    assert set(reads) | set(skips) == on_topics
    assert not set(reads) & set(skips)
    assert on_topics <= {env.type for env in stream}


def assert_same_views(
    expected: Sequence[Mapping[str, Any]], actual: Sequence[Mapping[str, Any]]
) -> None:
    """Two readers of one stream saw the same after every batch (`feed`), part by part: a
    difference names its part and batch."""
    assert len(actual) == len(expected)
    for at, (want, got) in enumerate(zip(expected, actual, strict=True)):
        for part in want:
            assert got[part] == want[part], f"{part} after batch {at}"


def kube_event(namespace: str, pod_name: str) -> object:
    from schemas.k8s import Event

    return Event.model_validate(
        {
            "metadata": {"name": f"{pod_name}.resizing", "namespace": namespace},
            "involvedObject": {"kind": "Pod", "name": pod_name, "namespace": namespace},
            "reason": "Resizing",
            "message": "Pod resize in progress",
            "type": "Normal",
            "source": {"component": "kubelet"},
        }
    )


def kubelet_event(
    pod: str,
    at: datetime,
    *,
    namespace: str = "ns",
    reason: str = "Started",
    message: str | None = None,
    now: datetime | None = None,
) -> Event:
    """An Event the kubelet of node-1 records about the pod `pod`, named for an occurrence at
    `at` (as client-go's recorder names them)."""
    return event_about(
        reference("Pod", ObjectMeta(name=pod, namespace=namespace, uid=f"uid-{pod}")),
        name=occurrence_name(pod, at),
        namespace=namespace,
        reason=reason,
        message=message or f"{reason} container app",
        component="kubelet",
        instance="node-1",
        host="node-1",
        now=now,
    )


def event_manifest(
    name: str, last: datetime, namespace: str = "default", involved: str | None = None
) -> dict[str, Any]:
    """An Event as a client POSTs it, about the pod `involved` (the name's part before its
    first dot when not given)."""
    return {
        "metadata": {"name": name, "namespace": namespace},
        "involvedObject": {
            "kind": "Pod",
            "name": involved or name.split(".")[0],
            "namespace": namespace,
        },
        "reason": "Tested",
        "message": "m",
        "type": "Normal",
        "lastTimestamp": last.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


FOLD_T0 = datetime(2024, 1, 1, tzinfo=UTC)


def batch_of(records: list[Record]) -> Batch:
    """`records` (of one partition, in order) as the one batch a consumer hands over."""
    tp = TopicPartition(records[0].position.topic, records[0].position.partition)
    return Batch(
        records=records,
        start_offsets={tp: records[0].position.offset},
        next_offsets={tp: records[-1].position.offset + 1},
    )


def fold_records(*payloads: ev.EventPayload) -> list[Record]:
    """These events one second apart from FOLD_T0, at offsets 0, 1, … of partition 0."""
    return [
        Record(
            Position(payload.TOPIC, 0, offset),
            Envelope.wrap(payload, producer="test", time=FOLD_T0 + timedelta(seconds=offset)),
        )
        for offset, payload in enumerate(payloads)
    ]


def fold(*payloads: ev.EventPayload) -> ClusterState:
    """The cluster after these events (`fold_records`)."""
    state = ClusterState()
    for record in fold_records(*payloads):
        state.apply(record)
    return state


def raw_records(
    stream: Iterable[Envelope],
    topics: Collection[str],
    nodes: Mapping[str, str] | None = None,
) -> list[ConsumerRecord]:  # type: ignore[type-arg]
    """The records of `stream` on `topics` as a reader fetches them: partition 0, offsets from
    0 per topic, with the `type` header EventProducer.send writes, and the `node` header of
    the envelopes `nodes` names by id (podheaders.py)."""
    offsets: dict[str, int] = {}
    raw = []
    for env in stream:
        if env.topic not in topics:
            continue
        offset = offsets[env.topic] = offsets.get(env.topic, -1) + 1
        key, value = env.key.encode(), env.encode()
        headers = [(TYPE_HEADER, env.type.encode())]
        if nodes is not None and env.id in nodes:
            headers.append((NODE_HEADER, nodes[env.id].encode()))
        raw.append(
            ConsumerRecord(
                env.topic, 0, offset, 0, 0, key, value, None, len(key), len(value), headers
            )
        )
    return raw


async def feed(
    model: ReadModel,
    stream: Sequence[Envelope],
    accept: Accept | None = None,
    batch: int = 50,
    nodes: Mapping[str, str] | None = None,
) -> AsyncIterator[int]:
    """Give `model` the records of `stream` on its topics as its LogFollower would (`raw_records`),
    `batch` at a time through `decode_batch` (which skips what `accept` does not take,
    undecoded), applied in order. Yields after each batch how many records were skipped so far:
    the same stream and batch size stop at the same log positions whatever `accept` is, so two
    readers can be compared there. (Topics without a prefix: Settings() has none.)"""
    raw = raw_records(stream, model.topics, nodes)
    applied = 0
    for start in range(0, len(raw), batch):
        chunk = raw[start : start + batch]
        by_tp: dict[TopicPartition, list[ConsumerRecord]] = {}  # type: ignore[type-arg]
        for item in chunk:
            by_tp.setdefault(TopicPartition(item.topic, item.partition), []).append(item)
        decoded = await decode_batch(by_tp, model.role, None, accept)
        assert not decoded.malformed
        for record in decoded.records:
            model._apply(record)
        model.batch_applied()
        applied += len(decoded.records)
        yield start + len(chunk) - applied


def with_value(doc: dict[str, Any], path: Sequence[str | int], value: Any) -> dict[str, Any]:
    """A deep copy of a JSON document with the value at `path` set (lists by index)."""
    out = copy.deepcopy(doc)
    target: Any = out
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return out


def in_generation(obj: object, generation: int) -> bool:
    """Whether the cyclic GC holds `obj` in `generation` now."""
    return any(o is obj for o in gc.get_objects(generation))


def protobuf_body(api_version: str, kind: str, message: Message) -> bytes:
    """An object as kubectl's typed commands send it: `k8s\\0`, then a runtime.Unknown of
    its type meta and its Kubernetes protobuf message."""
    unknown = runtime_pb2.Unknown(raw=message.SerializeToString())
    unknown.typeMeta.apiVersion, unknown.typeMeta.kind = api_version, kind
    return b"k8s\x00" + unknown.SerializeToString()


# kube-apiserver's label-key name part and label-value messages (validation tests).
NAME_PART = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_VALUE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  "
    "or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
