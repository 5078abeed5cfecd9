"""Projection rebuild throughput: replay N events from offset 0 into Postgres.

Starts its own throwaway Kafka broker and PostgreSQL cluster, writes a realistic synthetic
stream, then times `rebuild` (the code behind `inplace replay rebuild`). Prints events/s and
peak memory. Not a test: run it with `./dev bench [--pods N --resizes M]`.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

from inplace.core.bus.producer import EventProducer
from inplace.core.bus.topics import ensure_topics
from inplace.core.projection.replay import rebuild
from inplace.core.settings import Settings
from inplace.core.store.database import ensure_database
from inplace.localinfra import KafkaBroker, PostgresCluster
from tests import factories


def _servers_cpu(root: Path) -> float:
    """CPU seconds used so far by the broker and the database started under `root`, with their
    children (Postgres backends, live or exited): the rebuild's work there is part of its bill."""
    ticks = os.sysconf("SC_CLK_TCK")
    procs: dict[str, tuple[str, bool, list[int]]] = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            ours = str(root).encode() in (proc / "cmdline").read_bytes()
            fields = (proc / "stat").read_text().rpartition(")")[2].split()
        except OSError:  # exited meanwhile
            continue
        # fields[1] is the parent pid; [11:15] utime, stime, and those of reaped children.
        procs[proc.name] = (fields[1], ours, [int(f) for f in fields[11:15]])
    servers = {pid for pid, (_, ours, _) in procs.items() if ours}
    own = sum(sum(t) for pid, (_, _, t) in procs.items() if pid in servers)
    backends = sum(
        sum(t[:2]) for _, (ppid, ours, t) in procs.items() if ppid in servers and not ours
    )
    return (own + backends) / ticks


async def bench(settings: Settings, pods: int, resizes: int, root: Path) -> None:
    await ensure_database(settings.postgres_dsn)
    await ensure_topics(settings)
    stream = list(factories.cluster_stream(pods=pods, resizes_per_pod=resizes, nodes=100))
    started = time.perf_counter()
    async with EventProducer(settings.kafka_bootstrap) as producer:
        for i in range(0, len(stream), 5000):
            await producer.publish_many(stream[i : i + 5000])
    produced = time.perf_counter() - started
    print(f"produced {len(stream):,} events in {produced:.1f}s ({len(stream) / produced:,.0f}/s)")
    # `inplace replay rebuild` holds no copy of the log: neither should the timed runs (57k
    # live envelopes made every full garbage collection during the rebuild walk them all).
    del stream
    gc.collect()
    for attempt in (1, 2)[: int(os.environ.get("BENCH_ROUNDS", "2"))]:
        # No live projection here, so each run replays the whole log from offset 0.
        cpu, servers = time.process_time(), _servers_cpu(root)
        report = await rebuild(settings.postgres_dsn, settings.kafka_bootstrap)
        # CPU seconds, steadier than wall time on a shared machine (compare both): this
        # process, and Kafka + Postgres (which share the same 2 cores).
        cpu, servers = time.process_time() - cpu, _servers_cpu(root) - servers
        print(
            f"rebuild #{attempt}: {report.events:,} events in {report.seconds:.2f}s = "
            f"{report.events_per_second:,.0f} events/s  checksum {report.rebuilt_checksum[:16]}\n"
            f"  CPU s: this process {cpu:.2f} ({report.events / cpu:,.0f} events/CPU s), "
            f"Kafka + Postgres {servers:.2f}"
        )
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS of this process: {peak_mb:.0f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--resizes", type=int, default=5, help="resize flows per pod")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="inplace-bench-", dir="/tmp"))
    root.chmod(0o755)
    broker = KafkaBroker(root / "kafka")
    database = PostgresCluster(root / "pg", fsync=False)
    try:
        broker.start()
        database.start()
        settings = Settings(
            kafka_bootstrap=broker.bootstrap_servers, postgres_dsn=database.dsn("bench")
        )
        asyncio.run(bench(settings, args.pods, args.resizes, root))
    finally:
        broker.stop()
        database.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
