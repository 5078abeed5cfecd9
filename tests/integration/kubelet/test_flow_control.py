"""KEP-1287 "Flow Control": the T=0..T=12 table as a golden trace, against the running system
(apiserver process + kubelet on the real broker). The kubelet runs in this process so the
test can hold the fake runtime mid-actuation, which is how T=5 lands before T=6, and how
T=4 and T=9 are states of their own: a runtime that applies a resize within
heldallocation.HOLD_FOR_ACTUATION_S has it allocated, applied and completed in one status update
(test_nodeagent_writes.py), T=9 and T=10 in one."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from kubernetes import client

from inplace.core.projection.replay import pod_history
from inplace.core.projection.state import ClusterState
from inplace.core.settings import Settings
from schemas.k8s import Pod
from services.kubelet.kubelet import Kubelet
from services.kubelet.runtime_fake import FakeRuntime
from tests.integration.conftest import RoleProcess
from tests.integration.kubelet.conftest import running_kubelet

NODE = "node-0"


@pytest.fixture
async def kubelet(settings: Settings) -> AsyncIterator[tuple[Kubelet, FakeRuntime]]:
    async with running_kubelet(settings) as running:
        yield running


def _pod(name: str, cpu: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "nodeName": NODE,
            "containers": [
                {
                    "name": "c",
                    "image": "app",
                    "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}},
                    "resizePolicy": [{"resourceName": "cpu", "restartPolicy": "NotRequired"}],
                }
            ],
        },
    }


def _resize(cpu: str) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}


async def _until(v1: client.CoreV1Api, name: str, ok: Callable[[Any], bool]) -> Any:
    for _ in range(400):
        pod = await asyncio.to_thread(v1.read_namespaced_pod, name, "default")
        if ok(pod):
            return pod
        await asyncio.sleep(0.05)
    raise AssertionError(f"{name} never reached the expected state: {pod.status}")


def _state(pod: Pod) -> tuple[str | None, ...]:
    """(spec cpu request, allocatedResources cpu, status.resize, status.resources cpu)."""
    spec = pod.spec.containers[0].resources.requests or {}
    status = (pod.status.container_statuses or [None])[0]
    allocated = status.allocated_resources if status else None
    actual = status.resources.requests if status and status.resources else None
    return (
        str(spec["cpu"]),
        str(allocated["cpu"]) if allocated else None,
        pod.status.resize,
        str(actual["cpu"]) if actual else None,
    )


# The KEP's table, state by state (T=6 is a refused patch, not a state).
GOLDEN = [
    ("T=1", ("1", None, None, None)),
    ("T=2", ("1", "1", None, "1")),
    ("T=3", ("1500m", "1", "Proposed", "1")),
    ("T=4", ("1500m", "1500m", "InProgress", "1")),
    ("T=5", ("2", "1500m", "Proposed", "1")),
    ("T=7", ("2", "1500m", "Deferred", "1500m")),
    ("T=8", ("1600m", "1500m", "Proposed", "1500m")),
    ("T=9", ("1600m", "1600m", "InProgress", "1500m")),
    ("T=10", ("1600m", "1600m", None, "1600m")),
    ("T=11", ("100", "1600m", "Proposed", "1600m")),
    ("T=12", ("100", "1600m", "Infeasible", "1600m")),
]


async def test_kep_1287_flow_control_t0_to_t12(
    apiserver: RoleProcess, settings: Settings, kubelet: tuple[Kubelet, FakeRuntime]
) -> None:
    _, runtime = kubelet
    v1 = client.CoreV1Api(client.ApiClient(client.Configuration(host=apiserver.url)))
    call = asyncio.to_thread
    # Another pod holds 2.2 of the node's 4 CPUs: 1.5 and 1.6 fit, 2 fits only in theory.
    await call(v1.create_namespaced_pod, "default", _pod("other", "2200m"))
    await _until(v1, "other", lambda p: p.status.phase == "Running")

    await call(v1.create_namespaced_pod, "default", _pod("flow", "1"))  # T=0, T=1
    await _until(
        v1,
        "flow",
        lambda p: (
            p.status.phase == "Running" and p.status.container_statuses[0].resources is not None
        ),
    )  # T=2
    runtime.hang("set_pod_cgroup_resources")
    runtime.hang("update_container_resources")
    await call(v1.patch_namespaced_pod_resize, "flow", "default", _resize("1.5"))  # T=3
    await _until(v1, "flow", lambda p: p.status.resize == "InProgress")  # T=4
    await call(v1.patch_namespaced_pod_resize, "flow", "default", _resize("2"))  # T=5
    runtime.release()  # T=6
    await _until(v1, "flow", lambda p: p.status.resize == "Deferred")  # T=7
    runtime.hang("set_pod_cgroup_resources")
    runtime.hang("update_container_resources")
    await call(v1.patch_namespaced_pod_resize, "flow", "default", _resize("1.6"))  # T=8
    await _until(v1, "flow", lambda p: p.status.resize == "InProgress")  # T=9
    runtime.release()
    await _until(v1, "flow", lambda p: p.status.resize is None)  # T=10
    await call(v1.patch_namespaced_pod_resize, "flow", "default", _resize("100"))  # T=11
    await _until(v1, "flow", lambda p: p.status.resize == "Infeasible")  # T=12

    # Fold the pod's events from the log one by one: the states it went through.
    state = ClusterState()
    seen: list[tuple[str | None, ...]] = []
    for entry in await pod_history(
        settings.kafka_bootstrap, "default", "flow", settings.topic_prefix
    ):
        state.apply(entry.record)
        now = _state(state.pods[("default", "flow")])
        if not seen or seen[-1] != now:
            seen.append(now)
    remaining = iter(seen)
    for step, expected in GOLDEN:
        assert any(s == expected for s in remaining), f"{step} {expected} missing in {seen}"
    # …and no other resize status on the way: exactly the table's transitions.
    statuses = [s[2] for s in seen]
    transitions = [s for i, s in enumerate(statuses) if i == 0 or statuses[i - 1] != s]
    assert transitions == [
        None,
        "Proposed",
        "InProgress",
        "Proposed",
        "Deferred",
        "Proposed",
        "InProgress",
        None,
        "Proposed",
        "Infeasible",
    ]
