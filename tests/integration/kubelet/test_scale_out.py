"""Several kubelet processes share the nodes through Kafka's consumer group (issue 16): two
processes split six nodes; one is SIGKILLed while resizes are in flight; the survivor takes
its nodes in the rebalance, re-admits their pods from the allocation checkpoint and finishes
every resize, each allocated exactly once (a node served twice would allocate twice). Each
process decodes only its own nodes' records (the `node` header)."""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from inplace.core.bus.consumer import LogReader
from inplace.core.settings import Settings
from schemas import events as ev
from tests.integration.conftest import RoleProcess, end_offsets, until

NODES, PODS_PER_NODE = 6, 4
SMP = {"content-type": "application/strategic-merge-patch+json"}
OWNED = re.compile(r'^inplace_kubelet_node_owned\{node="([^"]+)"\} 1\.0$', re.M)


def _pod(i: int) -> dict[str, Any]:
    rl = {"cpu": "500m", "memory": "256Mi"}
    container = {"name": "c", "image": "app", "resources": {"requests": rl, "limits": rl}}
    return {
        "metadata": {"name": f"p-{i}"},
        "spec": {"nodeName": f"node-{i % NODES}", "containers": [container]},
    }


RESIZED = {"cpu": "750m", "memory": "256Mi"}
RESIZE = {
    "spec": {"containers": [{"name": "c", "resources": {"requests": RESIZED, "limits": RESIZED}}]}
}


def _done(pod: dict[str, Any]) -> bool:
    status = pod["status"]
    statuses = status.get("containerStatuses") or []
    return (
        status.get("phase") == "Running"
        and status.get("resize") is None
        and bool(statuses)
        and statuses[0].get("allocatedResources", {}).get("cpu") == "750m"
        and statuses[0].get("resources", {}).get("requests", {}).get("cpu") == "750m"
    )


async def _read(kubelet: RoleProcess) -> tuple[int, int]:
    """(records decoded, records skipped by their node header) of a kubelet process."""
    async with kubelet.client() as client:
        text = (await client.get(f"{kubelet.url}/metrics")).text
    consumed = re.findall(
        r'^inplace_events_consumed_total\{role="kubelet",[^}]*\} (\S+)$', text, re.M
    )
    skipped = re.findall(r'^inplace_events_skipped_total\{role="kubelet"\} (\S+)$', text, re.M)
    return int(sum(float(v) for v in consumed)), int(sum(float(v) for v in skipped))


async def _owned(kubelet: RoleProcess) -> set[str]:
    async with kubelet.client() as client:
        return set(OWNED.findall((await client.get(f"{kubelet.url}/metrics")).text))


async def test_two_kubelets_split_the_nodes_and_the_survivor_takes_over(
    apiserver: RoleProcess, settings: Settings, tmp_path: Path
) -> None:
    env = {
        "INPLACE_KUBELET_NODES": str(NODES),
        "INPLACE_KUBELET_NODE_CPU": "4",
        "INPLACE_KUBELET_NODE_MEMORY": "8Gi",
        "INPLACE_KUBELET_GROUP_SESSION_TIMEOUT": "6",
        "INPLACE_KUBELET_RUNTIME_LATENCY": "0.05",  # resizes in flight when the kill lands
    }
    kubelets = [
        RoleProcess("kubelet", settings, tmp_path / f"{n}.log", INPLACE_KUBELET_INSTANCE=n, **env)
        for n in ("k1", "k2")
    ]
    everything = {f"node-{i}" for i in range(NODES)}
    base = f"{apiserver.url}/api/v1/namespaces/default/pods"
    try:
        for kubelet in kubelets:
            kubelet.start()
        for kubelet in kubelets:
            await kubelet.ready()

        async def shares() -> list[set[str]]:
            return [await _owned(k) for k in kubelets]

        split = await until(
            shares,
            lambda s: all(s) and not (s[0] & s[1]) and s[0] | s[1] == everything,
            "the nodes split between both processes",
        )
        async with httpx.AsyncClient(timeout=60) as http:

            async def pods() -> list[dict[str, Any]]:
                items: list[dict[str, Any]] = (await http.get(base)).json()["items"]
                return items

            for i in range(NODES * PODS_PER_NODE):
                assert (await http.post(base, json=_pod(i))).status_code == 201
            await until(
                pods,
                lambda items: all(p["status"].get("phase") == "Running" for p in items),
                "every pod running",
            )

            async def resize(i: int) -> None:
                r = await http.patch(f"{base}/p-{i}/resize", json=RESIZE, headers=SMP)
                assert r.status_code == 200, r.text

            half = NODES * PODS_PER_NODE // 2
            await asyncio.gather(*(resize(i) for i in range(half)))
            # Each process decoded its own nodes' records and skipped the other's: the work
            # is split, not done twice.
            read = [await _read(k) for k in kubelets]
            on_log = sum(
                n
                for (topic, _), n in (await end_offsets(settings)).items()
                if topic in (settings.topic(ev.PODS), settings.topic(ev.NODES))
            )
            assert all(skipped > 0 for _, skipped in read), read
            assert sum(consumed for consumed, _ in read) < 1.5 * on_log, (read, on_log)
            victim, survivor = kubelets
            victim.kill9()  # mid-stream: some resizes allocated, some actuated, some not
            await asyncio.gather(*(resize(i) for i in range(half, NODES * PODS_PER_NODE)))

            done = await until(
                pods, lambda items: all(_done(p) for p in items), "every resize done", within=120
            )
            assert len(done) == NODES * PODS_PER_NODE
        assert await _owned(survivor) == everything
        assert split[0] and split[1]
    finally:
        for kubelet in kubelets:
            kubelet.stop()

    # Each pod was allocated its start and its one resize: never twice, whoever served it.
    allocated: Counter[tuple[str, str]] = Counter()
    async with LogReader(settings.kafka_bootstrap) as reader:
        tps = await reader.partitions([settings.topic(ev.PODS)])
        async for batch in reader.read({}, await reader.end_offsets(tps)):
            for record in batch.records:
                p = record.envelope.payload
                if isinstance(p, ev.Allocated):
                    cpu = str((p.containers[0].resources.requests or {})["cpu"])
                    allocated[(p.name, cpu)] += 1
    for i in range(NODES * PODS_PER_NODE):
        assert allocated[(f"p-{i}", "500m")] == 1, allocated
        assert allocated[(f"p-{i}", "750m")] == 1, allocated
