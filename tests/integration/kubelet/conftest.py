"""An in-process kubelet on the test's topics, with a runtime the test can steer."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from inplace.core.settings import Settings
from services.kubelet.config import KubeletConfig
from services.kubelet.cri import RuntimeService
from services.kubelet.kubelet import Kubelet
from services.kubelet.runtime_fake import FakeRuntime
from tests.integration.conftest import RoleProcess


@contextlib.asynccontextmanager
async def running_kubelet(
    settings: Settings, runtime: RuntimeService | None = None, **overrides: Any
) -> AsyncIterator[tuple[Kubelet, FakeRuntime]]:
    """The kubelet with one 4-CPU node; a FakeRuntime unless another runtime is given."""
    config = KubeletConfig(
        **{
            "nodes": 1,
            "node_cpu": "4",
            "node_memory": "8Gi",
            **{name.removeprefix("kubelet_"): value for name, value in overrides.items()},
        }
    )
    runtime = FakeRuntime() if runtime is None else runtime
    kubelet = Kubelet(settings, runtime, config)
    task = asyncio.create_task(kubelet.run())
    for _ in range(600):
        if kubelet.started or task.done():
            break
        await asyncio.sleep(0.05)
    if task.done():
        task.result()
    try:
        yield kubelet, runtime  # type: ignore[misc]
    finally:
        if isinstance(runtime, FakeRuntime):
            runtime.release()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def node0_pod(name: str, cpu: str) -> dict[str, Any]:
    """A Guaranteed one-container pod bound to `running_kubelet`'s node (no scheduler)."""
    rl = {"cpu": cpu, "memory": "128Mi"}
    container = {"name": "c", "image": "app", "resources": {"requests": rl, "limits": rl}}
    return {"metadata": {"name": name}, "spec": {"nodeName": "node-0", "containers": [container]}}


def cpu_resize(cpu: str) -> dict[str, Any]:
    """The resize patch of `node0_pod`'s container to `cpu` (requests = limits)."""
    rl = {"cpu": cpu, "memory": "128Mi"}
    return {"spec": {"containers": [{"name": "c", "resources": {"requests": rl, "limits": rl}}]}}


@pytest.fixture
async def kubelet_process(settings: Settings, tmp_path: Path) -> AsyncIterator[RoleProcess]:
    """The kubelet as a real process, serving one 4-CPU node (node-0)."""
    env = {"INPLACE_KUBELET_NODES": "1", "INPLACE_KUBELET_NODE_CPU": "4"}
    proc = RoleProcess("kubelet", settings, tmp_path / "kubelet.log", **env)
    proc.start()
    await proc.ready()
    yield proc
    proc.stop()
