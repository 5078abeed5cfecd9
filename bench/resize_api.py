"""Resize API throughput and latency: PATCH …/pods/{name}/resize (strategic merge).

Starts its own Kafka broker and an apiserver process, creates pods, then sends resize
requests from C concurrent clients. Prints requests/s and p50/p90/p99 latency. Not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from inplace.core.bus.topics import ensure_topics
from inplace.core.settings import Settings
from inplace.load import cpu
from inplace.load.http import PooledClient
from inplace.localinfra import KafkaBroker, free_port

SMP = {"content-type": "application/strategic-merge-patch+json"}


def pod(name: str) -> dict[str, object]:
    rl = {"cpu": "100m", "memory": "128Mi"}
    return {
        "metadata": {"name": name},
        "spec": {
            "containers": [
                {"name": "app", "image": "nginx", "resources": {"requests": rl, "limits": rl}}
            ]
        },
    }


async def bench(url: str, pods: int, requests: int, concurrency: int, bootstrap: str) -> None:
    base = "/api/v1/namespaces/default/pods"
    # The load driver's client (http.py): cheap per request, so the server is what is measured.
    async with PooledClient(url, concurrency=concurrency, timeout=60) as c:
        for i in range(pods):
            r = await c.request("POST", base, json=pod(f"p-{i}"))
            if r.status_code != 201:
                raise SystemExit(f"creating p-{i}: HTTP {r.status_code}: {r.text[:200]}")
        latencies: list[float] = []
        failures = 0
        queue: asyncio.Queue[int] = asyncio.Queue()
        for i in range(requests):
            queue.put_nowait(i)

        async def worker() -> None:
            nonlocal failures
            while not queue.empty():
                i = queue.get_nowait()
                cpu = f"{100 + (i % 50) * 10}m"
                body = {
                    "spec": {
                        "containers": [
                            {
                                "name": "app",
                                "resources": {"requests": {"cpu": cpu}, "limits": {"cpu": cpu}},
                            }
                        ]
                    }
                }
                t = time.perf_counter()
                r = await c.request(
                    "PATCH",
                    f"{base}/p-{i % pods}/resize",
                    json=body,
                    headers={"content-type": "application/strategic-merge-patch+json"},
                )
                latencies.append(time.perf_counter() - t)
                failures += r.status_code != 200

        started = time.perf_counter()
        before = cpu.snapshot(bootstrap, "", time.monotonic())
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
        spent = cpu.usage(before, cpu.snapshot(bootstrap, "", time.monotonic()), requests)
    q = statistics.quantiles(latencies, n=100)
    print(
        f"{requests} resize PATCHes, {concurrency} concurrent clients, {pods} pods: "
        f"{requests / elapsed:,.0f} req/s, failures {failures}"
    )
    print(
        f"latency p50 {q[49] * 1000:.1f} ms  p90 {q[89] * 1000:.1f} ms  "
        f"p99 {q[98] * 1000:.1f} ms  max {max(latencies) * 1000:.1f} ms"
    )
    # CPU per request: steadier than req/s when the clients share the cores with the server.
    print(
        "cpu ms per request  "
        + "  ".join(f"{name} {u['ms_per_resize']:.3f}" for name, u in spent.items())
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pods", type=int, default=200)
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="inplace-bench-api-", dir="/tmp"))
    broker = KafkaBroker(root / "kafka")
    port = free_port()
    proc = None
    try:
        broker.start()
        settings = Settings(kafka_bootstrap=broker.bootstrap_servers)
        asyncio.run(ensure_topics(settings))
        env = {
            **os.environ,
            "INPLACE_KAFKA_BOOTSTRAP": broker.bootstrap_servers,
            "INPLACE_QUOTA_URL": "",
            "INPLACE_LOG_LEVEL": "WARNING",
            "INPLACE_INSECURE_HTTP": "true",  # loopback, as the before figures were taken
        }
        proc = subprocess.Popen(
            [sys.executable, "-m", "inplace.cli.main", "serve", "apiserver", "--port", str(port)],
            env=env,
        )
        url = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                if httpx.get(f"{url}/readyz").status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        asyncio.run(
            bench(url, args.pods, args.requests, args.concurrency, broker.bootstrap_servers)
        )
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=20)
        broker.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
