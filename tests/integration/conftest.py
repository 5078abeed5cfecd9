"""Fixtures for tests against the real broker and database: isolated topics and database per
test, and the projector as a real process that can be SIGKILLed."""

from __future__ import annotations

import asyncio
import inspect
import os
import signal
import ssl
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from inplace.core.bus.consumer import LogReader
from inplace.core.bus.producer import EventProducer
from inplace.core.bus.topics import ensure_topics
from inplace.core.projection.store import ProjectionStore
from inplace.core.settings import Settings
from inplace.core.store.database import ensure_database
from inplace.localinfra import KafkaBroker, PostgresCluster, free_port
from schemas.envelope import Envelope

REPO = Path(__file__).resolve().parents[2]


def settings_env(settings: Settings) -> dict[str, str]:
    return {
        **os.environ,
        "INPLACE_KAFKA_BOOTSTRAP": settings.kafka_bootstrap,
        "INPLACE_POSTGRES_DSN": settings.postgres_dsn,
        "INPLACE_TOPIC_PREFIX": settings.topic_prefix,
        "INPLACE_PROJECTION_SCHEMA": settings.projection_schema,
        "INPLACE_PODS_PARTITIONS": str(settings.pods_partitions),
        "INPLACE_LOG_LEVEL": "INFO",
        # Plain HTTP on loopback; tests/integration/security runs the authenticated server.
        "INPLACE_INSECURE_HTTP": "true",
    }


@pytest.fixture
async def settings(kafka_broker: KafkaBroker, postgres_cluster: PostgresCluster) -> Settings:
    """A fresh cluster identity: its own topics (prefix) and its own database."""
    tag = uuid.uuid4().hex[:10]
    s = Settings(
        kafka_bootstrap=kafka_broker.bootstrap_servers,
        postgres_dsn=postgres_cluster.dsn(f"inplace_{tag}"),
        topic_prefix=f"t{tag}.",
        pods_partitions=4,
        nodes_partitions=2,
        policy_partitions=2,
        events_partitions=2,
    )
    await ensure_database(s.postgres_dsn)
    await ensure_topics(s)
    return s


@pytest.fixture
async def producer(settings: Settings) -> AsyncIterator[EventProducer]:
    p = EventProducer(settings.kafka_bootstrap, topic_prefix=settings.topic_prefix)
    await p.start()
    yield p
    await p.stop()


class RoleProcess:
    """`inplace serve <role>` as a real child process on a free port (SIGKILL-able)."""

    def __init__(
        self, role: str, settings: Settings, log: Path, ca: Path | None = None, **env: str
    ) -> None:
        """`ca`: the role serves HTTPS with a certificate this CA signed."""
        self.role = role
        self.settings = settings
        self.ca = ca
        self.port = free_port()
        self.log = log
        self.env = env
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"{'https' if self.ca else 'http'}://127.0.0.1:{self.port}"

    def client(self, **kwargs: Any) -> httpx.AsyncClient:
        """An HTTP client that trusts this role's certificate (no credentials of its own)."""
        verify = ssl.create_default_context(cafile=self.ca) if self.ca else True
        return httpx.AsyncClient(verify=verify, timeout=kwargs.pop("timeout", 10), **kwargs)

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "inplace.cli.main",
                    "serve",
                    self.role,
                    "--port",
                    str(self.port),
                ],
                env={**settings_env(self.settings), **self.env},
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=REPO,
            )

    async def ready(self, within: float = 60) -> None:
        deadline = asyncio.get_running_loop().time() + within
        restarts = 0
        async with self.client(timeout=2) as client:
            while True:
                if not self.alive():
                    if "cannot listen on" in self.log.read_text() and restarts < 3:
                        # Another process took the free port between free_port() and bind.
                        restarts += 1
                        self.port = free_port()
                        self.start()
                        continue
                    raise AssertionError(f"{self.role} exited: {self.log.read_text()[-3000:]}")
                try:
                    if (await client.get(f"{self.url}/readyz")).status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                if asyncio.get_running_loop().time() > deadline:
                    raise AssertionError(f"{self.role} not ready: {self.log.read_text()[-3000:]}")
                await asyncio.sleep(0.1)

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    async def healthz(self) -> int:
        async with self.client(timeout=2) as client:
            return (await client.get(f"{self.url}/healthz")).status_code


@pytest.fixture
def projector(settings: Settings, tmp_path: Path) -> Iterator[RoleProcess]:
    proc = RoleProcess("projector", settings, tmp_path / "projector.log")
    yield proc
    proc.stop()


async def end_offsets(settings: Settings) -> dict[tuple[str, int], int]:
    async with LogReader(settings.kafka_bootstrap) as reader:
        tps = await reader.partitions(settings.event_topics())
        return {(tp.topic, tp.partition): o for tp, o in (await reader.end_offsets(tps)).items()}


async def projected_offsets(settings: Settings) -> dict[tuple[str, int], int]:
    try:
        conn = await asyncpg.connect(settings.postgres_dsn)
    except OSError:
        return {}
    try:
        store = ProjectionStore(settings.projection_schema)
        try:
            stored = await store.offsets(conn)
        except asyncpg.UndefinedTableError:
            return {}
        return {(tp.topic, tp.partition): o for tp, o in stored.items()}
    finally:
        await conn.close()


