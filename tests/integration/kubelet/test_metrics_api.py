"""`kubectl top` and the metrics API: the kubelet samples its containers through the CRI and
writes each node's usage to the `usage` topic; the apiserver serves it as metrics.k8s.io."""

from __future__ import annotations

import json

import pytest
from kubernetes import client

from inplace.core.settings import Settings
from tests.integration.conftest import RoleProcess, call, kubectl, until
from tests.integration.kubelet.conftest import node0_pod, running_kubelet

pytestmark = pytest.mark.integration
MI = 1 << 20


async def test_kubectl_top_reads_what_the_kubelet_sampled(
    apiserver: RoleProcess, settings: Settings
) -> None:
    v1 = client.CoreV1Api(client.ApiClient(client.Configuration(host=apiserver.url)))
    body = node0_pod("busy", "1")
    body["metadata"]["labels"] = {"app": "busy"}
    async with running_kubelet(settings, usage_every_s=0.2) as (kubelet, runtime):
        await call(v1.create_namespaced_pod, "default", body)
        agent = kubelet.agents["node-0"]
        await until(lambda: "default/busy" in agent.pods, bool, "the pod runs")
        cid = agent.pods["default/busy"].containers["c"]
        runtime.set_cpu_usage(cid, 250_000_000)  # a quarter of a core, simulated
        runtime.set_memory_usage(cid, 100 * MI)

        async def sampled() -> dict[str, object]:
            raw = await kubectl(
                apiserver, "get", "--raw",
                "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/busy", check=False,
            )  # fmt: skip
            return json.loads(raw.stdout) if raw.returncode == 0 else {}

        def at_rate(metrics: dict[str, object]) -> bool:
            containers = metrics.get("containers") or []
            cpu = containers[0]["usage"]["cpu"] if containers else "0n"  # type: ignore[index]
            return abs(int(cpu.removesuffix("n")) - 250_000_000) < 10_000_000

        metrics = await until(sampled, at_rate, "a sample at the simulated rate", 30)
        assert metrics["kind"] == "PodMetrics"
        assert metrics["metadata"]["labels"] == {"app": "busy"}  # type: ignore[index]
        assert metrics["containers"][0]["usage"]["memory"] == "102400Ki"  # type: ignore[index]
        top = await kubectl(apiserver, "top", "pod", "-l", "app=busy", "--no-headers")
        name, cpu, memory = top.stdout.split()
        assert (name, memory) == ("busy", "100Mi")
        assert cpu in {"249m", "250m", "251m"}
        nodes = await kubectl(apiserver, "top", "node", "--no-headers")
        row = nodes.stdout.split()
        assert row[0] == "node-0" and row[3] == "100Mi"
        assert row[2] == "6%"  # of the node's 4 CPUs
    gone = await kubectl(apiserver, "get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes/nope",
                         check=False)  # fmt: skip
    assert 'nodemetrics.metrics.k8s.io "nope" not found' in gone.stderr
