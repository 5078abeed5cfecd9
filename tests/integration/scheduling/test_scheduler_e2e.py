# ruff: noqa: E501  (manifests read best one object per line)
"""The scheduler as a real process next to the apiserver, driven with the official Kubernetes
client (issue 6; KEP-1287 "Scheduler and API Server Interaction", KEP-3953 node growth)."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from typing import Any

import httpx
from aiokafka import TopicPartition
from kubernetes import client

from inplace.core.bus.consumer import LogReader, Record
from inplace.core.bus.producer import EventProducer
from inplace.core.projection.replay import pod_history
from inplace.core.settings import Settings
from schemas import events as ev
from schemas.envelope import Envelope
from schemas.events import PODS
from schemas.k8s import NodeCondition
from schemas.quantity import Quantity
from tests.integration.conftest import RoleProcess, call, kubectl, metric, until, wait_caught_up

NS = "default"


def core(apiserver: RoleProcess) -> client.CoreV1Api:
    return client.CoreV1Api(client.ApiClient(client.Configuration(host=apiserver.url)))


def node_body(name: str, cpu: str = "4", memory: str = "8Gi", pods: str = "110") -> dict[str, Any]:
    resources = {"cpu": cpu, "memory": memory, "pods": pods}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"capacity": resources, "allocatable": dict(resources)},
    }


def pod_body(name: str, cpu: str = "500m", memory: str = "256Mi") -> dict[str, Any]:
    amounts = {"cpu": cpu, "memory": memory}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "containers": [
                {
                    "name": "c1",
                    "image": "nginx:1.27",
                    "resources": {"requests": amounts, "limits": dict(amounts)},
                }
            ]
        },
    }


def pod_probe(v1: client.CoreV1Api, name: str) -> Callable[[], Any]:
    return lambda: v1.read_namespaced_pod(name, NS)


def bound(pod: Any) -> bool:
    return pod.spec.node_name is not None


def condition(pod: Any, kind: str) -> Any:
    return next((c for c in pod.status.conditions or [] if c.type == kind), None)


def unschedulable(pod: Any) -> bool:
    scheduled = condition(pod, "PodScheduled")
    return scheduled is not None and scheduled.status == "False"


def events_about(v1: client.CoreV1Api, name: str) -> Callable[[], list[Any]]:
    def probe() -> list[Any]:
        listed = v1.list_namespaced_event(NS, field_selector=f"involvedObject.name={name}")
        return list(listed.items)

    return probe


async def publish(settings: Settings, payload: ev.EventPayload) -> Envelope:
    envelope = Envelope.wrap(payload, producer="test")
    async with EventProducer(
        settings.kafka_bootstrap, topic_prefix=settings.topic_prefix
    ) as producer:
        await producer.publish(envelope)
    return envelope


async def grow(
    settings: Settings, node: str, before: dict[str, str], after: dict[str, str]
) -> Envelope:
    """KEP-3953: what the hotplug role will publish when a node's capacity grows."""
    old = {k: Quantity(v) for k, v in before.items()}
    new = {k: Quantity(v) for k, v in after.items()}
    return await publish(
        settings,
        ev.NodeCapacityChanged(
            name=node,
            old_capacity=old,
            new_capacity=new,
            old_allocatable=dict(old),
            new_allocatable=dict(new),
        ),
    )


async def pod_records(settings: Settings) -> list[Record]:
    """Every record of the `pods` topic, up to its current end."""
    records: list[Record] = []
    async with LogReader(settings.kafka_bootstrap) as reader:
        tps: list[TopicPartition] = await reader.partitions([settings.topic(PODS)])
        end = await reader.end_offsets(tps)
        async for batch in reader.read({}, end):
            records.extend(batch.records)
    return records


# --- placement -----------------------------------------------------------------------------------


