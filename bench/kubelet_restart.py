"""Kubelet restart recovery: 100 simulated nodes x 110 pods, SIGKILL, restart, recover.

Starts its own throwaway Kafka broker, runs `inplace serve kubelet` with 100 nodes, creates
110 running pods per node straight on the log, then SIGKILLs the kubelet, proposes resizes
while it is down, restarts it and times (KEP-1287 Kubelet Restart Tolerance):
  - restart → /readyz (the log folded, every node served: its checkpoint re-admits its pods
    before any decision; putting them back into the runtime goes on after),
  - restart → every resize proposed during the outage Actuated and its status cleared,
and counts what the restarted kubelet wrote for pods it did not need to touch (should be 0).
Not a test: `.venv/bin/python -m bench.kubelet_restart [--nodes 100 --pods-per-node 110]`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import httpx

from inplace.core.bus.producer import EventProducer
from inplace.core.bus.topics import ensure_topics
from inplace.core.readmodel import ReadModel
from inplace.core.settings import Settings
from inplace.localinfra import KafkaBroker, free_port
from schemas import events as ev
from schemas.envelope import Envelope
from schemas.k8s import Pod
from tests import factories

NS = "default"


def _kubelet(settings: Settings, nodes: int, port: int, log: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "INPLACE_KAFKA_BOOTSTRAP": settings.kafka_bootstrap,
        "INPLACE_KUBELET_NODES": str(nodes),
        "INPLACE_KUBELET_NODE_CPU": "64",
        "INPLACE_KUBELET_NODE_MEMORY": "256Gi",
        "INPLACE_KUBELET_NODE_PODS": "200",
        "INPLACE_LOG_LEVEL": "WARNING",
        "INPLACE_INSECURE_HTTP": "true",
    }
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "inplace.cli.main", "serve", "kubelet", "--port", str(port)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


async def _ready(port: int, within: float = 600) -> None:
    deadline = time.monotonic() + within
    async with httpx.AsyncClient(timeout=2) as client:
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                if (await client.get(f"http://127.0.0.1:{port}/readyz")).status_code == 200:
                    return
            await asyncio.sleep(0.05)
    raise TimeoutError("the kubelet did not become ready")


async def _until(what: str, ok: Callable[[], bool], within: float = 900) -> float:
    started = time.monotonic()
    while not ok():
        if time.monotonic() - started > within:
            raise TimeoutError(what)
        await asyncio.sleep(0.05)
    return time.monotonic() - started


@contextlib.asynccontextmanager
async def _following(settings: Settings) -> AsyncIterator[ReadModel]:
    model = ReadModel(settings, role="bench", window=1)
    task = asyncio.create_task(model.run())
    try:
        await model.ready.wait()
        yield model
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def _settled(pod: Pod) -> bool:
    status = pod.status
    if status.phase != "Running" or status.resize is not None or not status.container_statuses:
        return False
    actual = status.container_statuses[0].resources
    desired = pod.spec.containers[0].resources
    return actual is not None and actual.requests == desired.requests


async def bench(settings: Settings, nodes: int, per_node: int, resizes: int, home: Path) -> None:
    await ensure_topics(settings)
    port = free_port()
    log = home / "kubelet.log"
    kubelet = _kubelet(settings, nodes, port, log)
    await _ready(port)
    total = nodes * per_node
    pods = [factories.pod(NS, f"p-{i}") for i in range(total)]
    for i, pod in enumerate(pods):
        pod.spec.node_name = f"node-{i % nodes}"
    async with _following(settings) as model, EventProducer(settings.kafka_bootstrap) as producer:
        started = time.monotonic()
        created = [
            Envelope.wrap(
                ev.PodCreated(namespace=NS, name=p.metadata.name, uid=p.metadata.uid, pod=p),
                producer="bench",
            )
            for p in pods
        ]
        for i in range(0, len(created), 2000):
            await producer.publish_many(created[i : i + 2000])
        running = lambda: sum(map(_settled, model.objects("pods").values())) == total  # noqa: E731
        await _until("all pods running", running)
        print(f"{total:,} pods on {nodes} nodes running in {time.monotonic() - started:.1f}s")

        kubelet.send_signal(signal.SIGKILL)
        kubelet.wait()
        chosen = pods[:: max(1, total // resizes)][:resizes]
        proposals = [
            Envelope.wrap(
                ev.ResizeProposed(
                    namespace=NS,
                    name=p.metadata.name,
                    uid=p.metadata.uid or "",
                    containers=[
                        ev.ContainerResources(
                            name="app", resources=factories.resources("200m", "128Mi")
                        )
                    ],
                ),
                producer="bench",
            )
            for p in chosen
        ]
        await producer.publish_many(proposals)
        written: Counter[str] = Counter()

        def count(record: object) -> None:
            envelope = record.envelope  # type: ignore[attr-defined]
            if envelope.producer == "kubelet":
                written[envelope.type] += 1

        model.on_apply(count)
        restarted = time.monotonic()
        kubelet = _kubelet(settings, nodes, port, log)
        await _ready(port)
        ready_s = time.monotonic() - restarted
        await _until("resizes done", running)
        done_s = time.monotonic() - restarted
        await asyncio.sleep(3)  # anything written late still counts
        kubelet.send_signal(signal.SIGTERM)
        kubelet.wait(timeout=30)
    print(f"kubelet restart → ready: {ready_s:.2f}s ({total:,} pods to re-admit, the log folded)")
    print(
        f"kubelet restart → {len(chosen):,} resizes proposed while down all cleared: {done_s:.2f}s"
    )
    per_pod = {k: v for k, v in written.items() if k != "KubeEventRecorded"}
    print(f"written by the restarted kubelet: {dict(sorted(per_pod.items()))}")
    print(
        f"  (expected: {len(chosen)} each of Allocated (setting InProgress) and Actuated "
        "(clearing it) — nothing for the untouched pods)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--pods-per-node", type=int, default=110)
    parser.add_argument("--resizes", type=int, default=1000)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="inplace-bench-kubelet-", dir="/tmp"))
    broker = KafkaBroker(root / "kafka")
    try:
        broker.start()
        settings = Settings(kafka_bootstrap=broker.bootstrap_servers, postgres_dsn="")
        asyncio.run(bench(settings, args.nodes, args.pods_per_node, args.resizes, root))
    finally:
        broker.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
