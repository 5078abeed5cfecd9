"""The kubelet's resize metrics after a mixed load balance: every proposal ends completed,
infeasible or canceled (deleted, superseded), under the names Kubernetes 1.34+ uses."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubernetes import client
from prometheus_client import REGISTRY

from inplace.core.settings import Settings
from tests.integration.conftest import RoleProcess, call, until
from tests.integration.kubelet.conftest import cpu_resize, node0_pod, running_kubelet

STATES = ("proposed", "completed", "infeasible", "canceled", "deferred")


def _states() -> dict[str, float]:
    return {
        s: REGISTRY.get_sample_value("kubelet_container_resize_requests_total", {"state": s}) or 0
        for s in STATES
    }


def _durations() -> dict[str, float]:
    return {
        success: REGISTRY.get_sample_value(
            "kubelet_pod_resize_duration_milliseconds_count", {"success": success}
        )
        or 0
        for success in ("true", "false")
    }


async def test_counters_balance_after_a_mixed_load(
    apiserver: RoleProcess, settings: Settings
) -> None:
    v1 = client.CoreV1Api(client.ApiClient(client.Configuration(host=apiserver.url)))

    def pod(name: str) -> Callable[[], Any]:
        return lambda: v1.read_namespaced_pod(name, "default")

    before = _states()
    increases = (
        REGISTRY.get_sample_value(
            "kubelet_container_requested_resizes_total",
            {"resource": "cpu", "requirement": "limits", "operation": "increase"},
        )
        or 0
    )
    durations = _durations()
    async with running_kubelet(settings) as (_, runtime):  # one 4-CPU node
        for name, cpu in (
            ("hog", "2500m"),
            ("done", "500m"),
            ("never", "250m"),
            ("waiter", "250m"),
        ):
            await call(v1.create_namespaced_pod, "default", node0_pod(name, cpu))
        await until(pod("waiter"), lambda p: p.status.phase == "Running", "running")
        runtime.fail_next("update_container_resources")  # one failed attempt, then done
        await call(v1.patch_namespaced_pod_resize, "done", "default", cpu_resize("1"))
        await until(
            pod("done"), lambda p: p.status.resize is None and p.metadata.generation == 2, "done"
        )
        await call(v1.patch_namespaced_pod_resize, "never", "default", cpu_resize("6"))
        await until(pod("never"), lambda p: p.status.resize == "Infeasible", "infeasible")
        await call(v1.patch_namespaced_pod_resize, "waiter", "default", cpu_resize("2"))
        await until(pod("waiter"), lambda p: p.status.resize == "Deferred", "deferred")
        await call(v1.delete_namespaced_pod, "waiter", "default")  # canceled by deletion
        await until(
            lambda: _states()["canceled"] - before["canceled"], lambda n: n == 1, "canceled"
        )
        await call(v1.create_namespaced_pod, "default", node0_pod("twice", "250m"))
        await until(pod("twice"), lambda p: p.status.phase == "Running", "twice running")
        await call(v1.patch_namespaced_pod_resize, "twice", "default", cpu_resize("3"))
        await until(pod("twice"), lambda p: p.status.resize == "Deferred", "twice deferred")
        await call(v1.patch_namespaced_pod_resize, "twice", "default", cpu_resize("200m"))
        await until(
            pod("twice"),
            lambda p: p.status.resize is None and p.metadata.generation == 3,
            "superseded, done",
        )
        after = _states()
    delta = {s: after[s] - before[s] for s in STATES}
    assert delta == {"proposed": 5, "completed": 2, "infeasible": 1, "canceled": 2, "deferred": 2}
    assert delta["proposed"] == delta["completed"] + delta["infeasible"] + delta["canceled"]
    grown = REGISTRY.get_sample_value(
        "kubelet_container_requested_resizes_total",
        {"resource": "cpu", "requirement": "limits", "operation": "increase"},
    )
    assert grown == increases + 4  # done, never, waiter, twice's first
    assert REGISTRY.get_sample_value("kubelet_pod_pending_resizes", {"reason": "infeasible"}) == 1
    assert REGISTRY.get_sample_value("kubelet_pod_pending_resizes", {"reason": "deferred"}) == 0
    assert REGISTRY.get_sample_value("kubelet_pod_in_progress_resizes") == 0
    detail = {"reason_detail": "insufficient_node_allocatable"}
    assert (REGISTRY.get_sample_value("kubelet_pod_infeasible_resizes_total", detail) or 0) >= 1
    # Completed resizes and the failed attempt, each under its success label.
    after_durations = _durations()
    assert after_durations["true"] - durations["true"] == 2
    assert after_durations["false"] - durations["false"] == 1