async def test_pods_are_bound_and_spread_least_allocated(
    apiserver: RoleProcess, scheduler: RoleProcess, settings: Settings
) -> None:
    v1 = core(apiserver)
    for name in ("node-a", "node-b", "node-c"):
        await call(v1.create_node, node_body(name))
    names = [f"web-{i}" for i in range(6)]
    for name in names:
        await call(v1.create_namespaced_pod, NS, pod_body(name))

    def all_bound() -> list[Any]:
        pods: list[Any] = v1.list_namespaced_pod(NS).items
        return pods

    pods = await until(all_bound, lambda ps: len(ps) == 6 and all(map(bound, ps)), "all bound")
    # Equal pods on equal nodes: LeastAllocated puts two on each.
    assert Counter(p.spec.node_name for p in pods) == {"node-a": 2, "node-b": 2, "node-c": 2}
    for pod in pods:
        assert condition(pod, "PodScheduled").status == "True"

    scheduled = await until(events_about(v1, "web-0"), bool, "a Scheduled event")
    assert scheduled[0].reason == "Scheduled" and scheduled[0].type == "Normal"
    assert (
        scheduled[0].message == f"Successfully assigned default/web-0 to {pods[0].spec.node_name}"
    )
    assert scheduled[0].reporting_component == "default-scheduler"

    # The PodBound carries the creating request's correlation id (PodCreated → PodBound).
    history = await pod_history(settings.kafka_bootstrap, NS, "web-0", settings.topic_prefix)
    created, bound_ = history[0].record.envelope, history[-1].record.envelope
    assert [created.type, bound_.type] == ["PodCreated", "PodBound"]
    assert bound_.correlation_id == created.correlation_id
    assert bound_.causation_id == created.id
    assert bound_.producer == "scheduler"


async def test_unschedulable_pod_is_explained_then_placed_when_a_node_grows(
    apiserver: RoleProcess, scheduler: RoleProcess, settings: Settings
) -> None:
    v1 = core(apiserver)
    small = {"cpu": "1", "memory": "4Gi", "pods": "110"}
    for name in ("node-a", "node-b"):
        await call(v1.create_node, node_body(name, cpu="1", memory="4Gi"))
    await call(v1.create_namespaced_pod, NS, pod_body("big", cpu="2", memory="1Gi"))

    pod = await until(pod_probe(v1, "big"), unschedulable, "PodScheduled=False")
    scheduled = condition(pod, "PodScheduled")
    assert scheduled.reason == "Unschedulable"
    assert scheduled.message == "0/2 nodes are available: 2 Insufficient cpu."
    assert pod.spec.node_name is None

    events = await until(events_about(v1, "big"), bool, "a FailedScheduling event")
    assert len(events) == 1
    failed = events[0]
    assert (failed.reason, failed.type) == ("FailedScheduling", "Warning")
    assert failed.message == "0/2 nodes are available: 2 Insufficient cpu."
    assert failed.reporting_component == "default-scheduler"
    assert failed.involved_object.kind == "Pod" and failed.involved_object.uid == pod.metadata.uid

    # Records of types the scheduler does not read (services/scheduler/reads.py) are skipped
    # undecoded, and change nothing it decides on.
    uid = pod.metadata.uid
    for ignored in (
        ev.NodeConditionChanged(
            name="node-b", condition=NodeCondition(type="MemoryPressure", status="True")
        ),
        ev.NodeResizeFailed(name="node-b", reason="FailedNodeResize", message="x", attempt=1),
        ev.ResizeRefused(namespace=NS, name="big", uid=uid, code=403, reason="Forbidden"),
    ):
        await publish(settings, ignored)
    # KEP-3953: node-b grows to 4 cpu; the pending pod is retried at once and lands there.
    growth = await grow(settings, "node-b", small, {**small, "cpu": "4"})
    placed = await until(pod_probe(v1, "big"), bound, "bound after the node grew")
    assert placed.spec.node_name == "node-b"
    assert condition(placed, "PodScheduled").status == "True"
    history = await pod_history(settings.kafka_bootstrap, NS, "big", settings.topic_prefix)
    binding = history[-1].record.envelope
    assert binding.type == "PodBound"
    assert binding.causation_id == growth.id and binding.correlation_id == growth.correlation_id
    assert [h.record.envelope.type for h in history].count("PodUnschedulable") == 1

    async def skipped() -> float:
        return await metric(scheduler, 'inplace_events_skipped_total{role="scheduler"}')

    await until(skipped, lambda n: n == 3, "the three records it does not read skipped")


async def test_unschedulable_pod_is_placed_when_another_pod_is_deleted(
    apiserver: RoleProcess, scheduler: RoleProcess
) -> None:
    v1 = core(apiserver)
    await call(v1.create_node, node_body("node-a", cpu="2"))
    await call(v1.create_namespaced_pod, NS, pod_body("first", cpu="1500m"))
    await until(pod_probe(v1, "first"), bound, "first bound")
    await call(v1.create_namespaced_pod, NS, pod_body("second", cpu="1"))
    pod = await until(pod_probe(v1, "second"), unschedulable, "second waits")
    assert condition(pod, "PodScheduled").message == (
        "0/1 nodes are available: 1 Insufficient cpu."
    )

    await call(v1.delete_namespaced_pod, "first", NS)
    placed = await until(pod_probe(v1, "second"), bound, "second bound after the deletion")
    assert placed.spec.node_name == "node-a"


