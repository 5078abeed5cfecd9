"""`kubectl top` and the metrics API: the kubelet samples its containers through the CRI and
writes each node's usage to the `usage` topic; the apiserver serves it as metrics.k8s.io."""

from __future__ import annotations

import json
from pathlib import Path

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
        assert abs(int(cpu.removesuffix("m")) - 250) <= 5  # a rate over 0.2 s, read twice
        nodes = await kubectl(apiserver, "top", "node", "--no-headers")
        row = nodes.stdout.split()
        assert row[0] == "node-0" and row[3] == "100Mi"
        assert row[2] == "6%"  # of the node's 4 CPUs
        # The node's sample is its heartbeat: the Lease `kubectl describe node` reads.
        described = await kubectl(apiserver, "describe", "node", "node-0")
        lease = described.stdout.split("Lease:", 1)[1].splitlines()[:4]
        assert lease[1].split() == ["HolderIdentity:", "node-0"]
        assert lease[2].split() == ["AcquireTime:", "<unset>"]
        assert lease[3].split()[0] == "RenewTime:" and "<unset>" not in lease[3]
    gone = await kubectl(apiserver, "get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes/nope",
                         check=False)  # fmt: skip
    assert 'nodemetrics.metrics.k8s.io "nope" not found' in gone.stderr
    leases = await kubectl(apiserver, "get", "leases", "-n", "kube-node-lease", "-o", "name")
    assert leases.stdout.split() == ["lease.coordination.k8s.io/node-0"]


async def test_annotations_drive_a_fake_nodes_usage(
    apiserver: RoleProcess, settings: Settings, tmp_path: Path
) -> None:
    """On a running cluster's fake nodes a pod's `usage.inplace.dev/<container>` annotation
    sets what the container uses; `kubectl annotate` changes it, `kubectl top` follows."""
    env = {"INPLACE_KUBELET_NODES": "1", "INPLACE_KUBELET_NODE_CPU": "4",
           "INPLACE_KUBELET_USAGE_EVERY_S": "0.3"}  # fmt: skip
    kubelet = RoleProcess("kubelet", settings, tmp_path / "kubelet.log", **env)
    kubelet.start()
    await kubelet.ready()
    try:
        body = node0_pod("sim", "1")
        body["metadata"]["annotations"] = {"usage.inplace.dev/c": "cpu=300m,memory=50Mi"}
        v1 = client.CoreV1Api(client.ApiClient(client.Configuration(host=apiserver.url)))
        await call(v1.create_namespaced_pod, "default", body)

        async def top() -> list[str]:
            shown = await kubectl(apiserver, "top", "pod", "sim", "--no-headers", check=False)
            return shown.stdout.split()

        await until(top, lambda row: row[1:] == ["300m", "50Mi"], "the simulated usage", 30)
        await kubectl(apiserver, "annotate", "--overwrite", "pod", "sim",
                      "usage.inplace.dev/c=cpu=2,memory=80Mi")  # fmt: skip
        # Held at the container's 1-CPU limit, as CFS throttling would.
        await until(top, lambda row: row[1:] == ["1000m", "80Mi"], "the new usage", 30)
        # Each round (every node's heartbeat) is timed on the kubelet's /metrics.
        async with kubelet.client(timeout=5) as http:
            scraped = (await http.get(f"{kubelet.url}/metrics")).text
        rounds = [
            float(line.split()[-1])
            for line in scraped.splitlines()
            if line.startswith("inplace_kubelet_usage_round_seconds_count")
        ]
        assert rounds and rounds[0] >= 2
    finally:
        kubelet.stop()
