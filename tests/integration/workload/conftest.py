"""A whole cluster of real processes for the workload controller: apiserver, scheduler, one
kubelet hosting two simulated nodes, and the CloneSet controller (SIGKILL-able)."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
from kubernetes import client

from inplace.core.settings import Settings
from tests.integration.conftest import RoleProcess

GROUP, VERSION, PLURAL = "apps.inplace.dev", "v1alpha1", "clonesets"
NS = "default"
T = TypeVar("T")


@dataclass
class Cluster:
    settings: Settings
    apiserver: RoleProcess
    controller: RoleProcess
    core: client.CoreV1Api
    custom: client.CustomObjectsApi

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await asyncio.to_thread(fn, *args, **kwargs)

    async def create(self, body: dict[str, Any]) -> dict[str, Any]:
        return await self.call(
            self.custom.create_namespaced_custom_object, GROUP, VERSION, NS, PLURAL, body
        )

    async def get(self, name: str) -> dict[str, Any]:
        return await self.call(
            self.custom.get_namespaced_custom_object, GROUP, VERSION, NS, PLURAL, name
        )

    async def patch(self, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        return await self.call(
            self.custom.patch_namespaced_custom_object, GROUP, VERSION, NS, PLURAL, name, patch
        )

    async def pods(self, name: str) -> list[Any]:
        listed = await self.call(self.core.list_namespaced_pod, NS, label_selector=f"app={name}")
        return sorted(listed.items, key=lambda p: p.metadata.name)


async def eventually(check: Callable[[], Awaitable[T | None]], within: float = 120) -> T:
    """Poll `check` until it returns something truthy (bounded; no timing assertions)."""
    deadline = asyncio.get_running_loop().time() + within
    last: T | None = None
    while asyncio.get_running_loop().time() < deadline:
        last = await check()
        if last:
            return last
        await asyncio.sleep(0.2)
    raise AssertionError(f"condition not reached within {within}s (last: {last!r})")


def clone_set(
    name: str,
    replicas: int,
    cpu: str = "100m",
    *,
    image: str = "nginx:1.27",
    **strategy: Any,
) -> dict[str, Any]:
    resources = {"cpu": cpu, "memory": "64Mi"}
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "CloneSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": image,
                            "resources": {
                                "requests": copy.deepcopy(resources),
                                "limits": copy.deepcopy(resources),
                            },
                        }
                    ]
                },
            },
            "updateStrategy": strategy,
        },
    }


def cpu_patch(cpu: str) -> dict[str, Any]:
    resources = {"cpu": cpu, "memory": "64Mi"}
    return {
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": "nginx:1.27",
                            "resources": {"requests": resources, "limits": dict(resources)},
                        }
                    ]
                }
            }
        }
    }


def cpu_of(pod: Any) -> str:
    """The pod's desired cpu request (spec)."""
    return str(pod.spec.containers[0].resources.requests["cpu"])


def running(pods: list[Any], n: int) -> bool:
    return len(pods) == n and all(p.status.phase == "Running" for p in pods)


@pytest.fixture
def kubelet_env() -> dict[str, str]:
    """Extra INPLACE_* settings of the kubelet (a test module may override this fixture)."""
    return {}


@pytest.fixture
def controller_env() -> dict[str, str]:
    """Extra INPLACE_* settings of the controller (a test module may override this fixture)."""
    return {}


@pytest.fixture
def controller_apiserver_url(apiserver: RoleProcess) -> str:
    """Where the controller reaches the apiserver (a test module may put a proxy between)."""
    return apiserver.url


@pytest.fixture
async def cluster(
    settings: Settings,
    apiserver: RoleProcess,
    tmp_path: Path,
    kubelet_env: dict[str, str],
    controller_env: dict[str, str],
    controller_apiserver_url: str,
) -> AsyncIterator[Cluster]:
    kubelet = RoleProcess(
        "kubelet",
        settings,
        tmp_path / "kubelet.log",
        INPLACE_KUBELET_NODES="2",
        INPLACE_KUBELET_NODE_CPU="4",
        INPLACE_KUBELET_NODE_MEMORY="8Gi",
        **kubelet_env,
    )
    scheduler = RoleProcess("scheduler", settings, tmp_path / "scheduler.log")
    controller = RoleProcess(
        "workload",
        settings,
        tmp_path / "workload.log",
        INPLACE_WORKLOAD_APISERVER_URL=controller_apiserver_url,
        **controller_env,
    )
    procs = [kubelet, scheduler, controller]
    for proc in procs:
        proc.start()
    try:
        for proc in procs:
            await proc.ready()
        api = client.ApiClient(client.Configuration(host=apiserver.url))
        yield Cluster(
            settings, apiserver, controller, client.CoreV1Api(api), client.CustomObjectsApi(api)
        )
    finally:
        for proc in reversed(procs):
            proc.stop()