async def test_too_many_pods_and_no_nodes(apiserver: RoleProcess, scheduler: RoleProcess) -> None:
    v1 = core(apiserver)
    await call(v1.create_namespaced_pod, NS, pod_body("early"))
    pod = await until(pod_probe(v1, "early"), unschedulable, "no nodes at all")
    assert condition(pod, "PodScheduled").message == "no nodes available to schedule pods"

    # A node that appears is a change the pending pod is retried on.
    await call(v1.create_node, node_body("node-a", pods="1"))
    await until(pod_probe(v1, "early"), bound, "bound once a node registered")
    await call(v1.create_namespaced_pod, NS, pod_body("late"))
    late = await until(pod_probe(v1, "late"), unschedulable, "the node is full")
    assert condition(late, "PodScheduled").message == "0/1 nodes are available: 1 Too many pods."


async def test_restart_does_not_repeat_a_failed_scheduling_report(
    apiserver: RoleProcess, scheduler: RoleProcess, settings: Settings
) -> None:
    v1 = core(apiserver)
    await call(v1.create_node, node_body("node-a", cpu="1"))
    await call(v1.create_namespaced_pod, NS, pod_body("big", cpu="2"))
    await until(pod_probe(v1, "big"), unschedulable, "big waits")

    scheduler.kill9()
    scheduler.start()
    await scheduler.ready()
    # The restarted scheduler tries `big` again (same answer) before the pods created after
    # it; once `marker` is bound, `big` has been decided on again.
    await call(v1.create_namespaced_pod, NS, pod_body("marker", cpu="100m"))
    await until(pod_probe(v1, "marker"), bound, "marker bound")
    history = await pod_history(settings.kafka_bootstrap, NS, "big", settings.topic_prefix)
    assert [h.record.envelope.type for h in history] == ["PodCreated", "PodUnschedulable"]
    events = await call(events_about(v1, "big"))
    assert [(e.reason, e.count) for e in events] == [("FailedScheduling", 1)]


# --- crash safety --------------------------------------------------------------------------------

NODES = 5
PODS_PER_NODE = 60  # the cluster fits exactly NODES * PODS_PER_NODE pods


async def scheduled_so_far(scheduler: RoleProcess) -> int:
    """The running scheduler's decisions to bind (scheduler_schedule_attempts_total)."""
    async with httpx.AsyncClient(timeout=2) as http:
        try:
            text = (await http.get(f"{scheduler.url}/metrics")).text
        except httpx.HTTPError:
            return 0
    for line in text.splitlines():
        if line.startswith('scheduler_schedule_attempts_total{result="scheduled"}'):
            return int(float(line.split()[-1]))
    return 0


async def kill_after(
    scheduler: RoleProcess, decisions: int, unbound: Callable[[], int], within: float = 60.0
) -> None:
    """SIGKILL the scheduler once it has decided `decisions` bindings: some are in the log,
    some in flight, the rest not decided yet. `unbound()` counts the pods not bound yet: the
    count the caller derived `decisions` from may trail bindings the last run had in flight,
    so fewer may be left to decide than asked."""
    loop = asyncio.get_running_loop()
    deadline, look = loop.time() + within, loop.time() + 0.5
    while (done := await scheduled_so_far(scheduler)) < decisions:
        assert scheduler.alive(), scheduler.log.read_text()[-2000:]
        if loop.time() > look:  # listing pods is slow: now and then
            look = loop.time() + 0.5
            if await call(unbound) == 0:
                break
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(
                f"{done}/{decisions} decisions: {scheduler.log.read_text()[-2000:]}"
            )
        await asyncio.sleep(0.002)
    scheduler.kill9()


