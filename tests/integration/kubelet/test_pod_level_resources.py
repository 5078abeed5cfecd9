"""Pod-level resources (KEP-2837, beta in 1.34) and their in-place resize (1.35 alpha): the
scheduler counts the pod-level request, the kubelet admits and resizes the pod as a whole,
writes the pod cgroup (the sandbox's resources) and reports status.allocatedResources /
status.resources; a pod-level resize that does not fit now is Deferred."""

from __future__ import annotations

from functools import partial
from typing import Any

import httpx

from inplace.core.settings import Settings
from tests.integration.conftest import RoleProcess, until
from tests.integration.kubelet.conftest import running_kubelet

SMP = {"content-type": "application/strategic-merge-patch+json"}
MI = 1024 * 1024


def pod_level(cpu: str) -> dict[str, Any]:
    amounts = {"cpu": cpu, "memory": "256Mi"}
    return {"requests": amounts, "limits": dict(amounts)}


def shared_pod() -> dict[str, Any]:
    """Two containers sharing the pod's budget: no container-level resources at all."""
    containers = [{"name": n, "image": "app"} for n in ("a", "b")]
    return {
        "metadata": {"name": "shared"},
        "spec": {"containers": containers, "resources": pod_level("2")},
    }


def big_pod(cpu: str) -> dict[str, Any]:
    rl = {"cpu": cpu, "memory": "64Mi"}
    container = {"name": "c", "image": "app", "resources": {"requests": rl, "limits": rl}}
    return {"metadata": {"name": "big"}, "spec": {"containers": [container]}}


def condition(pod: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in pod["status"].get("conditions") or [] if c["type"] == kind), None)


async def test_pod_level_resources_are_scheduled_admitted_and_resized_whole(
    settings: Settings, apiserver: RoleProcess, scheduler: RoleProcess
) -> None:
    base = f"{apiserver.url}/api/v1/namespaces/default/pods"
    async with (
        running_kubelet(settings) as (kubelet, runtime),
        httpx.AsyncClient(timeout=10) as http,
    ):

        async def get(name: str) -> dict[str, Any]:
            return (await http.get(f"{base}/{name}")).json()

        created = await http.post(base, json=shared_pod())
        assert created.status_code == 201, created.text
        assert created.json()["status"]["qosClass"] == "Guaranteed"
        shared = await until(
            partial(get, "shared"),
            lambda p: p["status"].get("phase") == "Running" and "resources" in p["status"],
            "shared Running with pod-level status",
        )
        assert shared["status"]["allocatedResources"] == {"cpu": "2", "memory": "256Mi"}
        assert shared["status"]["resources"]["limits"] == {"cpu": "2", "memory": "256Mi"}
        agent = kubelet.agents["node-0"]
        sandbox_id = agent.pods["default/shared"].sandbox_id
        cgroup = (await runtime.pod_sandbox_status(sandbox_id)).resources
        assert cgroup is not None
        assert (cgroup.cpu_quota, cgroup.memory_limit_in_bytes) == (200_000, 256 * MI)

        # The scheduler counts the pod-level 2 CPUs (the containers request nothing): 3 more
        # do not fit on the 4-CPU node.
        assert (await http.post(base, json=big_pod("3"))).status_code == 201
        await until(
            partial(get, "big"),
            lambda p: (condition(p, "PodScheduled") or {}).get("reason") == "Unschedulable",
            "big Unschedulable",
        )

        # Shrink the pod-level budget in place: the pod cgroup follows, the status reports it,
        # and the room it frees lets the scheduler place `big`.
        patch = {"spec": {"resources": pod_level("1")}}
        resized = await http.patch(f"{base}/shared/resize", json=patch, headers=SMP)
        assert resized.status_code == 200, resized.text
        assert resized.json()["metadata"]["generation"] == 2
        done = await until(
            partial(get, "shared"),
            lambda p: (
                p["status"].get("observedGeneration") == 2
                and p["status"]["resources"]["limits"]["cpu"] == "1"
                and condition(p, "PodResizeInProgress") is None
                and condition(p, "PodResizePending") is None
            ),
            "pod-level resize done",
        )
        assert done["status"]["allocatedResources"]["cpu"] == "1"
        cgroup = (await runtime.pod_sandbox_status(sandbox_id)).resources
        assert cgroup is not None and cgroup.cpu_quota == 100_000
        await until(
            partial(get, "big"), lambda p: p["status"].get("phase") == "Running", "big Running"
        )

        # Growing it back does not fit now (1 + 3 of 4 CPUs are taken): Deferred.
        back = await http.patch(
            f"{base}/shared/resize", json={"spec": {"resources": pod_level("2")}}, headers=SMP
        )
        assert back.status_code == 200, back.text
        deferred = await until(
            partial(get, "shared"),
            lambda p: (condition(p, "PodResizePending") or {}).get("reason") == "Deferred",
            "pod-level resize Deferred",
        )
        assert (
            "Node didn't have enough resource: cpu"
            in condition(deferred, "PodResizePending")["message"]
        )  # type: ignore[index]
