"""Role restart on a long history: time until ready, records read and memory, from the
projection snapshot (issue 16) versus the whole log from offset 0 (the apiserver both ways).

Builds the history straight onto the log (pods created, then many resize flows each), lets
the projector catch up, stops it, then starts each role and times /readyz.
Not a test: prints figures.

    .venv/bin/python -m bench.apiserver_restart --pods 5000 --resizes 20 \
        --roles apiserver,scheduler,quota,hotplug,workload
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import asyncpg
import httpx

from inplace.core.bus.producer import EventProducer
from inplace.core.bus.topics import ensure_topics
from inplace.core.settings import Settings
from inplace.localinfra import KafkaBroker, PostgresCluster, free_port
from schemas import events as ev
from schemas.envelope import Envelope
from schemas.k8s import Pod, ResourceRequirements


def _pod(name: str) -> Pod:
    amounts = {"cpu": "100m", "memory": "128Mi"}
    container = {
        "name": "app",
        "image": "nginx",
        "resources": {"requests": amounts, "limits": amounts},
    }
    return Pod.model_validate(
        {
            "metadata": {"name": name, "namespace": "default", "uid": name},
            "spec": {"containers": [container]},
        }
    )


def _history(pods: int, resizes: int) -> list[Envelope]:
    out = [
        Envelope.wrap(
            ev.PodCreated(namespace="default", name=f"p-{i}", uid=f"p-{i}", pod=_pod(f"p-{i}")),
            producer="bench",
        )
        for i in range(pods)
    ]
    for r in range(resizes):
        for i in range(pods):
            want = ResourceRequirements.model_validate(
                {"requests": {"cpu": f"{100 + r}m"}, "limits": {"cpu": f"{100 + r}m"}}
            )
            ids = {"namespace": "default", "name": f"p-{i}", "uid": f"p-{i}"}
            steps: list[ev.EventPayload] = [
                ev.ResizeProposed(
                    **ids, containers=[ev.ContainerResources(name="app", resources=want)]
                ),
                ev.Allocated(
                    **ids,
                    node_name="n",
                    containers=[ev.ContainerAllocation(name="app", resources=want)],
                ),
                ev.ResizeStatusChanged(**ids, resize="InProgress"),
                ev.Actuated(
                    **ids,
                    node_name="n",
                    containers=[ev.ContainerActual(name="app", resources=want)],
                ),
                ev.ResizeStatusChanged(**ids, resize=None),
            ]
            out += [Envelope.wrap(s, producer="bench") for s in steps]
    return out


async def _publish(settings: Settings, envelopes: list[Envelope]) -> None:
    producer = EventProducer(settings.kafka_bootstrap, client_id="bench")
    await producer.start()
    try:
        for start in range(0, len(envelopes), 20_000):
            await producer.publish_many(envelopes[start : start + 20_000])
    finally:
        await producer.stop()


async def _wait_projected(dsn: str, events: int) -> None:
    """Until the projector's stored offsets cover the whole history."""
    while True:
        try:
            conn = await asyncpg.connect(dsn)
            try:
                done = await conn.fetchval(
                    "SELECT coalesce(sum(next_offset), 0) FROM projection.consumer_offsets "
                    "WHERE consumer = 'projector'"
                )
            finally:
                await conn.close()
            if done >= events:
                return
        except asyncpg.UndefinedTableError:
            pass  # the projector has not migrated yet
        await asyncio.sleep(1)


def _serve(role: str, env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "inplace.cli.main", "serve", role, "--port", str(port)], env=env
    )


def _ready(url: str, proc: subprocess.Popen[bytes], within: float = 1800) -> float:
    started = time.perf_counter()
    while time.perf_counter() - started < within:
        if proc.poll() is not None:
            raise SystemExit(f"exited with {proc.returncode}")
        try:
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                return time.perf_counter() - started
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise SystemExit("not ready")


def _consumed(url: str, role: str) -> int:
    text = httpx.get(f"{url}/metrics", timeout=10).text
    found = re.findall(
        rf'^inplace_events_consumed_total\{{role="{role}",[^}}]*\}} (\S+)$', text, re.M
    )
    return int(sum(float(v) for v in found))


def _rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+)", status).group(1)) / 1024  # type: ignore[union-attr]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pods", type=int, default=5000)
    parser.add_argument("--resizes", type=int, default=20, help="resize flows per pod")
    parser.add_argument("--roles", default="apiserver", help="comma separated roles to time")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="inplace-bench-restart-", dir="/tmp"))
    root.chmod(0o755)
    broker, database = KafkaBroker(root / "kafka"), PostgresCluster(root / "postgres")
    try:
        broker.start()
        database.start()
        database.create_database("inplace")
        settings = Settings(
            kafka_bootstrap=broker.bootstrap_servers, postgres_dsn=database.dsn("inplace")
        )
        asyncio.run(ensure_topics(settings))
        history = _history(args.pods, args.resizes)
        t = time.perf_counter()
        asyncio.run(_publish(settings, history))
        took = time.perf_counter() - t
        print(f"history: {len(history):,} events for {args.pods:,} pods, written in {took:.1f} s")
        env = {
            **os.environ,
            "INPLACE_KAFKA_BOOTSTRAP": broker.bootstrap_servers,
            "INPLACE_POSTGRES_DSN": database.dsn("inplace"),
            "INPLACE_QUOTA_URL": "",
            "INPLACE_LOG_LEVEL": "WARNING",
            "INPLACE_INSECURE_HTTP": "true",
        }
        projector = _serve("projector", env, free_port())
        t = time.perf_counter()
        asyncio.run(_wait_projected(database.dsn("inplace"), len(history)))
        projector.terminate()
        projector.wait(timeout=60)
        print(f"projector caught up in {time.perf_counter() - t:.1f} s")
        runs = [(role, "from the projection", "true") for role in args.roles.split(",")]
        if "apiserver" in args.roles.split(","):
            runs.append(("apiserver", "from offset 0", "false"))
        for role, label, snapshot in runs:
            port = free_port()
            proc = _serve(role, {**env, "INPLACE_APISERVER_START_FROM_PROJECTION": snapshot}, port)
            url = f"http://127.0.0.1:{port}"
            try:
                seconds = _ready(url, proc)
                read, rss = _consumed(url, role), _rss_mb(proc.pid)
                print(f"{role} {label}: ready in {seconds:.1f} s, {read:,} records read, ")
                print(f"  RSS {rss:.0f} MB")
            finally:
                proc.terminate()
                proc.wait(timeout=30)
    finally:
        broker.stop()
        database.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
