"""An accepted resize that cannot be done yet says why on its PodResizeInProgress condition:
reason Error with the runtime's message when actuation fails, and the held-back memory limit
decrease when usage is above the new limit; both complete once the cause is gone."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubernetes import client

from inplace.core.settings import Settings
from tests.integration.conftest import RoleProcess, call, until
from tests.integration.kubelet.conftest import node0_pod, running_kubelet

MI = 1024 * 1024


def _in_progress(pod: Any) -> Any:
    return next((c for c in pod.status.conditions or [] if c.type == "PodResizeInProgress"), None)


def _memory(limit: str) -> dict[str, Any]:
    rl = {"cpu": "500m", "memory": limit}
    return {"spec": {"containers": [{"name": "c", "resources": {"requests": rl, "limits": rl}}]}}


async def test_runtime_errors_and_held_back_decreases_show_on_the_condition(
    apiserver: RoleProcess, settings: Settings
) -> None:
    v1 = client.CoreV1Api(client.ApiClient(client.Configuration(host=apiserver.url)))

    def pod(name: str) -> Callable[[], Any]:
        return lambda: v1.read_namespaced_pod(name, "default")

    async with running_kubelet(settings) as (kubelet, runtime):
        body = node0_pod("web", "500m")
        body["spec"]["containers"][0]["resources"] = _memory("256Mi")["spec"]["containers"][0][
            "resources"
        ]
        await call(v1.create_namespaced_pod, "default", body)
        await until(pod("web"), lambda p: p.status.phase == "Running", "running")

        runtime.fail_next("update_container_resources", times=3)
        await call(v1.patch_namespaced_pod_resize, "web", "default", _memory("300Mi"))
        failing = await until(
            pod("web"), lambda p: getattr(_in_progress(p), "reason", None) == "Error", "Error"
        )
        assert "injected failure" in _in_progress(failing).message
        done = await until(pod("web"), lambda p: p.status.resize is None, "recovered")
        assert _in_progress(done) is None

        container = kubelet.agents["node-0"].pods["default/web"].containers["c"]
        runtime.set_memory_usage(container, 200 * MI)
        await call(v1.patch_namespaced_pod_resize, "web", "default", _memory("128Mi"))
        held = await until(
            pod("web"),
            lambda p: "held back" in (getattr(_in_progress(p), "message", None) or ""),
            "held back",
        )
        assert "is not above its current memory usage 209715200" in _in_progress(held).message
        runtime.set_memory_usage(container, 50 * MI)
        await until(pod("web"), lambda p: p.status.resize is None, "applied once usage fell")
