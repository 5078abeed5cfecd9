"""KEP-3953 in the kubelet: a Deferred resize completes after a hotplug upsize without user
action; a hot unplug evicts pods (Failed/Evicted on the node) until the rest fit, with the
ResourceStarvation condition; a runtime failure during the resync is a NodeResizeFailed with
the error metric, and the retry succeeds."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from kubernetes import client
from prometheus_client import REGISTRY

from inplace.core.bus.producer import EventProducer
from inplace.core.settings import Settings
from schemas import events as ev
from schemas.envelope import Envelope
from tests.integration.conftest import RoleProcess
from tests.integration.kubelet.conftest import running_kubelet


def _pod(name: str, cpu: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "nodeName": "node-0",
            "containers": [
                {
                    "name": "c",
                    "image": "app",
                    "resources": {"requests": {"cpu": cpu, "memory": "128Mi"}},
                }
            ],
        },
    }


async def _until(v1: client.CoreV1Api, name: str, ok: Callable[[Any], bool]) -> Any:
    pod = None
    for _ in range(400):
        pod = await asyncio.to_thread(v1.read_namespaced_pod, name, "default")
        if ok(pod):
            return pod
        await asyncio.sleep(0.05)
    raise AssertionError(f"{name}: {pod.status if pod else None}")


async def _resize_node(settings: Settings, cpu: str, old: str) -> None:
    def rl(c: str) -> dict[str, str]:
        return {"cpu": c, "memory": "8Gi", "pods": "110"}

    async with EventProducer(
        settings.kafka_bootstrap, topic_prefix=settings.topic_prefix
    ) as producer:
        await producer.publish(
            Envelope.wrap(
                ev.NodeCapacityChanged(
                    name="node-0",
                    old_capacity=rl(old),
                    new_capacity=rl(cpu),
                    old_allocatable=rl(old),
                    new_allocatable=rl(cpu),
                ),
                producer="hotplug",
            )
        )


def _metric(name: str) -> float:
    return REGISTRY.get_sample_value(name, {"node": "node-0"}) or 0.0


async def test_upsize_completes_a_deferred_resize_and_unplug_evicts(
    apiserver: RoleProcess, settings: Settings
) -> None:
    v1 = client.CoreV1Api(client.ApiClient(client.Configuration(host=apiserver.url)))
    async with running_kubelet(settings) as (_kubelet, runtime):
        for name, cpu in (("a", "2"), ("b", "1")):
            await asyncio.to_thread(v1.create_namespaced_pod, "default", _pod(name, cpu))
            await _until(v1, name, lambda p: p.status.phase == "Running")
        await asyncio.to_thread(
            v1.patch_namespaced_pod_resize,
            "b",
            "default",
            {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "3"}}}]}},
        )
        await _until(v1, "b", lambda p: p.status.resize == "Deferred")

        requests_before = _metric("node_resize_resync_request_total")
        await _resize_node(settings, "8", "4")  # upsize: no user action needed after this
        await _until(
            v1,
            "b",
            lambda p: (
                p.status.resize is None
                and p.status.container_statuses[0].allocated_resources["cpu"] == "3"
            ),
        )
        assert _metric("node_resize_resync_request_total") == requests_before + 1

        # A runtime failure during the resync: NodeResizeFailed + metric, then a retry.
        errors_before = _metric("node_resize_resync_errors_total")
        # Only the resync updates a settled container here (reads have other callers).
        runtime.fail_next("update_container_resources", times=1)
        await _resize_node(settings, "4", "8")  # unplug: 2 + 3 no longer fit in 4
        evicted = await _until(v1, "a", lambda p: p.status.reason == "Evicted")
        assert evicted.spec.node_name == "node-0" and evicted.status.phase == "Failed"
        assert evicted.status.message.startswith("The node was low on resource: cpu.")
        kept = await asyncio.to_thread(v1.read_namespaced_pod, "b", "default")
        assert kept.status.phase == "Running" and kept.spec.node_name == "node-0"
        for _ in range(200):
            node = await asyncio.to_thread(v1.read_node, "node-0")
            conditions = {c.type: c.status for c in (node.status.conditions or [])}
            if conditions.get("ResourceStarvation") == "False":
                break
            await asyncio.sleep(0.05)
        assert conditions.get("ResourceStarvation") == "False"  # fits again after eviction
        for _ in range(200):
            if _metric("node_resize_resync_errors_total") > errors_before:
                break
            await asyncio.sleep(0.05)
        assert _metric("node_resize_resync_errors_total") == errors_before + 1
        # The Warning Event travels kubelet -> log -> apiserver read model: poll for it.
        warned = False
        for _ in range(200):
            events = (await asyncio.to_thread(v1.list_namespaced_event, "default")).items
            warned = any(
                e.reason == "FailedNodeResize"
                and e.type == "Warning"
                and e.involved_object.kind == "Node"
                for e in events
            )
            if warned:
                break
            await asyncio.sleep(0.05)
        assert warned
        for _ in range(200):
            node = await asyncio.to_thread(v1.read_node, "node-0")
            conditions = {c.type: c.status for c in node.status.conditions}
            if conditions.get("FailedNodeResize") == "False":
                break
            await asyncio.sleep(0.05)
        assert conditions.get("FailedNodeResize") == "False"  # the retry succeeded