async def test_sigkill_mid_binding_binds_every_pod_exactly_once(
    apiserver: RoleProcess, scheduler: RoleProcess, settings: Settings
) -> None:
    v1 = core(apiserver)
    for i in range(NODES):
        # 6 cpu and 60 pod slots: 60 pods of 100m fill a node on both counts at once.
        await call(v1.create_node, node_body(f"node-{i}", cpu="6", memory="64Gi", pods="60"))
    total = NODES * PODS_PER_NODE
    names = [f"p-{i:03d}" for i in range(total)]

    # A backlog: every pod is created while no scheduler runs.
    scheduler.kill9()
    clients = [core(apiserver) for _ in range(8)]
    for start in range(0, total, len(clients)):
        await asyncio.gather(
            *(
                call(c.create_namespaced_pod, NS, pod_body(name, "100m", "64Mi"))
                for c, name in zip(clients, names[start : start + len(clients)], strict=False)
            )
        )

    def bound_count() -> int:
        return sum(1 for p in v1.list_namespaced_pod(NS).items if p.spec.node_name)

    # Killed twice part-way through what is left of the backlog, then left to finish.
    for _ in range(2):
        left = total - await call(bound_count)
        scheduler.start()
        if left >= 6:
            await kill_after(scheduler, left // 3, lambda: total - bound_count())
        else:
            scheduler.kill9()
    scheduler.start()
    await scheduler.ready()

    def listed() -> list[Any]:
        pods: list[Any] = v1.list_namespaced_pod(NS).items
        return pods

    pods = await until(
        listed, lambda ps: len(ps) == total and all(map(bound, ps)), "all bound", within=120
    )

    bindings = Counter(
        r.envelope.payload.name
        for r in await pod_records(settings)
        if isinstance(r.envelope.payload, ev.PodBound)
    )
    assert set(bindings) == set(names)
    assert [n for n, c in bindings.items() if c != 1] == []

    per_node: dict[str, list[Any]] = {}
    for pod in pods:
        per_node.setdefault(pod.spec.node_name, []).append(pod)
    for node in (await call(v1.list_node)).items:
        placed = per_node.get(node.metadata.name, [])
        allocatable = node.status.allocatable
        assert len(placed) <= int(allocatable["pods"])
        for resource in ("cpu", "memory"):
            requested = sum(
                (Quantity(p.spec.containers[0].resources.requests[resource]) for p in placed),
                Quantity("0"),
            )
            assert requested <= Quantity(allocatable[resource]), (node.metadata.name, resource)


# --- placement fields ------------------------------------------------------------------------------


def labelled_node(
    name: str, taints: list[dict[str, str]] | None = None, **labels: str
) -> dict[str, Any]:
    body = node_body(name)
    body["metadata"]["labels"] = {"kubernetes.io/hostname": name, **labels}
    if taints:
        body["spec"] = {"taints": taints}
    return body


def placed_pod(name: str, **spec: Any) -> dict[str, Any]:
    body = pod_body(name)
    body["spec"].update(spec)
    return body


async def test_node_selector_affinity_and_node_name_pick_the_node(
    apiserver: RoleProcess, scheduler: RoleProcess
) -> None:
    """Least-allocated alone would put every pod on n0 (empty nodes tie, the smallest name
    wins): each placement field must move its pod."""
    v1 = core(apiserver)
    for name, zone in (("n0", "a"), ("n1", "b"), ("n2", "c")):
        await call(v1.create_node, labelled_node(name, **{"topology.kubernetes.io/zone": zone}))
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["c"]}]}
                ]
            }
        }
    }  # fmt: skip
    await call(
        v1.create_namespaced_pod,
        NS,
        placed_pod("by-hostname", nodeSelector={"kubernetes.io/hostname": "n1"}),
    )
    await call(v1.create_namespaced_pod, NS, placed_pod("by-affinity", affinity=affinity))
    await call(v1.create_namespaced_pod, NS, placed_pod("by-name", nodeName="n2"))
    for name, node in (("by-hostname", "n1"), ("by-affinity", "n2"), ("by-name", "n2")):
        pod = await until(pod_probe(v1, name), bound, f"{name} bound")
        assert pod.spec.node_name == node, name


async def test_taints_repel_until_tolerated(apiserver: RoleProcess, scheduler: RoleProcess) -> None:
    v1 = core(apiserver)
    taint = {"key": "dedicated", "value": "db", "effect": "NoSchedule"}
    await call(v1.create_node, labelled_node("db-0", taints=[taint]))
    await call(v1.create_namespaced_pod, NS, placed_pod("web"))
    pod = await until(pod_probe(v1, "web"), unschedulable, "web unschedulable")
    message = condition(pod, "PodScheduled").message
    assert message == "0/1 nodes are available: 1 node(s) had untolerated taint {dedicated: db}."
    events = await until(events_about(v1, "web"), bool, "FailedScheduling event")
    assert events[0].reason == "FailedScheduling" and events[0].message == message
    toleration = {"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoSchedule"}
    await call(v1.create_namespaced_pod, NS, placed_pod("db", tolerations=[toleration]))
    pod = await until(pod_probe(v1, "db"), bound, "db bound")
    assert pod.spec.node_name == "db-0"


