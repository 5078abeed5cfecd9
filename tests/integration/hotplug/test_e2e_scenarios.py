"""KEP-3953 end to end: apiserver, scheduler and hotplug as processes, the kubelet in-process on
a FakeRuntime. Nodes are resized through the hotplug API (or `inplace node resize`) and read
back with the official Kubernetes client and from the CRI calls the runtime recorded.

- the KEP's swap flow (6G memory / 4G swap → 8G): 1.33G, then 1G through UpdateContainerResources;
- the KEP's e2e scenarios upsize→downsize, upsize→downsize→upsize (the KEP's memory flow
  10G → 15G → 5G → 15G) and downsize→upsize: capacity, allocatable and initialCapacity after
  each step, evictions by QoS then usage over request (evicted pods end Failed/Evicted on the
  node, as Kubernetes evicts), ResourceStarvation, and Pending pods scheduled by the upsize
  itself (their PodBound is caused by the NodeCapacityChanged).
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client
from prometheus_client import REGISTRY

from inplace.core.settings import Settings
from schemas import events as ev
from schemas.envelope import Envelope
from services.kubelet.kubelet import SIMULATED, Kubelet
from services.kubelet.runtime_fake import Call, FakeRuntime
from tests.integration.conftest import RoleProcess, call, inplace, read_log, until
from tests.integration.hotplug.conftest import post_when_known
from tests.integration.kubelet.conftest import running_kubelet

pytestmark = pytest.mark.integration

NS = "default"
NODE = "hotplug-0"
G = 10**9


@dataclass
class Cluster:
    settings: Settings
    v1: client.CoreV1Api
    hotplug: RoleProcess
    kubelet: Kubelet
    runtime: FakeRuntime

    # -- nodes ----------------------------------------------------------------------------------

    async def create_node(self, capacity: dict[str, str], swap: int | None = None) -> None:
        """A simulated node (allocatable = capacity, swap in nodeInfo as Kubernetes reports
        it) that the in-process kubelet adopts."""
        status: dict[str, Any] = {"capacity": capacity, "allocatable": dict(capacity)}
        if swap is not None:
            # The client wants every NodeSystemInfo string (Go serializes them all).
            info = dict.fromkeys(NODE_INFO_STRINGS, "")
            status["nodeInfo"] = {**info, "swap": {"capacity": swap}}
        body = {"metadata": {"name": NODE, "annotations": {SIMULATED: "true"}}, "status": status}
        await call(self.v1.create_node, body)
        await until(lambda: NODE in self.kubelet.agents, bool, "kubelet adopts the node")

    async def resize(self, **resources: str) -> Envelope:
        """POST …/resize; returns the NodeCapacityChanged the hotplug role published."""
        before = len(await self.capacity_changes())
        response = await post_when_known(self.hotplug.url, NODE, resources)
        assert response.status_code == 200, response.text
        assert response.json()["changed"] is True
        changes = await until(self.capacity_changes, lambda c: len(c) > before, "the change")
        return changes[-1]  # type: ignore[no-any-return]

    async def capacity_changes(self) -> list[Envelope]:
        return [
            e
            for e in await read_log(self.settings, ev.NODES)
            if isinstance(e.payload, ev.NodeCapacityChanged)
        ]

    def node_status(self) -> dict[str, Any]:
        """The Node's status as served (raw: the client's model has no initialCapacity yet)."""
        raw = self.v1.read_node(NODE, _preload_content=False)
        return json.loads(raw.data)["status"]  # type: ignore[no-any-return]

    async def starvation_log(self, since: int) -> list[str]:
        """ResourceStarvation statuses the kubelet published, after the first `since` records."""
        return [
            e.payload.condition.status
            for e in (await read_log(self.settings, ev.NODES))[since:]
            if isinstance(e.payload, ev.NodeConditionChanged)
            and e.payload.condition.type == "ResourceStarvation"
        ]

    # -- pods -----------------------------------------------------------------------------------

    async def create_pod(self, name: str, requests: dict[str, str], limits: dict[str, str]) -> None:
        resources: dict[str, Any] = {}
        if requests:
            resources["requests"] = {"cpu": "100m", **requests}
        if limits:
            resources["limits"] = {"cpu": "100m", **limits}
        body = {
            "metadata": {"name": name},
            "spec": {"containers": [{"name": "app", "image": "app", "resources": resources}]},
        }
        await call(self.v1.create_namespaced_pod, NS, body)

    def container_id(self, pod: str) -> str:
        return self.kubelet.agents[NODE].pods[f"{NS}/{pod}"].containers["app"]

    def pods(self) -> dict[str, Any]:
        return {p.metadata.name: p for p in self.v1.list_namespaced_pod(NS).items}

    async def settled(
        self, running: frozenset[str], pending: frozenset[str], failed: frozenset[str] = frozenset()
    ) -> dict[str, Any]:
        """Wait until `running` run on the node, `pending` wait as Unschedulable and `failed`
        were evicted (Failed/Evicted, still on the node)."""

        def state(pod: Any) -> bool:
            name = pod.metadata.name
            if name in running:
                return _running(pod)
            return _evicted(pod) if name in failed else _unschedulable(pod)

        def ok(pods: dict[str, Any]) -> bool:
            return set(pods) == running | pending | failed and all(map(state, pods.values()))

        wanted = f"running {sorted(running)}, pending {sorted(pending)}, failed {sorted(failed)}"
        return await until(self.pods, ok, wanted)  # type: ignore[no-any-return]

    def evicted_since(self, mark: int) -> list[str]:
        """Pods whose sandbox the kubelet stopped after journal position `mark`, in order."""
        names = {f"sb-{p.metadata.uid}": n for n, p in self.pods().items()}
        stopped = self.runtime.calls[mark:]
        return [names[c.target] for c in stopped if c.method == "stop_pod_sandbox"]

    async def last_bound(self, pod: str) -> Envelope:
        records = await read_log(self.settings, ev.PODS)
        return [e for e in records if isinstance(e.payload, ev.PodBound) and e.payload.name == pod][
            -1
        ]


NODE_INFO_STRINGS = (
    "architecture",
    "bootID",
    "containerRuntimeVersion",
    "kernelVersion",
    "kubeProxyVersion",
    "kubeletVersion",
    "machineID",
    "operatingSystem",
    "osImage",
    "systemUUID",
)


def _running(pod: Any) -> bool:
    return pod.status.phase == "Running" and pod.spec.node_name == NODE


def _evicted(pod: Any) -> bool:
    return (pod.status.phase, pod.status.reason, pod.spec.node_name) == ("Failed", "Evicted", NODE)


def _unschedulable(pod: Any) -> bool:
    scheduled = next((c for c in pod.status.conditions or [] if c.type == "PodScheduled"), None)
    return (
        pod.status.phase == "Pending"
        and pod.spec.node_name is None
        and scheduled is not None
        and (scheduled.status, scheduled.reason) == ("False", "Unschedulable")
    )


def _metric(name: str) -> float:
    return REGISTRY.get_sample_value(name, {"node": NODE}) or 0.0


@pytest.fixture
async def cluster(
    settings: Settings, apiserver: RoleProcess, scheduler: RoleProcess, hotplug: RoleProcess
) -> AsyncIterator[Cluster]:
    v1 = client.CoreV1Api(client.ApiClient(client.Configuration(host=apiserver.url)))
    # No nodes of its own: the kubelet adopts the simulated node each test creates.
    async with running_kubelet(settings, kubelet_nodes=0) as (kubelet, runtime):
        yield Cluster(settings, v1, hotplug, kubelet, runtime)


# --- the swap flow ------------------------------------------------------------------------------


def _swap(call_: Call) -> object:
    return call_.values["memory_swap_max"]


async def test_kep_swap_flow_6g_to_8g_resyncs_the_swap_limit(
    cluster: Cluster, settings: Settings
) -> None:
    # "Flow Control for updating swap limit for containers": 6G memory, 4G swap, a 2G request.
    await cluster.create_node({"cpu": "4", "memory": "6G", "pods": "110"}, swap=4 * G)
    await cluster.create_pod("container1", {"memory": "2G"}, {"memory": "3G"})  # Burstable
    await cluster.settled(frozenset({"container1"}), frozenset())
    cid = cluster.container_id("container1")
    oom = 1000 - 1000 * 2 // 6  # against initialCapacity: the resize must not move it

    # T=0: memory.swap.max = 2/6 * 4G = 1.33G (integer bytes, rounded down), set at creation.
    [created] = cluster.runtime.journal("create_container")
    assert _swap(created) == str(1_333_333_333) and created.values["oom_score_adj"] == oom

    # T=1: hotplug to 8G (through the CLI): 2/8 * 4G = 1G, through UpdateContainerResources.
    mark = len(cluster.runtime.calls)
    done = await call(
        inplace, settings, "node", "resize", NODE, "--memory", "8G", "--server", cluster.hotplug.url
    )
    assert done.returncode == 0, done.stderr

    def resynced() -> list[Call]:
        return [
            c
            for c in cluster.runtime.calls[mark:]
            if c.method == "update_container_resources" and c.target == cid
        ]

    [update] = await until(resynced, bool, "UpdateContainerResources after the hotplug")
    assert _swap(update) == str(1 * G) and update.values["oom_score_adj"] == oom
    linux = (await cluster.runtime.container_status(cid)).resources.linux  # type: ignore[union-attr]
    assert linux is not None
    assert linux.unified["memory.swap.max"] == str(1 * G)
    assert linux.memory_swap_limit_in_bytes == 3 * G + 1 * G  # memsw = limit + swap

    status = await call(cluster.node_status)
    # Swap as Kubernetes 1.32+ reports it: nodeInfo.swap.capacity (bytes), not a capacity entry.
    assert status["capacity"]["memory"] == "8G" and "swap" not in status["capacity"]
    assert status["nodeInfo"]["swap"] == {"capacity": 4 * G}
    assert status["allocatable"]["memory"] == "8G"
    assert status["initialCapacity"]["memory"] == "6G"

    # A pod resize afterwards re-applies the node's swap settings instead of dropping them.
    cpu = {"cpu": "200m"}
    await call(
        cluster.v1.patch_namespaced_pod_resize,
        "container1",
        NS,
        {"spec": {"containers": [{"name": "app", "resources": {"requests": cpu, "limits": cpu}}]}},
    )
    await until(
        lambda: cluster.v1.read_namespaced_pod("container1", NS),
        lambda p: (
            p.status.resize is None
            and p.status.container_statuses[0].allocated_resources["cpu"] == "200m"
        ),
        "the pod resize completes",
    )
    linux = (await cluster.runtime.container_status(cid)).resources.linux  # type: ignore[union-attr]
    assert linux is not None and linux.cpu_shares == 204
    assert (linux.unified["memory.swap.max"], linux.oom_score_adj) == (str(1 * G), oom)


# --- the KEP's e2e scenarios ----------------------------------------------------------------------

# name: (requests, limits, memory usage the runtime reports). At 10G the first five fit (9G
# requested); "waiting" (3G more) stays Pending until the node grows.
WORKLOAD: dict[str, tuple[dict[str, str], dict[str, str], int]] = {
    "best-effort": ({}, {}, 500 * 10**6),
    # Burstable: ranked by usage over request, so "burstable-hi" (2G over) goes first although
    # it requests less than "burstable-lo" (0.5G over).
    "burstable-hi": ({"memory": "1G"}, {"memory": "4G"}, 3 * G),
    "burstable-lo": ({"memory": "1500M"}, {"memory": "4G"}, 2 * G),
    "guaranteed-small": ({"memory": "2G"}, {"memory": "2G"}, 0),
    "guaranteed-big": ({"memory": "4500M"}, {"memory": "4500M"}, 0),
}
WAITING = "waiting"
EVERYONE = frozenset([*WORKLOAD, WAITING])
# After an unplug to 5G only guaranteed-big (4.5G) is left; evicted pods stay Failed (bare pods:
# no owner replaces them), a pod that never ran keeps waiting for room.
UNPLUGGED = frozenset({"guaranteed-big"})


@dataclass(frozen=True)
class Step:
    memory: str
    evicted: tuple[str, ...]  # in eviction order
    running: frozenset[str]  # the rest of EVERYONE is Failed (evicted) or Pending


UP = Step("15G", (), EVERYONE)
SCENARIOS = {
    "upsize-downsize": [
        UP,
        Step(
            "5G",
            ("best-effort", "burstable-hi", "burstable-lo", "guaranteed-small", WAITING),
            UNPLUGGED,
        ),
    ],
    # The KEP's "Flow Control": 10G → 15G → 5G → 15G.
    "upsize-downsize-upsize": [
        UP,
        Step(
            "5G",
            ("best-effort", "burstable-hi", "burstable-lo", "guaranteed-small", WAITING),
            UNPLUGGED,
        ),
        Step("15G", (), UNPLUGGED),  # the evicted stay Failed: nothing comes back
    ],
    "downsize-upsize": [
        Step("5G", ("best-effort", "burstable-hi", "burstable-lo", "guaranteed-small"), UNPLUGGED),
        Step("15G", (), UNPLUGGED | {WAITING}),  # the pod that waited is placed by the upsize
    ],
}


async def _start_workload(cluster: Cluster) -> None:
    await cluster.create_node({"cpu": "8", "memory": "10G", "pods": "110"})
    for name, (requests, limits, _) in WORKLOAD.items():
        await cluster.create_pod(name, requests, limits)
    await cluster.settled(frozenset(WORKLOAD), frozenset())
    for name, (_, _, usage) in WORKLOAD.items():
        cluster.runtime.set_memory_usage(cluster.container_id(name), usage)
    await cluster.create_pod(WAITING, {"memory": "3G"}, {"memory": "3G"})
    await cluster.settled(frozenset(WORKLOAD), frozenset({WAITING}))


@pytest.mark.parametrize("steps", SCENARIOS.values(), ids=SCENARIOS.keys())
async def test_kep_e2e_scenario(cluster: Cluster, steps: list[Step]) -> None:
    await _start_workload(cluster)
    requests_before = _metric("node_resize_resync_request_total")
    errors_before = _metric("node_resize_resync_errors_total")
    pending = EVERYONE - frozenset(WORKLOAD)
    failed: frozenset[str] = frozenset()
    for number, step in enumerate(steps, 1):
        mark = len(cluster.runtime.calls)
        node_records = len(await read_log(cluster.settings, ev.NODES))
        change = await cluster.resize(memory=step.memory)
        failed |= frozenset(step.evicted)
        await cluster.settled(step.running, EVERYONE - step.running - failed, failed)
        resyncs = requests_before + number
        await until(
            lambda: _metric("node_resize_resync_request_total"),
            lambda v, want=resyncs: v == want,  # type: ignore[misc]
            "one resync per resize",
        )

        status = await call(cluster.node_status)
        assert status["capacity"]["memory"] == step.memory
        assert status["allocatable"]["memory"] == step.memory
        assert status["initialCapacity"] == {"cpu": "8", "memory": "10G", "pods": "110"}
        assert cluster.evicted_since(mark) == list(step.evicted)

        if step.evicted:
            # Starved while the pods did not fit, then not once the evictions made them fit.
            await until(
                functools.partial(cluster.starvation_log, node_records),
                lambda statuses: statuses == ["True", "False"],
                "ResourceStarvation True, then False",
            )
            status = await call(cluster.node_status)
            conditions = {c["type"]: c["status"] for c in status["conditions"]}
            assert conditions["ResourceStarvation"] == "False"
        else:
            assert await cluster.starvation_log(node_records) == []

        # Pods that waited for room are placed by the upsize itself: the scheduler reacts to
        # the NodeCapacityChanged (their PodBound's cause), it does not poll.
        for name in pending & step.running:
            bound = await cluster.last_bound(name)
            assert bound.causation_id == change.id, name
        pending = EVERYONE - step.running - failed

    assert _metric("node_resize_resync_errors_total") == errors_before
    resized = await until(
        lambda: [
            e
            for e in cluster.v1.list_namespaced_event(
                NS, field_selector=f"involvedObject.name={NODE}"
            ).items
            if e.reason == "NodeResized"
        ],
        lambda events: len(events) == len(steps),
        "a NodeResized Event on the Node per resize",
    )
    assert all(e.involved_object.kind == "Node" and e.type == "Normal" for e in resized)
