"""Closed-loop resize latency and throughput, as a controller (VPA-like) drives it.

C clients each PATCH `pods/{name}/resize` (cpu requests = limits, alternating between two
values), then wait until one shared watch on the pods shows that resize done (the container's
status resources equal the new spec and no PodResizePending / PodResizeInProgress condition),
then take the next pod. Prints resizes/s, PATCH p50/p99, end-to-end p50/p99 and the CPU each
role spent per resize. Starts its own throwaway cluster (`bench.cluster`). Not a test.

    .venv/bin/python -m bench.closed_loop                       # 200 pods, 8 clients, TLS
    .venv/bin/python -m bench.closed_loop --insecure-http --resizes 5000
    .venv/bin/python -m bench.closed_loop --py-spy /tmp/api.svg  # profile the apiserver

Issue 16's reference: a real kube-apiserver + etcd did 260-270 resizes/s closed loop on this
2-core machine, p50 27 ms, p99 64 ms; its PATCH …/resize p50 11 ms, p99 35 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import statistics
import subprocess
import sys
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench.cluster import throwaway_cluster
from inplace.core.bus.consumer import LogReader
from inplace.core.security.kubeconfig import Endpoint
from inplace.core.settings import Settings
from inplace.load import cpu
from inplace.load.chaos import find_roles
from inplace.load.driver import setup
from inplace.load.http import PooledClient
from inplace.load.plan import CONTAINER, LoadPlan, make_plan
from schemas import events as ev
from schemas.quantity import Quantity

NAMESPACE = "closed-loop"
SMP = {"content-type": "application/strategic-merge-patch+json"}
RESIZE_CONDITIONS = frozenset({"PodResizePending", "PodResizeInProgress"})
STEP_M = 100  # each pod alternates between its planned cpu and this much more


def _container(items: list[dict[str, Any]] | None) -> dict[str, Any]:
    return next((c for c in items or [] if c.get("name") == CONTAINER), {})


def _cpu_is(resources: dict[str, Any] | None, want: Quantity) -> bool:
    resources = resources or {}
    for part in ("requests", "limits"):
        value = (resources.get(part) or {}).get("cpu")
        if value is None or Quantity(value) != want:
            return False
    return True


def resize_done(pod: dict[str, Any], cpu_value: Quantity) -> bool:
    """The resize to `cpu_value` is actuated: spec and the container's status resources both
    say so, and no resize condition is left (Kubernetes 1.33+: done = no condition)."""
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    if not _cpu_is(_container(spec.get("containers")).get("resources"), cpu_value):
        return False
    if not _cpu_is(_container(status.get("containerStatuses")).get("resources"), cpu_value):
        return False
    return not any(c.get("type") in RESIZE_CONDITIONS for c in status.get("conditions") or [])


class PodWatch:
    """One watch on the namespace's pods, shared by every client, as a controller has one
    informer: keeps each pod's last object and wakes whoever waits on a condition of it."""

    def __init__(self, client: httpx.AsyncClient, namespace: str) -> None:
        self.client = client
        self.namespace = namespace
        self.pods: dict[str, dict[str, Any]] = {}
        self.events = 0
        self._waiters: dict[str, tuple[Quantity, asyncio.Future[float]]] = {}
        self._changed = asyncio.Event()

    async def run(self, started: asyncio.Event) -> None:
        base = f"/api/v1/namespaces/{self.namespace}/pods"
        listed = (await self.client.get(base)).raise_for_status().json()
        for pod in listed["items"]:
            self.pods[pod["metadata"]["name"]] = pod
        rv = listed["metadata"]["resourceVersion"]
        params = {"watch": "true", "resourceVersion": rv, "allowWatchBookmarks": "false"}
        async with self.client.stream("GET", base, params=params, timeout=None) as response:
            response.raise_for_status()
            started.set()
            async for line in _lines(response):
                event = json.loads(line)
                pod = event["object"]
                name = pod["metadata"]["name"]
                self.events += 1
                if event["type"] == "DELETED":
                    self.pods.pop(name, None)
                    continue
                self.pods[name] = pod
                self._changed.set()
                waiting = self._waiters.get(name)
                if waiting is not None and resize_done(pod, waiting[0]):
                    del self._waiters[name]
                    if not waiting[1].done():
                        waiting[1].set_result(time.perf_counter())

    def expect(self, name: str, cpu_value: Quantity) -> asyncio.Future[float]:
        """A future set (to the perf_counter time it was seen) once `name`'s resize to
        `cpu_value` is done; ask before the PATCH so no event can slip past."""
        future: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self._waiters[name] = (cpu_value, future)
        return future

    async def all_running(self, names: list[str], within: float) -> None:
        deadline = time.monotonic() + within
        while True:
            running = sum(
                1
                for n in names
                if (self.pods.get(n) or {}).get("status", {}).get("phase") == "Running"
            )
            if running == len(names):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(names) - running} pod(s) not Running after {within}s")
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), 1.0)


