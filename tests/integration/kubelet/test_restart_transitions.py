"""A kubelet killed between writing Allocated and InProgress finishes the transition after it
restarts: the pod's log still reads Proposed → Allocated → InProgress → Actuated → cleared,
never skipping a resize status (KEP-1287 Kubelet Restart Tolerance)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from kubernetes import client

from inplace.core.bus.producer import EventProducer
from inplace.core.projection.replay import pod_history
from inplace.core.settings import Settings
from schemas import events as ev
from schemas.envelope import Envelope
from schemas.k8s import ResourceRequirements
from schemas.quantity import Quantity
from tests.integration.conftest import RoleProcess
from tests.integration.kubelet.conftest import running_kubelet


def _pod() -> dict[str, Any]:
    rl = {"cpu": "1", "memory": "128Mi"}
    return {
        "metadata": {"name": "cut"},
        "spec": {
            "nodeName": "node-0",
            "containers": [
                {"name": "c", "image": "app", "resources": {"requests": rl, "limits": rl}}
            ],
        },
    }


async def _until(v1: client.CoreV1Api, ok: Callable[[Any], bool]) -> Any:
    pod = None
    for _ in range(400):
        pod = await asyncio.to_thread(v1.read_namespaced_pod, "cut", "default")
        if ok(pod):
            return pod
        await asyncio.sleep(0.05)
    raise AssertionError(f"cut: {pod.status if pod else None}")


async def test_restart_between_allocated_and_in_progress(
    apiserver: RoleProcess, settings: Settings
) -> None:
    v1 = client.CoreV1Api(client.ApiClient(client.Configuration(host=apiserver.url)))
    async with running_kubelet(settings):
        await asyncio.to_thread(v1.create_namespaced_pod, "default", _pod())
        pod = await _until(v1, lambda p: p.status.phase == "Running")

    # The kubelet is down; the resize is Proposed and the dead kubelet's last write was the
    # allocation (what a SIGKILL right after producing Allocated leaves in the log).
    rl = {"cpu": "2", "memory": "128Mi"}
    await asyncio.to_thread(
        v1.patch_namespaced_pod_resize,
        "cut",
        "default",
        {"spec": {"containers": [{"name": "c", "resources": {"requests": rl, "limits": rl}}]}},
    )
    await _until(v1, lambda p: p.status.resize == "Proposed")
    ids = {"namespace": "default", "name": "cut", "uid": pod.metadata.uid}
    quantities = {k: Quantity(v) for k, v in rl.items()}
    allocation = ResourceRequirements(requests=quantities, limits=quantities)
    async with EventProducer(
        settings.kafka_bootstrap, topic_prefix=settings.topic_prefix
    ) as producer:
        await producer.publish(
            Envelope.wrap(
                ev.Allocated(
                    **ids,
                    node_name="node-0",
                    containers=[ev.ContainerAllocation(name="c", resources=allocation)],
                ),
                producer="kubelet",
            )
        )

    async with running_kubelet(settings):
        await _until(
            v1,
            lambda p: p.status.resize is None and p.status.container_statuses[0].resources,
        )
        done = await _until(
            v1, lambda p: p.status.container_statuses[0].resources.requests["cpu"] == "2"
        )
        assert done.status.container_statuses[0].allocated_resources["cpu"] == "2"

    history = await pod_history(settings.kafka_bootstrap, "default", "cut", settings.topic_prefix)
    steps = [h.record.envelope.payload for h in history]
    after = steps[max(i for i, p in enumerate(steps) if isinstance(p, ev.Allocated)) :]
    statuses = [p.resize for p in after if isinstance(p, ev.ResizeStatusChanged)]
    assert statuses == ["InProgress", None], [type(p).__name__ for p in after]
    assert not any(isinstance(p, ev.Allocated) for p in after[1:])  # allocated exactly once
