"""Deferred resizes are retried on a timer as well as on events (the kubelet since 1.33),
without writing the same Deferred status again; the deletion that frees room completes it, and
room freed with no event at all is found by the timer alone."""

from __future__ import annotations

import logging

import pytest
from kubernetes import client
from prometheus_client import REGISTRY

from inplace.core.projection.replay import pod_history
from inplace.core.settings import Settings
from schemas import events as ev
from schemas.quantity import Quantity
from tests.integration.conftest import RoleProcess, call, until
from tests.integration.kubelet.conftest import cpu_resize, node0_pod, running_kubelet

PERIODIC = "kubelet_pod_deferred_accepted_resizes_total"


async def test_a_deferred_resize_is_retried_periodically_then_completes(
    apiserver: RoleProcess, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="services.kubelet.nodeagent")
    v1 = client.CoreV1Api(client.ApiClient(client.Configuration(host=apiserver.url)))
    web = lambda: v1.read_namespaced_pod("web", "default")  # noqa: E731
    timer = {"kubelet_deferred_retry_first": 0.2, "kubelet_deferred_retry_period": 0.2}
    async with running_kubelet(settings, **timer):
        await call(v1.create_namespaced_pod, "default", node0_pod("hog", "2500m"))
        await call(v1.create_namespaced_pod, "default", node0_pod("web", "1"))
        await until(web, lambda p: p.status.phase == "Running", "web running")
        await call(v1.patch_namespaced_pod_resize, "web", "default", cpu_resize("2"))
        await until(web, lambda p: p.status.resize == "Deferred", "deferred")
        await until(
            lambda: sum(
                "periodic retry of 1 deferred resizes" in r.message for r in caplog.records
            ),
            lambda n: n >= 3,
            "three periodic retries",
        )
        assert (await call(web)).status.resize == "Deferred"  # still no room
        await call(v1.delete_namespaced_pod, "hog", "default")
        await until(web, lambda p: p.status.resize is None, "resized")
    history = await pod_history(settings.kafka_bootstrap, "default", "web", settings.topic_prefix)
    changes = [ev.resize_change(e.record.envelope.payload) for e in history]
    statuses = [c.resize for c in changes if c is not None]
    # Accepted and applied in one sync: the allocation goes out with the cleared status.
    assert statuses == ["Deferred", None], "retries wrote nothing new"


async def test_the_timer_alone_accepts_a_deferred_resize(
    apiserver: RoleProcess, settings: Settings
) -> None:
    """Every change that frees room on a node is also a retry trigger here (a pod deleted or
    terminated, a shrinking resize, the node's allocatable moving), so room is freed in the
    node agent's checkpoint directly, with no event: only the timer can find it."""
    v1 = client.CoreV1Api(client.ApiClient(client.Configuration(host=apiserver.url)))
    web = lambda: v1.read_namespaced_pod("web", "default")  # noqa: E731
    timer = {"kubelet_deferred_retry_first": 0.2, "kubelet_deferred_retry_period": 0.2}
    before = REGISTRY.get_sample_value(PERIODIC, {"retry_trigger": "periodic_retry"}) or 0.0
    async with running_kubelet(settings, **timer) as (kubelet, _):
        await call(v1.create_namespaced_pod, "default", node0_pod("hog", "2500m"))
        await call(v1.create_namespaced_pod, "default", node0_pod("web", "1"))
        await until(web, lambda p: p.status.phase == "Running", "web running")
        await call(v1.patch_namespaced_pod_resize, "web", "default", cpu_resize("2"))
        await until(web, lambda p: p.status.resize == "Deferred", "deferred")
        agent = kubelet.agents["node-0"]
        agent.checkpoint = agent.checkpoint.with_allocatable(
            {**agent.checkpoint.allocatable, "cpu": Quantity("8")}
        )
        done = await until(web, lambda p: p.status.resize is None, "resized by the timer")
        assert done.status.container_statuses[0].allocated_resources["cpu"] == "2"
        assert (await call(v1.read_namespaced_pod, "hog", "default")).status.phase == "Running"
    after = REGISTRY.get_sample_value(PERIODIC, {"retry_trigger": "periodic_retry"}) or 0.0
    assert after == before + 1