async def _lines(response: httpx.Response) -> AsyncIterator[bytes]:
    """Newline-delimited JSON from a byte stream (httpx's aiter_lines decodes to str first)."""
    pending = b""
    async for chunk in response.aiter_bytes():
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for line in complete:
            if line:
                yield line


@dataclass
class Results:
    sent_at: dict[str, float] = field(default_factory=dict)  # correlation id → time.time()
    patch_s: list[float] = field(default_factory=list)
    end_to_end_s: list[float] = field(default_factory=list)
    errors: int = 0
    timeouts: int = 0


def _patch(cpu_value: str) -> dict[str, Any]:
    resources = {"requests": {"cpu": cpu_value}, "limits": {"cpu": cpu_value}}
    return {"spec": {"containers": [{"name": CONTAINER, "resources": resources}]}}


async def closed_loop(
    client: PooledClient,
    watch: PodWatch,
    plan: LoadPlan,
    *,
    clients: int,
    resizes: int,
    warmup: int,
    patience: float,
    on_measured: Callable[[], None] = lambda: None,
) -> tuple[Results, float]:
    """Run `warmup` + `resizes` resizes; (results of the measured ones, their wall time).
    `on_measured` is called as the measured ones begin."""
    base_cpu = {p.name: p.resources.cpu_m for p in plan.pods}
    current = dict(base_cpu)
    free: deque[str] = deque(p.name for p in plan.pods)
    results = Results()
    issued = 0
    measured_start = [0.0]
    measured_started = asyncio.Event()
    if warmup == 0:
        measured_start[0] = time.perf_counter()
        measured_started.set()
        on_measured()

    async def one_client() -> None:
        nonlocal issued
        while issued < warmup + resizes:
            n = issued
            issued += 1
            if n == warmup and not measured_started.is_set():
                measured_start[0] = time.perf_counter()
                measured_started.set()
                on_measured()
            name = free.popleft()
            target = base_cpu[name] + STEP_M if current[name] == base_cpu[name] else base_cpu[name]
            text = f"{target}m"
            done = watch.expect(name, Quantity(text))
            t0 = time.perf_counter()
            cid = f"closed-loop-{n}"
            if n >= warmup:
                results.sent_at[cid] = time.time()
            try:
                r = await client.request(
                    "PATCH",
                    f"/api/v1/namespaces/{plan.namespace}/pods/{name}/resize",
                    json=_patch(text),
                    headers={**SMP, "x-correlation-id": cid},
                )
            except httpx.HTTPError:
                results.errors += 1
                free.append(name)
                continue
            t_patch = time.perf_counter()
            if r.status_code != 200:
                results.errors += 1
                print(f"PATCH {name}: HTTP {r.status_code}: {r.text[:200]}")
                free.append(name)
                continue
            current[name] = target
            try:
                t_done = await asyncio.wait_for(done, patience)
            except TimeoutError:
                results.timeouts += 1
                free.append(name)
                continue
            if n >= warmup:
                results.patch_s.append(t_patch - t0)
                results.end_to_end_s.append(max(t_done, t_patch) - t0)
            free.append(name)

    await asyncio.gather(*(one_client() for _ in range(clients)))
    return results, time.perf_counter() - measured_start[0]