async def wait_caught_up(
    settings: Settings, proc: RoleProcess | None = None, within: float = 120
) -> dict[tuple[str, int], int]:
    """Wait until the projection's stored offsets reach the end of every partition."""
    target = {k: v for k, v in (await end_offsets(settings)).items() if v > 0}
    deadline = asyncio.get_running_loop().time() + within
    while True:
        stored = await projected_offsets(settings)
        if all(stored.get(k, 0) >= v for k, v in target.items()):
            return stored
        if proc is not None and not proc.alive():
            raise AssertionError(f"projector exited: {proc.log.read_text()[-2000:]}")
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"projection not caught up: {stored} vs {target}")
        await asyncio.sleep(0.2)


async def project_log(
    settings: Settings,
    producer: EventProducer,
    projector: RoleProcess,
    history: Sequence[Envelope],
) -> None:
    """Publish `history`, then run the projector until the projection holds everything on
    the log and stop it: a snapshot for a role to start from."""
    await producer.publish_many(list(history))
    projector.start()
    await wait_caught_up(settings, projector)
    projector.stop()


@pytest.fixture
async def apiserver(settings: Settings, tmp_path: Path) -> AsyncIterator[RoleProcess]:
    """A running apiserver on this test's topics (quota admission off unless a test starts
    the quota service)."""
    proc = RoleProcess("apiserver", settings, tmp_path / "apiserver.log", INPLACE_QUOTA_URL="")
    proc.start()
    await proc.ready()
    yield proc
    proc.stop()


@pytest.fixture
async def replica_b(
    settings: Settings, tmp_path: Path, apiserver: RoleProcess
) -> AsyncIterator[RoleProcess]:
    """A second apiserver replica in front of the same log."""
    proc = RoleProcess("apiserver", settings, tmp_path / "apiserver-b.log", INPLACE_QUOTA_URL="")
    proc.start()
    await proc.ready()
    yield proc
    proc.stop()


@pytest.fixture
async def scheduler(
    settings: Settings, tmp_path: Path, apiserver: RoleProcess
) -> AsyncIterator[RoleProcess]:
    """A running scheduler next to the apiserver."""
    proc = RoleProcess("scheduler", settings, tmp_path / "scheduler.log")
    proc.start()
    await proc.ready()
    yield proc
    proc.stop()


async def metric(proc: RoleProcess, sample: str) -> float:
    """The value of one sample of a role's /metrics, e.g.
    `inplace_events_skipped_total{role="scheduler"}` (0 when it has none yet)."""
    async with proc.client(timeout=2) as client:
        text = (await client.get(f"{proc.url}/metrics")).text
    for line in text.splitlines():
        if line.startswith(sample + " "):
            return float(line.split()[-1])
    return 0.0


async def call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return await asyncio.to_thread(fn, *args, **kwargs)


async def until(
    probe: Callable[[], Any], ok: Callable[[Any], bool], what: str, within: float = 60.0
) -> Any:
    """Poll `probe` until `ok` holds for its value (a bounded wait, not a timing assertion).
    A blocking probe (the Kubernetes client) runs in a thread; a coroutine function is awaited,
    and so is a coroutine a plain callable returns (`lambda: get(...)`)."""
    deadline = asyncio.get_running_loop().time() + within
    while True:
        value = await probe() if inspect.iscoroutinefunction(probe) else await call(probe)
        if inspect.isawaitable(value):
            value = await value
        if ok(value):
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"{what}: still {value!r}")
        await asyncio.sleep(0.05)


def inplace(settings: Settings, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The `inplace` command as a user runs it, on this test's cluster (wide terminal)."""
    return subprocess.run(
        [sys.executable, "-m", "inplace.cli.main", *args],
        cwd=REPO,
        env={**settings_env(settings), "COLUMNS": "250", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


async def kubectl(
    apiserver: RoleProcess, *args: str, stdin: str | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """The real `kubectl` binary against `apiserver`, as a user runs it (no kubeconfig: the
    server's URL; a cache directory of its own, so no discovery from another run is reused)."""
    cache = apiserver.log.parent / "kubectl-cache"
    command = ["kubectl", "--server", apiserver.url, "--cache-dir", str(cache), *args]
    done = await call(
        subprocess.run,
        command,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "KUBECONFIG": "/dev/null"},
    )
    if check and done.returncode != 0:
        raise AssertionError(f"{' '.join(command)} failed: {done.stderr or done.stdout}")
    return done


async def read_log(settings: Settings, *topics: str) -> list[Envelope]:
    """Every record on `topics` now, in log order per partition."""
    async with LogReader(settings.kafka_bootstrap) as reader:
        tps = await reader.partitions([settings.topic(t) for t in topics])
        out: list[Envelope] = []
        async for batch in reader.read({}, await reader.end_offsets(tps)):
            out.extend(r.envelope for r in batch.records)
    return out
