"""What the log's plumbing alone costs the roles per resize, by rate: one resize's records
carried through Kafka to every role that reads them, with nothing done to them (no decode,
no fold, no decision, no HTTP). Not a test; `bench.decode_floor` times the decode and fold.

Runs a small load on a throwaway cluster to get real resize records (the `pods` records of
each resize and its Kubernetes Events, with keys and headers), stops the roles, and then, on
the same broker, writes those records again at `--rate` resizes a second through the
production producer (`EventProducer.send`: one process for what the apiserver writes, one
for what the kubelet writes, each resize's records together as a step writes them) while
one process per reading role follows its topics through the production follower
(`LogFollower`: each role's topics and fetch hold) and skips every record unparsed. CPU of
every process and of the broker from /proc over the window, per resize written.

The figure is not a fixed floor: a follower fetches as soon as a record is there, so the
fewer records a second, the fewer each fetch carries and the more each costs; the plumbing
takes what the cores leave it. What it shows is the rate the plumbing alone carries, and
what a resize costs it there.

    .venv/bin/python -m bench.log_plumbing --rate 250 --rate 1000 --rate 2000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import pickle
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import uvloop
from aiokafka import TopicPartition

from bench.cluster import resize_load, throwaway_cluster
from bench.decode_floor import RESIZE_TYPES, raw_records
from inplace.cli.localcluster import LocalCluster
from inplace.core.bus.consumer import LogFollower
from inplace.core.bus.headers import TYPE_HEADER
from inplace.core.bus.producer import EventProducer
from inplace.core.bus.topics import ensure_topics
from inplace.core.readmodel import OFF_PATH_FETCH_WAIT_MS
from inplace.core.settings import Settings
from inplace.load.cpu import cpu_seconds as load_cpu_seconds
from schemas.envelope import Envelope, decode
from schemas.events import K8S_EVENTS, NODES, PODS, POLICY, WORKLOADS

PREFIX = "plumbing-"  # the replayed records go to topics of their own, apart from the load's
# Who follows what, and how promptly (services/*/service.py INPUT_TOPICS; the apiserver and
# the projector read every event topic; the off-path roles hold their fetches).
READERS: dict[str, tuple[tuple[str, ...], int]] = {
    "apiserver": ((PODS, NODES, POLICY, K8S_EVENTS, WORKLOADS), 0),
    "kubelet": ((PODS, NODES), 0),
    "scheduler": ((PODS, NODES), OFF_PATH_FETCH_WAIT_MS),
    "quota": ((PODS, POLICY), OFF_PATH_FETCH_WAIT_MS),
    "workload": ((PODS, WORKLOADS), OFF_PATH_FETCH_WAIT_MS),
    "projector": ((PODS, NODES, POLICY, K8S_EVENTS, WORKLOADS), OFF_PATH_FETCH_WAIT_MS),
}


@dataclass(frozen=True)
class Captured:
    """One record as its writer sent it: the envelope (for `send`), its bytes, its extra
    headers (beside `type`)."""

    envelope: Envelope
    value: bytes
    headers: dict[str, str]


# -- capture ---------------------------------------------------------------------------------


def capture(
    cluster: LocalCluster, settings: Settings, args: argparse.Namespace, path: Path
) -> dict[str, float]:
    """One resize's records from a small load, pickled by writer to `path`; records per
    resize by writer."""
    injected = resize_load(
        cluster, settings, nodes=args.nodes, pods=args.pods, resizes=args.resizes
    )
    pods = asyncio.run(raw_records(settings, PODS))
    events = asyncio.run(raw_records(settings, K8S_EVENTS))
    records: list[Captured] = []
    for raw in pods + events:
        envelope = decode(raw.value)
        if envelope.topic == PODS and envelope.type not in RESIZE_TYPES:
            continue
        extra = {k: bytes(v).decode() for k, v in raw.headers or () if k != TYPE_HEADER}
        records.append(Captured(envelope, raw.value, extra))
    # A resize's records share its request's correlation id (the pods' admission at the
    # load's start, Allocated too, does not).
    resizes = {c.envelope.correlation_id for c in records if c.envelope.type == "ResizeProposed"}
    records.sort(key=lambda c: c.envelope.time)
    by_writer: dict[str, dict[str, list[Captured]]] = {}
    for c in records:
        if c.envelope.correlation_id in resizes:
            groups = by_writer.setdefault(c.envelope.producer, {})
            groups.setdefault(c.envelope.correlation_id, []).append(c)
    path.write_bytes(pickle.dumps({w: list(g.values()) for w, g in by_writer.items()}))
    return {w: sum(map(len, g.values())) / injected for w, g in by_writer.items()}


# -- the processes under test ------------------------------------------------------------------


async def _write(
    bootstrap: str, resizes: list[list[Captured]], per_second: float, seconds: float
) -> None:
    """Send each resize's records together (as a writer's step does), `per_second` resizes a
    second, round and round, through the production producer, without waiting for each ack
    (many writers at once, each waiting for its own)."""
    producer = EventProducer(bootstrap, client_id="plumbing-writer", topic_prefix=PREFIX)
    await producer.start()
    pending: set[asyncio.Future[object]] = set()
    sent = 0
    start = time.monotonic()
    try:
        while (now := time.monotonic() - start) < seconds:
            due = int(now * per_second)
            while sent < due:
                for c in resizes[sent % len(resizes)]:
                    future = await producer.send(c.envelope, headers=c.headers, encoded=c.value)
                    pending.add(future)  # type: ignore[arg-type]
                    future.add_done_callback(pending.discard)  # type: ignore[arg-type]
                sent += 1
            await asyncio.sleep(0.001)
        await asyncio.gather(*pending)
    finally:
        await producer.stop()
    print(json.dumps({"sent": sent}), flush=True)  # resizes


async def _follow(bootstrap: str, topics: list[str], wait_ms: int) -> None:
    """Follow `topics` from their end as a role does, skipping every record unparsed, until
    SIGTERM; then say how many records it passed."""
    follower = LogFollower(
        bootstrap, topics, role="plumbing", accept=lambda _record: False, fetch_wait_ms=wait_ms
    )
    tps = await follower.start()
    await follower.resume_at(await follower.end_offsets(tps), tps)
    start = {tp: await follower.position(tp) for tp in tps}
    last: dict[TopicPartition, int] = dict(start)
    this = asyncio.current_task()
    assert this is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, this.cancel)
    try:
        async for batch in follower.batches():
            last.update(batch.next_offsets)
    except asyncio.CancelledError:
        pass
    finally:
        await follower.stop()
    print(json.dumps({"records": sum(last[tp] - start[tp] for tp in tps)}), flush=True)


def child_main(argv: list[str]) -> None:
    kind, bootstrap = argv[0], argv[1]
    if kind == "write":
        records = pickle.loads(Path(argv[2]).read_bytes())[argv[3]]
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(_write(bootstrap, records, float(argv[4]), float(argv[5])))
        return
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(_follow(bootstrap, argv[2].split(","), int(argv[3])))


# -- the measurement ---------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a live process so far."""
    seconds = load_cpu_seconds(pid)
    if seconds is None:
        raise RuntimeError(f"process {pid} exited during the measurement")
    return seconds


