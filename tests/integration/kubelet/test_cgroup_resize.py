"""The whole path on real Linux cgroups: a resize through the apiserver changes the limits in
cgroupfs of a running process — same PID, no restart — and status.resources reports what the
kernel holds."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from kubernetes import client

from inplace.core.settings import Settings
from services.kubelet.runtime_cgroup import CgroupRuntime, cgroup_support, process_cgroups
from tests.integration.conftest import RoleProcess
from tests.integration.kubelet.conftest import running_kubelet


def _read(dirs: list[Path], name: str) -> int:
    for d in dirs:
        if (d / name).exists():
            return int((d / name).read_text().split()[0])
    raise AssertionError(f"{name} not in {dirs}")


async def test_resize_changes_cgroupfs_of_the_running_process(
    apiserver: RoleProcess, settings: Settings
) -> None:
    # This machine has writable cgroups (MACHINE.md); where it does not, say why loudly.
    assert cgroup_support() is None, cgroup_support()
    v1 = client.CoreV1Api(client.ApiClient(client.Configuration(host=apiserver.url)))
    rl = {"cpu": "500m", "memory": "128Mi"}
    pod: dict[str, Any] = {
        "metadata": {"name": "real"},
        "spec": {
            "nodeName": "node-0",
            "containers": [
                {"name": "c", "image": "sleep", "resources": {"requests": rl, "limits": rl}}
            ],
        },
    }
    async with (
        CgroupRuntime(settings.topic_prefix.strip(".")) as runtime,
        running_kubelet(settings, runtime=runtime) as (kubelet, _),
    ):
        await asyncio.to_thread(v1.create_namespaced_pod, "default", pod)
        for _ in range(400):
            if "default/real" in kubelet.agents["node-0"].pods:
                break
            await asyncio.sleep(0.05)
        cid = kubelet.agents["node-0"].pods["default/real"].containers["c"]
        before = await runtime.container_status(cid)
        dirs = runtime.cgroup_dirs(cid)
        assert runtime.cgroup_path(cid) in process_cgroups(before.pid or 0)
        assert _read(dirs, "cpu.cfs_quota_us") == 50_000
        assert _read(dirs, "memory.limit_in_bytes") == 128 * 2**20

        grow = {"cpu": "1500m", "memory": "256Mi"}
        await asyncio.to_thread(
            v1.patch_namespaced_pod_resize,
            "real",
            "default",
            {
                "spec": {
                    "containers": [{"name": "c", "resources": {"requests": grow, "limits": grow}}]
                }
            },
        )
        for _ in range(400):
            p = await asyncio.to_thread(v1.read_namespaced_pod, "real", "default")
            if (
                p.status.resize is None
                and p.status.container_statuses[0].resources.limits["cpu"] == "1500m"
            ):
                break
            await asyncio.sleep(0.05)
        after = await runtime.container_status(cid)
        assert after.pid == before.pid and after.restart_count == before.restart_count == 0
        assert _read(dirs, "cpu.cfs_quota_us") == 150_000
        assert _read(dirs, "cpu.shares") == 1536
        assert _read(dirs, "memory.limit_in_bytes") == 256 * 2**20
        assert p.status.container_statuses[0].resources.limits["memory"] == "256Mi"
