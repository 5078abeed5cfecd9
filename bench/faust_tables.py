"""faust-streaming Tables as the pods' state store, measured against the PostgreSQL projection
snapshot the roles start from today (issue 16). Not a test: prints figures.

Needs the `bench` extra (`pip install -e '.[test,bench]'`: faust-streaming and rocksdict).
Starts its own Kafka broker and PostgreSQL (inplace.localinfra), then:

(a) restart: a faust Table `pods` (key "ns/name", value the pod's JSON as the apiserver serves
    it) whose compacted changelog holds each pod once plus U updates, written straight onto the
    changelog; a fresh worker (its own process) is timed from start until the table is
    recovered, with its RSS. Stores: memory:// (values kept as bytes, or decoded into Pod
    models) and rocksdb:// (a first worker fills its local DB, a restart reads only the
    changelog after the offsets it persisted).
(b) the same pods written into the projection tables and read back by `load_snapshot` (Pod
    models, what roles hold today) and by one SELECT keeping each pod's JSON as bytes.
(c) CPU per event, on the same pod events on the pods topic: the project's ReadModel fold
    versus a faust agent updating the Table per event (the raw event stored, or the event
    folded by the project's reducer into the Pod the table holds, its changelog written).

    .venv/bin/python -m bench.faust_tables --pods 50000 --updates 1,20 \
        --fold-pods 2000 --fold-resizes 10

About 20 minutes on 2 cores: the recoveries of the 1,050,000-record changelog take 3-7 minutes
each. The default (`--updates 1`) takes about 5.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

import asyncpg
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from bench.apiserver_restart import _history, _publish
from inplace.core.bus.topics import ensure_topics
from inplace.core.projection.state import ClusterState
from inplace.core.projection.store import ProjectionStore
from inplace.core.readmodel import as_json
from inplace.core.settings import Settings
from inplace.core.store.migrations import migrate
from inplace.localinfra import KafkaBroker, PostgresCluster
from schemas import events as ev
from schemas.k8s import Pod
from tests import factories

CHANGELOG_PARTITIONS = 6  # as the pods topic (Settings.pods_partitions)


# --- the objects ----------------------------------------------------------------------------


def _template() -> Pod:
    """A pod as it lives in the cluster: created, bound, Running, resized once."""
    ns, name, node = "default", "@@NAME@@", "node-1"
    uid = f"uid-{ns}-{name}"
    state = factories.fold(
        ev.PodCreated(namespace=ns, name=name, uid=uid, pod=factories.pod(ns, name)),
        ev.PodBound(namespace=ns, name=name, uid=uid, node_name=node),
        ev.PodPhaseChanged(namespace=ns, name=name, uid=uid, phase="Running"),
        *factories.resize_flow(ns, name, node, "200m", "256Mi"),
    )
    return state.pods[(ns, name)]


class PodBytes:
    """Each pod's JSON (as the apiserver serves it) from one template: name and
    resourceVersion substituted, so a million values cost no pydantic work."""

    def __init__(self) -> None:
        pod = _template()
        pod = pod.model_copy(
            update={"metadata": pod.metadata.model_copy(update={"resource_version": "@@RV@@"})}
        )
        self.raw = as_json(pod)
        assert b"@@RV@@" in self.raw and b"@@NAME@@" in self.raw

    def __call__(self, i: int, rv: int) -> bytes:
        return self.raw.replace(b"@@NAME@@", f"p-{i}".encode()).replace(b"@@RV@@", str(rv).encode())


# --- filling the changelog and the projection -------------------------------------------------


async def _fill_changelog(bootstrap: str, topic: str, pods: int, updates: int) -> int:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        config = {"cleanup.policy": "compact"}  # as faust declares its changelogs
        await admin.create_topics([NewTopic(topic, CHANGELOG_PARTITIONS, 1, topic_configs=config)])
    finally:
        await admin.close()
    values = PodBytes()
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, linger_ms=20, max_batch_size=1 << 20, acks=1
    )
    await producer.start()
    written = 0
    try:
        for round_ in range(updates + 1):
            futures = []
            for i in range(pods):
                key = f"default/p-{i}".encode()
                value = values(i, round_ * pods + i + 1)
                part = i % CHANGELOG_PARTITIONS
                futures.append(await producer.send(topic, value, key=key, partition=part))
                if len(futures) >= 20_000:
                    await asyncio.gather(*futures)
                    futures.clear()
            await asyncio.gather(*futures)
            written += pods
    finally:
        await producer.stop()
    return written


async def _fill_projection(dsn: str, settings: Settings, pods: int) -> None:
    values = PodBytes()
    state = ClusterState()
    for i in range(pods):
        state.pods[("default", f"p-{i}")] = Pod.model_validate_json(values(i, i + 1))
    state.touched["pods"] = set(state.pods)
    store = ProjectionStore(settings.projection_schema)
    conn = await asyncpg.connect(dsn)
    try:
        await migrate(conn, settings.projection_schema)
        async with conn.transaction():
            await store.copy_state(conn, state, fresh=True)
            topic = settings.topic(ev.PODS)
            offsets = {TopicPartition(topic, p): 1 for p in range(settings.pods_partitions)}
            await store.save_offsets(conn, offsets)
        await conn.execute("VACUUM ANALYZE")
    finally:
        await conn.close()


async def _warm_group_coordinator(bootstrap: str, topic: str) -> None:
    """Have the broker create its offsets topic before faust asks for a group coordinator
    (faust stops when that first request fails; aiokafka retries)."""
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id="bench-warmup")
    await consumer.start()
    try:
        while not consumer.assignment():
            await consumer.getmany(timeout_ms=500)
    finally:
        await consumer.stop()


# --- the measured processes (each its own, for a clean RSS) -------------------------------------


def _rss() -> int:
    status = Path("/proc/self/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+)", status).group(1)) * 1024  # type: ignore[union-attr]


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _report(**figures: Any) -> None:
    print("RESULT " + json.dumps(figures), flush=True)


def _faust_app(args: argparse.Namespace) -> Any:
    import faust  # the bench extra

    from inplace.core.readmodel import as_json as dump

    class PodCodec(faust.Codec):  # type: ignore[misc]
        def _dumps(self, obj: Any) -> bytes:
            return dump(obj)

        def _loads(self, s: bytes) -> Any:
            return Pod.model_validate_json(s)

    faust.serializers.codecs.register("pod", PodCodec())
    app = faust.App(
        args.app_id,
        broker=f"kafka://{args.bootstrap}",
        store=args.store,
        datadir=args.datadir,
        topic_partitions=CHANGELOG_PARTITIONS,
        topic_replicas=1,
        table_standby_replicas=0,
        web_enabled=False,
    )
    schema = faust.Schema(key_serializer="raw", value_serializer=args.codec)
    table = app.Table(
        "pods",
        partitions=CHANGELOG_PARTITIONS,
        schema=schema,
        # As faust declares a table's own changelog, under a name runs can share.
        changelog_topic=app.topic(
            args.changelog,
            schema=schema,
            partitions=CHANGELOG_PARTITIONS,
            compacting=True,
            acks=False,
            internal=True,
        ),
    )
    # A table takes its changelog serializers from its key and value types (raw for bytes,
    # else json): name them directly.
    table.key_serializer, table.value_serializer = "raw", args.codec
    return faust, app, table


def _run_faust(faust: Any, app: Any) -> None:
    level = os.environ.get("BENCH_FAUST_LOGLEVEL", "WARNING")
    worker = faust.Worker(app, loglevel=level, quiet=True, redirect_stdouts=False)
    worker.execute_from_commandline()


def child_recover(args: argparse.Namespace) -> None:
    """A fresh faust worker: until its Table is recovered from the changelog."""
    faust, app, table = _faust_app(args)
    rss0, t0 = _rss(), time.perf_counter()
    cpu0 = _cpu()

    @app.task  # type: ignore[misc]
    async def until_recovered() -> None:
        await app.tables.recovery.completed.wait()
        _report(
            ready_s=time.perf_counter() - t0,
            cpu_s=_cpu() - cpu0,
            keys=len(table),
            rss=_rss(),
            rss_growth=_rss() - rss0,
        )
        if args.exit == "kill":
            os._exit(0)  # as SIGKILL: the group keeps this member until its session times out
        os.kill(os.getpid(), signal.SIGTERM)  # the worker leaves the group, closes its stores

    _run_faust(faust, app)


def child_agent(args: argparse.Namespace) -> None:
    """A faust agent updating the Table per event of the pods topic, until all are done."""
    faust, app, table = _faust_app(args)
    from inplace.core.bus.producer import Position
    from inplace.core.projection import reducers
    from schemas.envelope import decode

    source = app.topic(
        args.source, schema=faust.Schema(key_serializer="raw", value_serializer="raw")
    )
    done = 0
    fold = args.codec == "pod"

    def apply(event: Any) -> None:
        nonlocal done
        if fold:
            env = decode(event.value)
            if env.payload.CHANGES_STATE and reducers.locate(env.payload)[0] == "pods":
                msg = event.message
                pos = Position(msg.topic, msg.partition, msg.offset)
                new = reducers.reduce_pod(table.get(event.key), env, pos)
                if new is None:
                    table.pop(event.key, None)
                else:
                    table[event.key] = new
        else:
            table[event.key] = event.value
        done += 1

    @app.agent(source)  # type: ignore[misc]
    async def update(stream: Any) -> None:
        async for event in stream.events():
            try:
                apply(event)
            except Exception:  # a crashed agent would leave the bench waiting forever
                traceback.print_exc()
                os._exit(1)

    cpu0, t0 = _cpu(), time.perf_counter()

    @app.task  # type: ignore[misc]
    async def until_done() -> None:
        started = None
        while done < args.expect:
            if started is None and done:
                started = (time.perf_counter(), _cpu())
            await asyncio.sleep(0.005)
        await app.producer.flush()
        assert started is not None
        _report(
            events=done,
            wall_s=time.perf_counter() - t0,
            cpu_s=_cpu() - cpu0,
            cpu_after_first_s=_cpu() - started[1],
            keys=len(table),
        )
        os._exit(0)

    _run_faust(faust, app)


def child_snapshot(args: argparse.Namespace) -> None:
    """The projection read back: load_snapshot (Pod models) or one SELECT keeping bytes."""
    from inplace.core.projection.snapshot import load_snapshot

    settings = Settings(kafka_bootstrap=args.bootstrap, postgres_dsn=args.dsn)

    async def models() -> int:
        topics = {settings.topic(t) for t in (ev.PODS, ev.NODES, ev.POLICY, ev.K8S_EVENTS)}
        found = await load_snapshot(args.dsn, settings.projection_schema, topics)
        assert not isinstance(found, str), found
        keep.append(found)
        return len(found.state.pods)

    async def raw() -> int:
        conn = await asyncpg.connect(args.dsn)
        try:
            async with conn.transaction(isolation="repeatable_read", readonly=True):
                rows = await conn.fetch(
                    "SELECT namespace, name, object::text AS o "
                    f"FROM {settings.projection_schema}.pods"
                )
        finally:
            await conn.close()
        pods = {f"{r['namespace']}/{r['name']}": r["o"].encode() for r in rows}
        del rows
        keep.append(pods)
        return len(pods)

    keep: list[Any] = []
    rss0, cpu0, t0 = _rss(), _cpu(), time.perf_counter()
    keys = asyncio.run(models() if args.codec == "pod" else raw())
    _report(
        ready_s=time.perf_counter() - t0,
        cpu_s=_cpu() - cpu0,
        keys=keys,
        rss=_rss(),
        rss_growth=_rss() - rss0,
    )


def child_fold(args: argparse.Namespace) -> None:
    """The project's ReadModel (no watch window, as every role but the apiserver) folding the
    pods topic from offset 0 until caught up."""
    from inplace.core.readmodel import ReadModel

    settings = Settings(kafka_bootstrap=args.bootstrap, postgres_dsn=args.dsn)

    async def run() -> dict[str, Any]:
        model = ReadModel(settings, role="bench", topics=(ev.PODS,), window=0)
        cpu0, t0 = _cpu(), time.perf_counter()
        task = asyncio.create_task(model.run())
        await model.ready.wait()
        figures = {"wall_s": time.perf_counter() - t0, "cpu_s": _cpu() - cpu0}
        task.cancel()
        return {**figures, "keys": len(model.state.pods)}

    _report(events=args.expect, **asyncio.run(run()))


CHILDREN = {
    "recover": child_recover,
    "agent": child_agent,
    "snapshot": child_snapshot,
    "fold": child_fold,
}


def _child(kind: str, common: list[str], **opts: Any) -> dict[str, Any]:
    argv = [sys.executable, "-m", "bench.faust_tables", "--child", kind, *common]
    for k, v in opts.items():
        argv += [f"--{k.replace('_', '-')}", str(v)]
    for attempt in (1, 2):
        out = subprocess.run(argv, capture_output=True, text=True, timeout=600)
        for line in out.stdout.splitlines():
            if "RESULT " in line:  # faust's spinner may precede it with terminal codes
                figures: dict[str, Any] = json.loads(line.split("RESULT ", 1)[1])
                return figures
        if attempt == 1:
            # faust stops (exit 0) when its first group coordinator request fails: once more.
            last = (out.stderr.strip().splitlines() or ["no output"])[-1]
            print(f"  {kind} {opts.get('app_id', '')} gave no figures ({last[:160]}): again")
    raise SystemExit(
        f"{kind} {opts} failed ({out.returncode}):\n{out.stdout[-2000:]}\n{out.stderr[-8000:]}"
    )


def _mb(n: float) -> str:
    return f"{n / 2**20:.0f} MB"


def part_b(common: list[str], dsn: str, settings: Settings, n: int) -> None:
    t = time.perf_counter()
    asyncio.run(_fill_projection(dsn, settings, n))
    print(f"projection filled in {time.perf_counter() - t:.1f} s")
    for codec, label in (("pod", "load_snapshot (Pod models)"), ("raw", "SELECT, JSON bytes")):
        r = _child("snapshot", common, codec=codec)
        print(
            f"(b) projection {label}: ready in {r['ready_s']:.2f} s (CPU {r['cpu_s']:.2f} s),"
            f" {r['keys']:,} pods, RSS {_mb(r['rss'])}, +{r['rss_growth'] / n:,.0f} B/pod"
        )


def part_a(common: list[str], root: Path, bootstrap: str, n: int, updates: list[int]) -> None:
    datadir = root / "faust"
    for u in updates:
        changelog = f"bench-pods-u{u}-changelog"
        t = time.perf_counter()
        records = asyncio.run(_fill_changelog(bootstrap, changelog, n, u))
        took = time.perf_counter() - t
        print(f"changelog {changelog}: {records:,} records written in {took:.1f} s")
        runs = [
            ("memory://", "raw", f"mem-raw-u{u}", "memory, bytes"),
            ("memory://", "pod", f"mem-pod-u{u}", "memory, Pod models"),
            ("rocksdb://", "raw", f"rdb-u{u}", "rocksdb, fresh datadir"),
            ("rocksdb://", "raw", f"rdb-u{u}", "rocksdb, restart after a clean stop"),
            ("rocksdb://", "raw", f"rdb-u{u}", "rocksdb, restart (then killed)"),
            ("rocksdb://", "raw", f"rdb-u{u}", "rocksdb, restart after a kill"),
        ]
        for store, codec, app_id, label in runs:
            r = _child(
                "recover",
                common,
                app_id=app_id,
                store=store,
                codec=codec,
                datadir=datadir,
                changelog=changelog,
                exit="kill" if label.endswith("(then killed)") else "term",
            )
            print(
                f"(a) faust {label}, {records:,} changelog records: ready in "
                f"{r['ready_s']:.2f} s (CPU {r['cpu_s']:.2f} s), {r['keys']:,} keys, "
                f"RSS {_mb(r['rss'])}, +{r['rss_growth'] / n:,.0f} B/pod"
            )
    logs = [
        f
        for p in (root / "kafka").rglob("bench-pods-u*-changelog-*")
        if p.is_dir()
        for f in p.iterdir()
        if f.suffix == ".log"
    ]
    print(
        f"changelog segments on disk: {len(logs)} files, {_mb(sum(f.stat().st_size for f in logs))}"
        " (one segment per partition: the broker never compacts the active one, 1 GiB by default)"
    )


def part_c(common: list[str], root: Path, settings: Settings, pods: int, resizes: int) -> None:
    history = _history(pods, resizes)
    asyncio.run(_publish(settings, history))
    events = len(history)
    print(f"(c) {events:,} pod events ({pods:,} pods x {resizes} resize flows) on the pods topic")
    r = _child("fold", common, expect=events)
    print(
        f"(c) ReadModel fold: {events / r['cpu_s']:,.0f} events per CPU-second "
        f"({r['cpu_s'] / events * 1e6:.0f} us/event incl. start, wall {r['wall_s']:.1f} s)"
    )
    for codec, label in (("raw", "stores the raw event"), ("pod", "folds into a Pod")):
        r = _child(
            "agent",
            common,
            app_id=f"agent-{codec}",
            store="memory://",
            codec=codec,
            datadir=root / "faust",
            changelog=f"bench-agent-{codec}-changelog",
            source=settings.topic(ev.PODS),
            expect=events,
        )
        print(
            f"(c) faust agent that {label}: {events / r['cpu_s']:,.0f} events per "
            f"CPU-second ({r['cpu_s'] / events * 1e6:.0f} us/event incl. start, "
            f"{r['cpu_after_first_s'] / events * 1e6:.0f} after the first event; "
            f"wall {r['wall_s']:.1f} s)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pods", type=int, default=50_000)
    parser.add_argument("--updates", default="1", help="updates per pod in the changelog")
    parser.add_argument("--fold-pods", type=int, default=2000)
    parser.add_argument("--fold-resizes", type=int, default=10)
    parser.add_argument("--parts", default="bac", help="which of (a) (b) (c) to run")
    parser.add_argument("--child", choices=sorted(CHILDREN))
    for opt in ("bootstrap", "dsn", "app-id", "store", "datadir", "changelog", "source"):
        parser.add_argument(f"--{opt}")
    parser.add_argument("--codec", default="raw")
    parser.add_argument("--exit", default="term", choices=["term", "kill"])
    parser.add_argument("--expect", type=int, default=0)
    args = parser.parse_args()
    if args.child:
        CHILDREN[args.child](args)
        return
    root = Path(tempfile.mkdtemp(prefix="inplace-bench-faust-", dir="/tmp"))
    root.chmod(0o755)
    broker, database = KafkaBroker(root / "kafka"), PostgresCluster(root / "postgres")
    try:
        broker.start()
        database.start()
        database.create_database("inplace")
        dsn = database.dsn("inplace")
        bootstrap = broker.bootstrap_servers
        settings = Settings(kafka_bootstrap=bootstrap, postgres_dsn=dsn)
        asyncio.run(ensure_topics(settings))
        asyncio.run(_warm_group_coordinator(bootstrap, settings.topic(ev.PODS)))
        common = ["--bootstrap", bootstrap, "--dsn", dsn]
        print(f"pod JSON: {len(PodBytes()(0, 1)):,} bytes; {args.pods:,} pods")
        if "b" in args.parts:
            part_b(common, dsn, settings, args.pods)
        if "a" in args.parts:
            updates = [int(u) for u in args.updates.split(",")]
            part_a(common, root, bootstrap, args.pods, updates)
        if "c" in args.parts:
            part_c(common, root, settings, args.fold_pods, args.fold_resizes)
    finally:
        broker.stop()
        database.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