def _spawn(*argv: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "bench.log_plumbing", "--child", *argv],
        stdout=subprocess.PIPE,
        text=True,
    )


def measure(
    bootstrap: str,
    broker_pid: int,
    records: Path,
    per_resize: dict[str, float],
    rate: float,
    args: argparse.Namespace,
) -> str:
    """Followers idle, then writers at `rate` resizes/s: CPU per resize of every process, as
    the lines of a report."""
    settings = Settings(kafka_bootstrap=bootstrap, topic_prefix=PREFIX)
    asyncio.run(ensure_topics(settings))
    followers = {
        role: _spawn("follow", bootstrap, ",".join(settings.topic(t) for t in topics), str(wait))
        for role, (topics, wait) in READERS.items()
    }
    time.sleep(args.settle)  # connected, caught up, idle
    pids = {role: p.pid for role, p in followers.items()} | {"broker": broker_pid}
    idle0 = {role: cpu_seconds(pid) for role, pid in pids.items()}
    time.sleep(args.idle)
    idle = {role: (cpu_seconds(pid) - idle0[role]) / args.idle for role, pid in pids.items()}
    writers = {
        writer: _spawn("write", bootstrap, str(records), writer, str(rate), str(args.seconds))
        for writer in per_resize
    }
    time.sleep(1.0)  # the writers' start: import, connect
    base = {role: cpu_seconds(pid) for role, pid in pids.items()}
    base |= {f"writer {w}": cpu_seconds(p.pid) for w, p in writers.items()}
    t0 = time.monotonic()
    time.sleep(args.seconds - 2.0)
    took = time.monotonic() - t0
    used = {role: cpu_seconds(pid) - base[role] for role, pid in pids.items()}
    used |= {f"writer {w}": cpu_seconds(p.pid) - base[f"writer {w}"] for w, p in writers.items()}
    sent = {
        w: json.loads(p.communicate()[0].strip().splitlines()[-1])["sent"]
        for w, p in writers.items()
    }
    for p in followers.values():
        p.send_signal(signal.SIGTERM)
    seen = {
        r: json.loads(p.communicate()[0].strip().splitlines()[-1])["records"]
        for r, p in followers.items()
    }
    resizes = rate * took
    lines = [
        f"\n{rate:.0f} resizes/s for {took:.1f} s ({resizes:.0f} resizes; records per "
        + ", ".join(f"{w} {n:.2f}" for w, n in per_resize.items())
        + f"; resizes sent {sent}, records each reader saw "
        + ", ".join(f"{r} {n}" for r, n in seen.items())
        + ")",
        f"{'process':<20} {'ms CPU / resize':>16} {'idle ms/s':>10}",
    ]
    roles = 0.0
    for name, seconds in used.items():
        ms = seconds / resizes * 1000
        if name != "broker":
            roles += ms
        lines.append(f"{name:<20} {ms:>16.3f} {idle.get(name, 0) * 1000:>10.1f}")
    broker = used["broker"] / resizes * 1000
    lines.append(f"{'over the roles':<20} {roles:>16.3f}")
    lines.append(
        f"roles + broker: {roles + broker:.2f} ms a resize, "
        f"{(roles + broker) * rate / 1000:.2f} of a core at this rate"
    )
    return "\n".join(lines)


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        child_main(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rate", type=float, action="append", help="resizes/s (repeatable)")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--idle", type=float, default=10.0)
    parser.add_argument("--settle", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=30.0, help="s of traffic first")
    parser.add_argument("--nodes", type=int, default=20)
    parser.add_argument("--pods", type=int, default=400)
    parser.add_argument("--resizes", type=int, default=1000)
    args = parser.parse_args()
    path = Path(tempfile.mkdtemp(prefix="inplace-plumbing-")) / "records.pickle"
    with throwaway_cluster(secure=False) as (cluster, settings, _):
        per_resize = capture(cluster, settings, args, path)
        for child in cluster.children:  # the roles would read nothing, but idle costs
            if child.proc is not None:
                child.proc.send_signal(signal.SIGTERM)
                child.proc.wait(timeout=20)
        broker_pid = cluster.broker.pid
        assert broker_pid is not None
        # The broker's JIT compiles for its first tens of seconds of traffic: not measured.
        warm = argparse.Namespace(**{**vars(args), "seconds": args.warmup, "idle": 1.0})
        measure(settings.kafka_bootstrap, broker_pid, path, per_resize, 1000.0, warm)
        for rate in args.rate or [250.0]:
            print(measure(settings.kafka_bootstrap, broker_pid, path, per_resize, rate, args))


if __name__ == "__main__":
    main()
