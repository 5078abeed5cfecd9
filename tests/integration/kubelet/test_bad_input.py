"""Bad input never stops the kubelet: events for unknown pods and nodes, a record with an
impossible quantity, and a runtime that hangs are logged, reported (Events, dead letters)
and the kubelet keeps serving the other pods."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client

from inplace.core.bus.producer import EventProducer
from inplace.core.settings import Settings
from schemas import events as ev
from schemas.envelope import Envelope
from tests import factories
from tests.integration.conftest import RoleProcess
from tests.integration.kubelet.conftest import running_kubelet


def _pod(name: str, node: str, cpu: str = "500m") -> dict[str, Any]:
    rl = {"cpu": cpu, "memory": "128Mi"}
    return {
        "metadata": {"name": name},
        "spec": {
            "nodeName": node,
            "containers": [
                {"name": "c", "image": "app", "resources": {"requests": rl, "limits": rl}}
            ],
        },
    }


def _resize(cpu: str) -> dict[str, Any]:
    rl = {"cpu": cpu}
    return {"spec": {"containers": [{"name": "c", "resources": {"requests": rl, "limits": rl}}]}}


async def _until(v1: client.CoreV1Api, name: str, ok: Callable[[Any], bool]) -> Any:
    pod = None
    for _ in range(400):
        pod = await asyncio.to_thread(v1.read_namespaced_pod, name, "default")
        if ok(pod):
            return pod
        await asyncio.sleep(0.05)
    raise AssertionError(f"{name}: {pod.status if pod else None}")


def _done(cpu: str) -> Callable[[Any], bool]:
    def ok(p: Any) -> bool:
        cs = p.status.container_statuses
        return (
            p.status.resize is None
            and bool(cs)
            and cs[0].resources is not None
            and cs[0].resources.limits.get("cpu") == cpu
        )

    return ok


async def test_unknown_objects_and_malformed_records_are_survived(
    apiserver: RoleProcess,
    settings: Settings,
    producer: EventProducer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    v1 = client.CoreV1Api(client.ApiClient(client.Configuration(host=apiserver.url)))
    async with running_kubelet(settings, kubelet_nodes=2):
        # Events for things that do not exist, and bytes that are not an event at all.
        ghost = {"namespace": "default", "name": "ghost", "uid": "u-ghost"}
        good = Envelope.wrap(
            ev.PodCreated(**ghost, pod=factories.pod("default", "ghost")), producer="test"
        )
        for payload in (
            ev.Allocated(
                **ghost,
                node_name="node-0",
                containers=[
                    ev.ContainerAllocation(name="app", resources=factories.resources("1", "1Gi"))
                ],
            ),
            ev.PodBound(**ghost, node_name="node-99"),
            ev.NodeCapacityChanged(
                name="node-99",
                old_capacity={},
                new_capacity={},
                old_allocatable={},
                new_allocatable={},
            ),
        ):
            await producer.publish(Envelope.wrap(payload, producer="test"))
        impossible = good.encode().replace(b'"100m"', b'"1.2.3"')
        await producer.send_raw(settings.topic(ev.PODS), impossible, key=b"default/ghost")

        await asyncio.to_thread(v1.create_namespaced_pod, "default", _pod("ok", "node-1"))
        await _until(v1, "ok", lambda p: p.status.phase == "Running")
        await asyncio.to_thread(v1.patch_namespaced_pod_resize, "ok", "default", _resize("1"))
        await _until(v1, "ok", _done("1"))
    assert any(
        "malformed record" in r.message and "1.2.3" in r.message
        for r in caplog.records
        if r.levelno == logging.WARNING
    )


async def test_a_hung_runtime_is_a_failed_resize_not_a_stuck_kubelet(
    apiserver: RoleProcess, settings: Settings
) -> None:
    v1 = client.CoreV1Api(client.ApiClient(client.Configuration(host=apiserver.url)))
    async with running_kubelet(settings, kubelet_nodes=2, kubelet_runtime_timeout=1.0) as (
        _,
        runtime,
    ):
        for name, node in (("stuck", "node-0"), ("free", "node-1")):
            await asyncio.to_thread(v1.create_namespaced_pod, "default", _pod(name, node))
            await _until(v1, name, lambda p: p.status.phase == "Running")

        stuck_uid = (
            await asyncio.to_thread(v1.read_namespaced_pod, "stuck", "default")
        ).metadata.uid
        runtime.hang(
            predicate=lambda c: (
                stuck_uid in str(c.target)
                and c.method in ("update_container_resources", "set_pod_cgroup_resources")
            )
        )
        await asyncio.to_thread(v1.patch_namespaced_pod_resize, "stuck", "default", _resize("1"))
        await asyncio.to_thread(v1.patch_namespaced_pod_resize, "free", "default", _resize("1"))
        await _until(v1, "free", _done("1"))  # the other node is served meanwhile

        async def failed_resize_event() -> bool:
            events = await asyncio.to_thread(v1.list_namespaced_event, "default")
            return any(
                e.reason == "ResizeError" and e.involved_object.name == "stuck"
                for e in events.items
            )

        for _ in range(200):
            if await failed_resize_event():
                break
            await asyncio.sleep(0.05)
        assert await failed_resize_event()
        stuck = await asyncio.to_thread(v1.read_namespaced_pod, "stuck", "default")
        assert stuck.status.resize == "InProgress"  # not given up: retried with back-off
        runtime.release()
        await _until(v1, "stuck", _done("1"))


async def test_a_node_registered_with_the_simulated_annotation_is_adopted(
    apiserver: RoleProcess, settings: Settings
) -> None:
    v1 = client.CoreV1Api(client.ApiClient(client.Configuration(host=apiserver.url)))
    async with running_kubelet(settings, kubelet_nodes=0) as (kubelet, _):
        assert kubelet.agents == {}
        await asyncio.to_thread(
            v1.create_node,
            {
                "metadata": {"name": "sim-7", "annotations": {"inplace.io/simulated": "true"}},
                "status": {
                    "capacity": {"cpu": "2", "memory": "4Gi", "pods": "10"},
                    "allocatable": {"cpu": "2", "memory": "4Gi", "pods": "10"},
                },
            },
        )
        await asyncio.to_thread(
            v1.create_node,
            {"metadata": {"name": "someone-elses"}, "status": {"capacity": {"cpu": "2"}}},
        )
        await asyncio.to_thread(v1.create_namespaced_pod, "default", _pod("adopted", "sim-7"))
        await _until(v1, "adopted", lambda p: p.status.phase == "Running")
        await asyncio.to_thread(v1.patch_namespaced_pod_resize, "adopted", "default", _resize("1"))
        await _until(v1, "adopted", _done("1"))
        assert set(kubelet.agents) == {"sim-7"}