async def stages(settings: Settings, sent_at: dict[str, float]) -> None:
    """Where the end-to-end time goes: for each event type on the pods topic, the median
    time from the client's PATCH to the event's `time` (its writer's clock: one machine)."""
    async with LogReader(settings.kafka_bootstrap, role="bench") as reader:
        tps = await reader.partitions([settings.topic(ev.PODS)])
        ends = await reader.end_offsets(tps)
        after: dict[str, list[float]] = {}
        async for batch in reader.read({}, ends):
            for record in batch.records:
                env = record.envelope
                sent = sent_at.get(env.correlation_id)
                if sent is not None:
                    after.setdefault(env.type, []).append(env.time.timestamp() - sent)
    print("after the PATCH was sent (median ms, per event type, by its writer's clock):")
    for kind, values in sorted(after.items(), key=lambda kv: statistics.median(kv[1])):
        print(f"  {kind:<24} {statistics.median(values) * 1000:7.1f}   n={len(values)}")


def _pct(values: list[float], p: int) -> float:
    if len(values) < 2:
        return values[0] * 1000 if values else float("nan")
    return statistics.quantiles(values, n=100)[p - 1] * 1000


async def bench(
    api: str,
    credentials: Endpoint | None,
    settings: Settings,
    args: argparse.Namespace,
    infra: dict[int, str],
) -> None:
    """`infra`: the broker's and the database's pids → names, counted with the roles."""
    plan = make_plan(nodes=args.nodes, pods=args.pods, resizes=0, namespace=NAMESPACE)
    verify = credentials.ssl_context() if credentials else True
    headers = credentials.headers() if credentials else {}
    async with (
        PooledClient(api, concurrency=max(args.clients, 8), credentials=credentials) as client,
        httpx.AsyncClient(base_url=api, verify=verify, headers=headers, timeout=30) as watching,
    ):
        t = time.monotonic()
        await setup(client, plan, NAMESPACE, concurrency=16)
        if args.quota:  # every resize then goes through the quota role's admission webhook
            quota = {
                "metadata": {"name": "bench"},
                "spec": {"hard": {"requests.cpu": "100000", "limits.cpu": "100000"}},
            }
            r = await client.request(
                "POST", f"/api/v1/namespaces/{plan.namespace}/resourcequotas", json=quota
            )
            r.raise_for_status()
        watch = PodWatch(watching, plan.namespace)
        started = asyncio.Event()
        watch_task = asyncio.create_task(watch.run(started))
        await asyncio.wait_for(started.wait(), 30)
        await watch.all_running([p.name for p in plan.pods], within=120)
        print(f"{args.nodes} nodes, {args.pods} pods Running in {time.monotonic() - t:.1f}s")
        profiler = _py_spy(settings, args.py_spy, args.py_spy_role) if args.py_spy else None
        snapshots: list[cpu.CpuSnapshot] = []

        def measured() -> None:  # CPU from here: the measured resizes, not the warm-up
            snapshots.append(
                cpu.snapshot(
                    settings.kafka_bootstrap, settings.topic_prefix, time.monotonic(), extra=infra
                )
            )

        events_before = watch.events
        try:
            results, wall = await closed_loop(
                client,
                watch,
                plan,
                clients=args.clients,
                resizes=args.resizes,
                warmup=args.warmup,
                patience=args.patience,
                on_measured=measured,
            )
        finally:
            after = cpu.snapshot(
                settings.kafka_bootstrap, settings.topic_prefix, time.monotonic(), extra=infra
            )
            if profiler is not None:
                profiler.send_signal(signal.SIGINT)
                profiler.wait(60)
                print(f"py-spy profile of the {args.py_spy_role}: {args.py_spy}")
        watch_task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await watch_task
    done = len(results.end_to_end_s)
    print(
        f"closed loop: {args.clients} clients, {args.pods} pods, {done} resizes measured "
        f"(+{args.warmup} warm-up), {results.errors} errors, {results.timeouts} timeouts, "
        f"{watch.events - events_before} watch events"
    )
    print(f"throughput  {done / wall:8.1f} resizes/s over {wall:.1f}s")
    print(
        f"PATCH       p50 {_pct(results.patch_s, 50):6.1f} ms  p90 {_pct(results.patch_s, 90):6.1f}"
        f" ms  p99 {_pct(results.patch_s, 99):6.1f} ms"
    )
    e2e = results.end_to_end_s
    print(
        f"end to end  p50 {_pct(e2e, 50):6.1f} ms  p90 {_pct(e2e, 90):6.1f} ms  "
        f"p99 {_pct(e2e, 99):6.1f} ms"
    )
    # CPU over the measured resizes (those still in flight at the warm-up's end among them).
    before = snapshots[0] if snapshots else after
    print(f"CPU per resize (ms), {args.resizes} resizes, {after.at - before.at:.1f}s:")
    total = 0.0
    for role, use in cpu.usage(before, after, args.resizes).items():
        total += use["ms_per_resize"]
        print(f"  {role:<20} {use['ms_per_resize']:7.2f}   ({use['core_share']:.2f} of a core)")
    print(f"  {'all':<20} {total:7.2f}")
    if args.stages:
        await stages(settings, results.sent_at)


