"""`inplace load --chaos`: SIGKILL a random role process every few seconds, then judge
consistency.

Roles are found in /proc by their command line (`inplace.cli.main serve <role>`, or the
`inplace serve <role>` script) *and* their environment: only processes started for this
cluster (same INPLACE_KAFKA_BOOTSTRAP and INPLACE_TOPIC_PREFIX) are ever killed, so another
cluster or test run on the machine is never touched. Whoever started the roles restarts them
(`inplace up` supervises its children).

A role may run as several processes (`inplace up --kubelets 2 --apiservers 2`): each process is
told apart by its role and `--port`, the one a restart keeps. Kills rotate over the roles, and
within a role over its processes (the least killed first), so every replica gets its turn; a role
of several processes is only hit while all of them run and answer /readyz, so a kill takes one
replica down and the others keep serving (that is the point of several). After the injection,
`wait_recovered` waits for every process seen at the start.

The verdict: every injected resize reached a final state (cleared with actual == desired, or
Deferred / Infeasible), no transition was lost or duplicated (per correlation id one proposal,
at most one Allocated, each status at most once), every process seen at the start is back and
ready, and the live projection equals a rebuild of the log
(`inplace.core.projection.replay.rebuild`).
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg
import httpx

from inplace.core.bus.consumer import LogReader
from inplace.core.projection.replay import rebuild
from inplace.core.settings import Settings
from inplace.core.store.migrations import drop_schema
from inplace.load.tracker import Trace, Tracker, projected_offsets
from inplace.localinfra.ports import pid_alive

DEFAULT_BOOTSTRAP = Settings.model_fields["kafka_bootstrap"].default


class ChaosError(RuntimeError):
    """Chaos cannot run (no role of this cluster found); one line."""


@dataclass(frozen=True)
class Proc:
    """One role process as a restart keeps it: its role and its --port (None: none given, then
    the processes of that role without a port are only counted)."""

    role: str
    port: int | None

    def __str__(self) -> str:
        return self.role if self.port is None else f"{self.role}:{self.port}"


def _order(proc: Proc) -> tuple[str, int]:
    return proc.role, -1 if proc.port is None else proc.port


@dataclass(frozen=True)
class RolePid:
    role: str
    pid: int
    port: int | None

    @property
    def proc(self) -> Proc:
        return Proc(self.role, self.port)


def _role_of(args: list[str]) -> tuple[str, int | None] | None:
    """(role, --port) when `args` is `… inplace.cli.main serve ROLE …` or `…/inplace serve …`."""
    for i, arg in enumerate(args[:-2]):
        if (arg == "inplace.cli.main" or Path(arg).name == "inplace") and args[i + 1] == "serve":
            port = None
            if "--port" in args[i + 3 :]:
                at = args.index("--port", i + 3)
                if at + 1 < len(args) and args[at + 1].isdigit():
                    port = int(args[at + 1])
            return args[i + 2], port
    return None


def _environ(raw: bytes) -> dict[str, str]:
    pairs = (item.decode(errors="replace").partition("=") for item in raw.split(b"\0") if item)
    return {k: v for k, _, v in pairs}


def find_roles(bootstrap: str, topic_prefix: str, *, proc: Path = Path("/proc")) -> list[RolePid]:
    """Live role processes of the cluster at `bootstrap` with topic prefix `topic_prefix`."""
    found: list[RolePid] = []
    me = os.getpid()
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            args = [
                a.decode(errors="replace") for a in (entry / "cmdline").read_bytes().split(b"\0")
            ]
            role = _role_of(args)
            if role is None:
                continue
            env = _environ((entry / "environ").read_bytes())
        except OSError:
            continue  # gone, or not ours to read
        if env.get("INPLACE_KAFKA_BOOTSTRAP", DEFAULT_BOOTSTRAP) != bootstrap:
            continue
        if env.get("INPLACE_TOPIC_PREFIX", "") != topic_prefix:
            continue
        pid = int(entry.name)
        if pid_alive(pid):
            found.append(RolePid(role[0], pid, role[1]))
    return sorted(found, key=lambda r: (r.role, r.pid))


@dataclass(frozen=True)
class Kill:
    at: float
    role: str
    pid: int
    port: int | None = None

    @property
    def proc(self) -> Proc:
        return Proc(self.role, self.port)


@dataclass
class Chaos:
    """Kills a random role process of this cluster every `interval` seconds while `run` runs."""

    bootstrap: str
    topic_prefix: str
    interval: float = 5.0
    seed: int = 0
    roles: tuple[str, ...] | None = None  # None: every role found
    proc: Path = Path("/proc")
    kills: list[Kill] = field(default_factory=list)
    # Every process seen at the start → how many of it (more than 1 only without --port).
    expected: dict[Proc, int] = field(default_factory=dict)
    unrecovered: list[str] | None = None  # what `wait_recovered` still missed (None: not run)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    @property
    def role_names(self) -> list[str]:
        return sorted({p.role for p in self.expected})

    def _candidates(self) -> list[RolePid]:
        found = find_roles(self.bootstrap, self.topic_prefix, proc=self.proc)
        return [r for r in found if self.roles is None or r.role in self.roles]

    def discover(self) -> dict[Proc, int]:
        found = self._candidates()
        if not found:
            raise ChaosError(
                f"no role process of this cluster (bootstrap {self.bootstrap}, topic prefix "
                f"{self.topic_prefix!r}) found in {self.proc}; is `inplace up` running?"
            )
        counted = Counter(r.proc for r in found)
        self.expected = {p: counted[p] for p in sorted(counted, key=_order)}
        return self.expected

    def _missing(self, alive: list[RolePid]) -> list[Proc]:
        """The expected processes not in /proc right now."""
        counted = Counter(r.proc for r in alive)
        return [p for p, n in self.expected.items() if counted[p] < n]

    async def _eligible(
        self, candidates: list[RolePid], client: httpx.AsyncClient
    ) -> list[RolePid]:
        """The processes that may be killed now: a role of one process whenever it runs; a role
        of several only while every one of them runs and answers, so a kill leaves the others
        serving."""
        several = {r for r, n in Counter(p.role for p in self.expected).items() if n > 1}
        several |= {r for r, n in Counter(c.role for c in candidates).items() if n > 1}
        down = {p.role for p in self._missing(candidates)}
        serving: dict[str, bool] = {}
        for role in sorted(several - down):
            ports = sorted({c.port for c in candidates if c.role == role and c.port is not None})
            serving[role] = all([await _ready(client, port) for port in ports])
        return [c for c in candidates if c.role not in several or serving.get(c.role, False)]

    def _pick(self, eligible: list[RolePid]) -> RolePid:
        """A random role among those killed least so far, then a random process of it among
        those killed least: every role, and every replica of a role, gets its turn."""
        by_role = Counter(k.role for k in self.kills)
        fewest = min(by_role[r.role] for r in eligible)
        role = self._rng.choice(sorted({r.role for r in eligible if by_role[r.role] == fewest}))
        procs = [r for r in eligible if r.role == role]
        by_proc = Counter(k.proc for k in self.kills)
        least = min(by_proc[r.proc] for r in procs)
        return self._rng.choice([r for r in procs if by_proc[r.proc] == least])

    async def kill_one(self, client: httpx.AsyncClient) -> Kill | None:
        """SIGKILL one process (None when none may be killed right now)."""
        eligible = await self._eligible(self._candidates(), client)
        if not eligible:
            return None  # every role restarting right now
        victim = self._pick(eligible)
        try:
            os.kill(victim.pid, signal.SIGKILL)
        except ProcessLookupError:
            return None
        kill = Kill(time.time(), victim.role, victim.pid, victim.port)
        self.kills.append(kill)
        return kill

    async def run(self) -> None:
        """SIGKILL one role process every `interval` seconds until cancelled."""
        if not self.expected:
            self.discover()
        async with _probe() as client:
            while True:
                await asyncio.sleep(self.interval)
                await self.kill_one(client)

    async def wait_recovered(
        self, within: float = 120.0, *, client: httpx.AsyncClient | None = None
    ) -> list[str]:
        """Wait until every process seen at the start runs again and answers /readyz; returns
        those still missing (`role:port`) when `within` ran out."""
        if client is None:
            async with _probe() as probe:
                return await self.wait_recovered(within, client=probe)
        deadline = time.monotonic() + within
        while True:
            missing = [str(p) for p in self._missing(self._candidates())]
            for p in self.expected:
                if p.port is not None and str(p) not in missing:
                    if not await _ready(client, p.port):
                        missing.append(str(p))
            if not missing or time.monotonic() > deadline:
                self.unrecovered = missing
                return missing
            await asyncio.sleep(0.5)


def _probe() -> httpx.AsyncClient:
    # /readyz is anonymous; the apiserver serves it over HTTPS (a local probe of a process
    # we found in /proc: its certificate is not what is being checked here).
    return httpx.AsyncClient(timeout=2.0, verify=False)


async def _ready(client: httpx.AsyncClient, port: int) -> bool:
    for scheme in ("http", "https"):
        try:
            return (await client.get(f"{scheme}://127.0.0.1:{port}/readyz")).status_code == 200
        except httpx.HTTPError:
            continue
    return False


# --- the verdict ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


@dataclass
class Verdict:
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def as_dict(self) -> dict[str, object]:
        return {
            "ok": self.ok,
            "checks": [{"name": c.name, "ok": c.ok, "detail": c.detail} for c in self.checks],
        }


def _few(traces: list[Trace]) -> str:
    names = ", ".join(f"{t.correlation_id} ({t.pod})" for t in traces[:5])
    more = f" and {len(traces) - 5} more" if len(traces) > 5 else ""
    return f"{len(traces)}: {names}{more}"


def chaos_check(chaos: Chaos) -> Check:
    """A chaos run that killed nothing proved nothing: say so instead of passing."""
    if not chaos.kills:
        return Check(
            "chaos killed a role",
            False,
            f"no role was killed: the injection ended before the first kill (one every "
            f"{chaos.interval:g}s); give it more --resizes, a --rate, or a shorter "
            "--chaos-interval",
        )
    killed = Counter(k.role for k in chaos.kills)
    procs = Counter(p.role for p in chaos.expected)
    hit = {role: len({k.proc for k in chaos.kills if k.role == role}) for role in killed}

    def one(role: str, n: int) -> str:
        if procs[role] > 1:  # several replicas: say how many of them were hit
            return f"{role} x{n} ({hit[role]} of {procs[role]} processes)"
        return f"{role} x{n}"

    each = ", ".join(one(role, n) for role, n in sorted(killed.items()))
    return Check("chaos killed a role", True, f"{len(chaos.kills)} SIGKILLs: {each}")


def recovery_check(chaos: Chaos) -> Check:
    """Every process seen at the start ran again and answered /readyz after the injection."""
    name = "every killed process came back"
    everyone = ", ".join(str(p) for p in chaos.expected)
    if chaos.unrecovered is None:
        return Check(name, False, "not waited for")
    if chaos.unrecovered:
        return Check(name, False, "not back and ready: " + ", ".join(chaos.unrecovered))
    return Check(name, True, f"{len(chaos.expected)} ready: {everyone}")


def log_checks(tracker: Tracker) -> list[Check]:
    """What the log says about every resize of the run."""
    traces = tracker.proposed()
    pending = [t for t in traces if t.outcome in ("pending", "superseded")]
    completed = [t for t in traces if t.outcome == "completed"]
    waiting = [t for t in traces if t.outcome in ("deferred", "infeasible")]
    mismatched = [t for t in completed if t.actual != t.desired or "actuated" not in t.times]
    double_alloc = [t for t in traces if t.counts["allocated"] > 1]
    statuses = ("proposed", "in_progress", "deferred", "infeasible", "cleared")
    duplicated = [t for t in traces if any(t.counts[m] > 1 for m in statuses)]
    alloc_waiting = [t for t in waiting if t.counts["allocated"]]
    no_in_progress = sum(1 for t in completed if "in_progress" not in t.times)
    checks = [
        Check(
            "every injected resize reached a final state",
            not pending,
            f"{len(traces)} injected, all final" if not pending else f"not final {_few(pending)}",
        ),
        Check(
            "completed resizes: actual == desired",
            not mismatched,
            f"{len(completed)} completed" if not mismatched else _few(mismatched),
        ),
        Check(
            "at most one Allocated per proposal",
            not double_alloc and not alloc_waiting,
            "ok" if not double_alloc and not alloc_waiting else _few(double_alloc + alloc_waiting),
        ),
        Check(
            "no state transition duplicated",
            not duplicated,
            "ok" if not duplicated else _few(duplicated),
        ),
        Check(
            "no state transition lost",
            not [t for t in completed if "allocated" not in t.times],
            f"ok ({no_in_progress} completed without an InProgress status: applied within "
            "the kubelet's sync, their allocation, actual resources and completion in one "
            "record; or a kubelet restart between Allocated and InProgress)"
            if no_in_progress
            else "ok",
        ),
    ]
    return checks


async def wait_projector(settings: Settings, within: float = 120.0) -> bool:
    """Until the projection's stored offsets reach the log's end on every partition."""
    async with LogReader(settings.kafka_bootstrap, role="load-verify") as reader:
        tps = await reader.partitions(settings.event_topics())
        ends = await reader.end_offsets(tps)
    target = {(tp.topic, tp.partition): off for tp, off in ends.items() if off > 0}
    deadline = time.monotonic() + within
    while True:
        try:
            stored = await projected_offsets(settings)
        except OSError:
            stored = {}
        if all(stored.get(k, 0) >= v for k, v in target.items()):
            return True
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.5)


async def projection_check(settings: Settings, run: str, within: float = 120.0) -> Check:
    """Once the projector caught up, rebuild the log into a scratch schema and compare."""
    name = "projections equal a rebuild"
    if not await wait_projector(settings, within):
        return Check(name, False, f"the projector did not catch up with the log in {within:.0f}s")
    shadow = f"load_verify_{run.replace('-', '_')}"[:63]
    report = await rebuild(
        settings.postgres_dsn,
        settings.kafka_bootstrap,
        live_schema=settings.projection_schema,
        shadow_schema=shadow,
        topic_prefix=settings.topic_prefix,
    )
    conn = await asyncpg.connect(settings.postgres_dsn)
    try:
        await drop_schema(conn, shadow)
    finally:
        await conn.close()
    same = report.live_checksum == report.rebuilt_checksum
    detail = (
        f"{report.events} events replayed in {report.seconds:.1f}s; checksum "
        f"{report.rebuilt_checksum[:16]}… {'==' if same else '!='} live "
        f"{(report.live_checksum or 'none')[:16]}…"
    )
    return Check(name, same, detail)
