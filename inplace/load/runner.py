"""One load run from start to end: plan, follow the log, create the workload, inject the
resizes (with chaos if asked), wait until they settle, judge, report.

Every phase is bounded: setup by `setup_timeout`, injection by `duration` and the resize count,
the wait for results by `drain_timeout`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Coroutine
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from inplace.core.bus.producer import EventProducer
from inplace.core.observability import gcpauses
from inplace.core.security.kubeconfig import Endpoint
from inplace.core.settings import Settings
from inplace.load import cpu
from inplace.load import report as rep
from inplace.load.chaos import (
    Chaos,
    Verdict,
    chaos_check,
    log_checks,
    projection_check,
    recovery_check,
)
from inplace.load.cpu import CpuSnapshot
from inplace.load.driver import Chains, Driver, DriverStats, Mode, SetupError, setup
from inplace.load.http import HttpClient, PooledClient
from inplace.load.plan import LoadPlan, Mix, make_plan
from inplace.load.tracker import SETTLED, Tracker, sample_projector_lag
from schemas.keys import object_key


@dataclass
class LoadConfig:
    settings: Settings
    api: str = "http://127.0.0.1:8080"
    credentials: Endpoint | None = None  # from the kubeconfig: CA, client certificate/token
    mode: Mode = "api"
    nodes: int = 1000
    pods: int = 50_000
    resizes: int = 10_000
    rate: float | None = None
    duration: float = 300.0
    seed: int = 0
    mix: Mix = field(default_factory=Mix)
    concurrency: int = 64
    chaos: bool = False
    chaos_interval: float = 5.0
    chaos_roles: tuple[str, ...] | None = None
    verify: bool = False  # compare projections with a rebuild (always with chaos)
    out: Path = Path(".inplace/load")
    setup_timeout: float = 600.0
    drain_timeout: float = 120.0
    run_id: str | None = None


@dataclass
class LoadResult:
    report: dict[str, Any]
    json_path: Path
    png_path: Path
    verdict: Verdict

    @property
    def ok(self) -> bool:
        return self.verdict.ok


class LoadRun:
    """A run's state, readable while it runs (`counters` feeds a progress bar)."""

    def __init__(self, config: LoadConfig) -> None:
        self.config = config
        self.id = config.run_id or f"load-{uuid.uuid4().hex[:6]}"
        self.plan: LoadPlan = make_plan(
            nodes=config.nodes,
            pods=config.pods,
            resizes=config.resizes,
            seed=config.seed,
            mix=config.mix,
            namespace=self.id,
        )
        self.chains = Chains(self.plan, f"{self.id}-r")
        self.tracker = Tracker(self.chains.prefix, self.id, on_settled=self._settled)
        self.stats = DriverStats()
        self.phase = "starting"
        self.nodes_created = 0
        self.pods_created = 0
        self.settled = 0
        self.phases: dict[str, float] = {}
        self.projector_lag: list[tuple[float, int]] = []
        self.chaos: Chaos | None = None
        self.cpu_start: CpuSnapshot | None = None
        self.cpu_end: CpuSnapshot | None = None

    def _settled(self, cid: str, outcome: str) -> None:
        self.settled += 1
        self.chains.settled(cid)

    def counters(self) -> dict[str, tuple[int, int]]:
        p = self.plan
        return {
            "nodes created": (self.nodes_created, len(p.nodes)),
            "pods created": (self.pods_created, len(p.pods)),
            "pods running": (len(self.tracker.running), len(p.pods)),
            "resizes sent": (self.stats.sent + self.stats.errors, len(p.resizes)),
            "resizes settled": (self.settled, len(p.resizes)),
        }

    # --- the run ------------------------------------------------------------------------------

    async def run(self) -> LoadResult:
        # The tracker and the plan hold every pod and resize of the run, which CPython's
        # thresholds would walk again and again, on the cluster's cores (gcpauses.py).
        with gcpauses.policy():
            return await self._run()

    async def _run(self) -> LoadResult:
        c = self.config
        started = datetime.now(UTC)
        background: list[asyncio.Task[None]] = []

        def spawn(coro: Coroutine[Any, Any, None]) -> None:
            background.append(asyncio.create_task(coro))

        try:
            followed = asyncio.Event()
            spawn(
                self.tracker.follow(c.settings.kafka_bootstrap, c.settings.topic("pods"), followed)
            )
            spawn(sample_projector_lag(c.settings, self.projector_lag))
            await _first(followed.wait(), background[0])
            if c.chaos:
                self.chaos = Chaos(
                    c.settings.kafka_bootstrap,
                    c.settings.topic_prefix,
                    interval=c.chaos_interval,
                    seed=c.seed,
                    roles=c.chaos_roles,
                )
                self.chaos.discover()
            async with PooledClient(
                c.api, concurrency=c.concurrency, credentials=c.credentials
            ) as client:
                uids = await self._setup(client)
                await self._inject(client, uids)
            await self._drain()
            verdict = await self._judge()
        finally:
            for task in background:
                task.cancel()
            await asyncio.gather(*background, return_exceptions=True)
        return self._report(started, verdict)

    async def _timed(self, phase: str, coro: Coroutine[Any, Any, Any]) -> Any:
        self.phase = phase
        t0 = time.monotonic()
        try:
            return await coro
        finally:
            self.phases[phase] = round(time.monotonic() - t0, 3)

    async def _setup(self, client: HttpClient) -> dict[str, str]:
        c = self.config

        def node_done() -> None:
            self.nodes_created += 1

        def pod_done() -> None:
            self.pods_created += 1

        try:
            uids: dict[str, str] = await asyncio.wait_for(
                self._timed(
                    "setup",
                    setup(
                        client,
                        self.plan,
                        self.id,
                        concurrency=c.concurrency,
                        on_node=node_done,
                        on_pod=pod_done,
                    ),
                ),
                c.setup_timeout,
            )
            await self._timed("pods running", self._pods_running(c.setup_timeout))
        except TimeoutError:
            raise SetupError(f"setup did not finish within {c.setup_timeout:.0f}s") from None
        return uids

    async def _pods_running(self, within: float) -> None:
        want = {object_key(self.id, p.name) for p in self.plan.pods}
        deadline = time.monotonic() + within
        while not want <= self.tracker.running:
            failed = [k for k in want if k in self.tracker.failed]
            if failed:
                raise SetupError(
                    f"{len(failed)} pod(s) failed admission, e.g. {failed[0]}: "
                    f"{self.tracker.failed[failed[0]]}"
                )
            if time.monotonic() > deadline:
                missing = len(want - self.tracker.running)
                raise SetupError(
                    f"{missing} pod(s) not Running after {within:.0f}s: is a kubelet running "
                    "(it adopts nodes annotated inplace.io/simulated=true)?"
                )
            await asyncio.sleep(0.1)

    async def _inject(self, client: HttpClient, uids: dict[str, str]) -> None:
        c = self.config
        producer = None
        if c.mode == "log":
            producer = EventProducer(
                c.settings.kafka_bootstrap,
                client_id="inplace-load",
                topic_prefix=c.settings.topic_prefix,
            )
            await producer.start()
        driver = Driver(
            self.plan,
            self.chains,
            mode=c.mode,
            rate=c.rate,
            concurrency=c.concurrency,
            client=client,
            producer=producer,
            uids=uids,
            landed=self.tracker.has_proposal,
        )
        driver.stats = self.stats
        self.cpu_start = self._cpu()
        chaos_task = asyncio.create_task(self.chaos.run()) if self.chaos else None
        try:
            await self._timed("inject", driver.run(time.monotonic() + c.duration))
        finally:
            if chaos_task is not None:
                chaos_task.cancel()
                await asyncio.gather(chaos_task, return_exceptions=True)
            if producer is not None:
                await producer.stop()

    def _cpu(self) -> CpuSnapshot:
        settings = self.config.settings
        return cpu.snapshot(settings.kafka_bootstrap, settings.topic_prefix, time.monotonic())

    def _cpu_usage(self, outcomes: dict[str, int]) -> dict[str, dict[str, float]]:
        """CPU per role from the first resize until the last one settled."""
        if self.cpu_start is None or self.cpu_end is None:
            return {}
        settled = sum(outcomes.get(k, 0) for k in SETTLED)
        return cpu.usage(self.cpu_start, self.cpu_end, settled)

    def _unsettled(self) -> int:
        return sum(
            1
            for t in self.tracker.proposed()
            if t.outcome not in SETTLED and t.outcome != "superseded"
        )

    async def _drain(self) -> None:
        c = self.config

        async def drain() -> None:
            if self.chaos is not None:
                self.phase = "roles recovering"
                await self.chaos.wait_recovered(c.drain_timeout)
                self.phase = "drain"
            deadline = time.monotonic() + c.drain_timeout
            grace = time.monotonic() + 5.0
            while time.monotonic() < deadline:
                if time.monotonic() > grace:
                    # Cut off by the deadline before the API answered, and not in the log.
                    proposed = {t.correlation_id for t in self.tracker.proposed()}
                    for cid in list(self.chains.inflight):
                        if cid not in self.stats.confirmed and cid not in proposed:
                            self.chains.inflight.discard(cid)
                if not self.chains.inflight and not self._unsettled():
                    return
                await asyncio.sleep(0.1)

        await self._timed("drain", drain())
        self.cpu_end = self._cpu()

    async def _judge(self) -> Verdict:
        c = self.config
        verdict = Verdict(log_checks(self.tracker))
        if self.chaos is not None:
            verdict.checks.append(chaos_check(self.chaos))
            verdict.checks.append(recovery_check(self.chaos))
        if c.chaos or c.verify:
            check = await self._timed(
                "verify", projection_check(c.settings, self.id, c.drain_timeout)
            )
            verdict.checks.append(check)
        return verdict

    # --- the report ---------------------------------------------------------------------------

    def _report(self, started: datetime, verdict: Verdict) -> LoadResult:
        c = self.config
        out = c.out.absolute()
        json_path, png_path = out / f"{self.id}.json", out / f"{self.id}.png"
        outcomes = self.tracker.outcomes()
        traces = self.tracker.proposed()
        unexpected = sum(
            1
            for t in traces
            if t.outcome in SETTLED
            and (plan := self.chains.by_cid.get(t.correlation_id)) is not None
            and plan.expect != t.outcome
        )
        expected = {k: 0 for k in SETTLED}
        for t in traces:
            plan = self.chains.by_cid.get(t.correlation_id)
            if plan is not None:
                expected[plan.expect] += 1
        tracker_lag = [n for _, n in self.tracker.lag]
        projector_lag = [n for _, n in self.projector_lag]
        report: dict[str, Any] = {
            "run": {
                "id": self.id,
                "mode": c.mode,
                "seed": c.seed,
                "nodes": len(self.plan.nodes),
                "pods": len(self.plan.pods),
                "resizes": len(self.plan.resizes),
                "rate": c.rate,
                "duration_limit_s": c.duration,
                "concurrency": c.concurrency,
                "api": c.api,
                "namespace": self.plan.namespace,
                "started": started.isoformat(),
                "finished": datetime.now(UTC).isoformat(),
            },
            "phases_s": self.phases,
            "cpu": self._cpu_usage(outcomes),
            "counts": {
                "planned": len(self.plan.resizes),
                "sent": self.stats.sent,
                "errors": self.stats.errors,
                "skipped": self.stats.skipped,
                "injected": len(traces),
                "completed": outcomes.get("completed", 0),
                "deferred": outcomes.get("deferred", 0),
                "infeasible": outcomes.get("infeasible", 0),
                "pending": outcomes.get("pending", 0),
                "superseded": outcomes.get("superseded", 0),
                "unexpected": unexpected,
            },
            "expected": expected,
            "throughput": rep.throughput(self.tracker),
            "stages": {
                name: s.as_ms()
                for name, s in rep.stages_of(self.tracker, self.stats.request_seconds).items()
            },
            "lag": {
                "tracker_max_records": max(tracker_lag, default=0),
                "tracker_last_records": tracker_lag[-1] if tracker_lag else 0,
                "projector_max_records": max(projector_lag, default=0),
                "projector_last_records": projector_lag[-1] if projector_lag else 0,
            },
            "errors": {
                "total": self.stats.errors,
                "retries": self.stats.retries,
                "retry_kinds": dict(self.stats.retry_kinds.most_common()),
                "kinds": dict(self.stats.error_kinds.most_common()),
            },
            "chaos": None
            if self.chaos is None
            else {
                "interval_s": c.chaos_interval,
                "roles": self.chaos.role_names,
                "processes": [
                    {"role": p.role, "port": p.port, "count": n}
                    for p, n in self.chaos.expected.items()
                ],
                "unrecovered": self.chaos.unrecovered,
                "kills": [
                    {
                        "at": datetime.fromtimestamp(k.at, UTC).isoformat(),
                        "role": k.role,
                        "port": k.port,
                        "pid": k.pid,
                    }
                    for k in self.chaos.kills
                ],
            },
            "verdict": verdict.as_dict(),
            "files": {"json": str(json_path), "png": str(png_path)},
        }
        rep.write_json(report, json_path)
        rep.plot(self.tracker, png_path, f"inplace load {self.id}: {c.mode} mode")
        return LoadResult(report, json_path, png_path, verdict)


async def _first(wait: Coroutine[Any, Any, Any], task: asyncio.Task[None]) -> None:
    """Wait for `wait`, unless `task` fails first (then raise its error)."""
    waiter = asyncio.ensure_future(wait)
    await asyncio.wait([waiter, task], return_when=asyncio.FIRST_COMPLETED)
    if not waiter.done():
        waiter.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await waiter
        task.result()
        raise RuntimeError("the log tracker stopped before it started")


async def run_load(config: LoadConfig) -> LoadResult:
    return await LoadRun(config).run()