def _py_spy(settings: Settings, out: str, role: str) -> subprocess.Popen[bytes]:
    pid = next(
        r.pid for r in find_roles(settings.kafka_bootstrap, settings.topic_prefix) if r.role == role
    )
    # .json: speedscope; .txt: collapsed stacks (one line per stack, count last); else an svg
    fmt = {".json": "speedscope", ".txt": "raw"}.get(Path(out).suffix, "flamegraph")
    local = Path(sys.executable).parent / "py-spy"  # the venv's, when installed there
    return subprocess.Popen(
        [
            str(local) if local.exists() else "py-spy",
            "record",
            "-p",
            str(pid),
            "-o",
            out,
            "-f",
            fmt,
            "-r",
            "250",
            "--nonblocking",
        ],
        stdout=subprocess.DEVNULL,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=20)
    parser.add_argument("--pods", type=int, default=200)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--resizes", type=int, default=3000, help="measured resizes")
    parser.add_argument(
        "--warmup",
        type=int,
        default=6000,
        help="resizes before measuring (the cluster's broker JIT-compiles for its first tens "
        "of seconds: measure what a running cluster does)",
    )
    parser.add_argument("--patience", type=float, default=30.0, help="seconds per resize")
    parser.add_argument("--keep", action="store_true", help="keep the cluster's directory")
    parser.add_argument(
        "--quota", action="store_true", help="a ResourceQuota in the namespace (the webhook)"
    )
    parser.add_argument(
        "--stages", action="store_true", help="read the log after: when each event was written"
    )
    parser.add_argument(
        "--py-spy", metavar="OUT", help="record a role with py-spy (.svg, .json or .txt)"
    )
    parser.add_argument("--py-spy-role", default="apiserver", help="the role --py-spy records")
    parser.add_argument(
        "--insecure-http", action="store_true", help="plain HTTP, no authentication"
    )
    args = parser.parse_args()
    if args.py_spy:
        args.py_spy = str(Path(args.py_spy).resolve())
    with throwaway_cluster(
        secure=not args.insecure_http, keep=args.keep, prefix="inplace-bench-loop-"
    ) as (cluster, settings, credentials):
        infra = {cluster.broker.pid: "kafka", cluster.database.pid: "postgres"}
        asyncio.run(
            bench(
                cluster.api_url,
                credentials,
                settings,
                args,
                {pid: name for pid, name in infra.items() if pid is not None},
            )
        )


if __name__ == "__main__":
    main()