async def test_a_selector_no_node_matches_is_explained(
    apiserver: RoleProcess, scheduler: RoleProcess
) -> None:
    v1 = core(apiserver)
    await call(v1.create_node, labelled_node("n0", disk="hdd"))
    await call(v1.create_node, node_body("small", cpu="100m"))
    await call(v1.create_namespaced_pod, NS, placed_pod("p", nodeSelector={"disk": "ssd"}))
    pod = await until(pod_probe(v1, "p"), unschedulable, "p unschedulable")
    assert condition(pod, "PodScheduled").message == (
        "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."
    )


async def test_pending_pods_follow_kubectl_label_cordon_and_taint(
    apiserver: RoleProcess, scheduler: RoleProcess
) -> None:
    """A node changed by kubectl retries the pods waiting for it (kube-scheduler's
    UpdateNodeLabel / UpdateNodeTaint hints): labelled, a selecting pod is placed; cordoned
    and tainted, a new pod waits; untainted, it is placed."""
    v1 = core(apiserver)
    await call(v1.create_node, labelled_node("n0", disk="hdd"))
    await call(v1.create_namespaced_pod, NS, placed_pod("db", nodeSelector={"disk": "ssd"}))
    await until(pod_probe(v1, "db"), unschedulable, "db unschedulable")
    await kubectl(apiserver, "label", "node", "n0", "disk=ssd", "--overwrite")
    pod = await until(pod_probe(v1, "db"), bound, "db bound after the label")
    assert pod.spec.node_name == "n0"
    await kubectl(apiserver, "cordon", "n0")
    await call(v1.create_namespaced_pod, NS, placed_pod("web"))
    pod = await until(pod_probe(v1, "web"), unschedulable, "web unschedulable")
    assert condition(pod, "PodScheduled").message == (
        "0/1 nodes are available: 1 node(s) were unschedulable."
    )
    await kubectl(apiserver, "taint", "node", "n0", "dedicated=db:NoSchedule")
    await kubectl(apiserver, "uncordon", "n0")  # the taint keeps web out
    await call(v1.create_namespaced_pod, NS, placed_pod("tolerant", tolerations=[
        {"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}
    ]))  # fmt: skip
    pod = await until(pod_probe(v1, "tolerant"), bound, "tolerant bound on the tainted node")
    assert pod.spec.node_name == "n0"
    assert not bound(await call(v1.read_namespaced_pod, "web", NS))
    await kubectl(apiserver, "taint", "node", "n0", "dedicated-")
    pod = await until(pod_probe(v1, "web"), bound, "web bound once untainted")
    assert pod.spec.node_name == "n0"


async def test_restarted_from_the_projection_it_counts_every_bound_pod(
    apiserver: RoleProcess, scheduler: RoleProcess, projector: RoleProcess, settings: Settings
) -> None:
    """The cache and the queue seeded from the snapshot's objects (issue 16): a pod that fits
    only if nobody were on the node stays Unschedulable; one that fits is bound."""
    v1 = core(apiserver)
    await call(v1.create_node, node_body("only", cpu="2"))
    for name in ("a", "b"):
        await call(v1.create_namespaced_pod, NS, pod_body(name, "750m"))
        await until(pod_probe(v1, name), bound, f"{name} bound")
    projector.start()
    await wait_caught_up(settings, projector)
    scheduler.kill9()
    await call(v1.create_namespaced_pod, NS, pod_body("too-big", "1"))  # 1.5 of 2 are taken
    await call(v1.create_namespaced_pod, NS, pod_body("fits", "500m"))
    scheduler.start()
    await scheduler.ready()
    async with httpx.AsyncClient(timeout=10) as http:
        metrics = (await http.get(f"{scheduler.url}/metrics")).text
    assert 'inplace_read_model_start_source{role="scheduler",source="snapshot"} 1.0' in metrics
    await until(pod_probe(v1, "fits"), bound, "fits bound")
    too_big = await until(pod_probe(v1, "too-big"), unschedulable, "too-big unschedulable")
    assert "Insufficient cpu" in condition(too_big, "PodScheduled").message
