"""What one Kafka client spends per request, alone on the machine: a writer sends pod-sized
records one at a time at `--rate` a second (a write a request, as a role's write that waits
for its ack is) and a prompt follower takes each as it comes (a fetch a record, as the
apiserver's and the kubelet's read models do). Not a test.

aiokafka through the production code (`EventProducer`, `LogFollower` with the apiserver's
topics), and, when installed (the `bench` extra), librdkafka's client with the same settings
(idempotent acks=all writes, linger 0; read_committed fetches answered at the first byte)
for comparison: a C client whose requests Python never builds or parses.

    .venv/bin/python -m bench.kafka_clients --rate 150
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import uvloop

from bench.log_plumbing import cpu_seconds
from inplace.core.bus.consumer import LogFollower
from inplace.core.bus.producer import EventProducer
from inplace.core.bus.topics import ensure_topics
from inplace.core.settings import Settings
from inplace.localinfra.kafka import KafkaBroker
from schemas.events import K8S_EVENTS, NODES, PODS, POLICY, WORKLOADS

VALUE = b"x" * 2300  # a running pod's record: ~2.3 KB of JSON
TOPICS = (PODS, NODES, POLICY, K8S_EVENTS, WORKLOADS)  # what the apiserver follows


async def _aiokafka_write(bootstrap: str, rate: float, seconds: float) -> None:
    producer = EventProducer(bootstrap, client_id="cycle")
    await producer.start()
    sent, pending = 0, []
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        while sent < int((time.monotonic() - start) * rate):
            pending.append(await producer._producer.send(PODS, VALUE, key=str(sent).encode()))
            sent += 1
        await asyncio.sleep(0.001)
    await asyncio.gather(*pending)
    await producer.stop()


async def _aiokafka_follow(bootstrap: str, seconds: float) -> None:
    follower = LogFollower(bootstrap, list(TOPICS), role="cycle", accept=lambda _r: False)
    tps = await follower.start()
    await follower.resume_at(await follower.end_offsets(tps), tps)
    start = time.monotonic()
    async for _batch in follower.batches():
        if time.monotonic() - start > seconds:
            break
    await follower.stop()


def _librdkafka_write(bootstrap: str, rate: float, seconds: float) -> None:
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 0,
        }
    )
    sent = 0
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        while sent < int((time.monotonic() - start) * rate):
            producer.produce(PODS, VALUE, key=str(sent).encode())
            sent += 1
        producer.poll(0.001)  # delivery reports: the ack each writer waits for
    producer.flush()


def _librdkafka_follow(bootstrap: str, seconds: float) -> None:
    from confluent_kafka import OFFSET_END, Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "cycle",  # required by the client; nothing is committed
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "fetch.wait.max.ms": 500,
            "fetch.min.bytes": 1,
        }
    )
    metadata = consumer.list_topics(timeout=10)
    consumer.assign(
        [
            TopicPartition(topic, p, OFFSET_END)
            for topic in TOPICS
            for p in metadata.topics[topic].partitions
        ]
    )
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        # As a prompt reader: back at the first record (`consume` would wait for all 5000 or
        # its timeout), then whatever else is there already.
        if consumer.poll(0.2) is not None:
            consumer.consume(num_messages=5000, timeout=0)
    consumer.close()


def child(argv: list[str]) -> None:
    client, kind, bootstrap, rate, seconds = argv[0], argv[1], argv[2], *map(float, argv[3:5])
    if client == "librdkafka":
        if kind == "write":
            _librdkafka_write(bootstrap, rate, seconds)
        else:
            _librdkafka_follow(bootstrap, seconds)
        return
    run = (
        _aiokafka_write(bootstrap, rate, seconds)
        if kind == "write"
        else _aiokafka_follow(bootstrap, seconds)
    )
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(run)


def measure(
    client: str, bootstrap: str, broker_pid: int, rate: float, seconds: float
) -> dict[str, float]:
    """CPU µs per record of the writer, the follower and the broker, `client` on both ends."""
    spawn = [sys.executable, "-m", "bench.kafka_clients", "--child", client]
    follower = subprocess.Popen([*spawn, "follow", bootstrap, "0", str(seconds + 8)])
    time.sleep(4.0)  # imported, connected
    writer = subprocess.Popen([*spawn, "write", bootstrap, str(rate), str(seconds + 3)])
    time.sleep(2.0)
    pids = {"writer": writer.pid, "follower": follower.pid, "broker": broker_pid}
    before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    time.sleep(seconds)
    used = {name: cpu_seconds(pid) - before[name] for name, pid in pids.items()}
    writer.wait()
    follower.wait()
    return {name: value / (rate * seconds) * 1e6 for name, value in used.items()}


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rate", type=float, default=150.0, help="records a second")
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()
    clients = ["aiokafka"]
    try:
        import confluent_kafka  # noqa: F401

        clients.append("librdkafka")
    except ImportError:
        print("confluent-kafka not installed: aiokafka only")
    home = Path(tempfile.mkdtemp(prefix="inplace-cycle-"))
    broker = KafkaBroker(home / "kafka", jit="steady")
    try:
        broker.start()
        asyncio.run(ensure_topics(Settings(kafka_bootstrap=broker.bootstrap_servers)))
        assert broker.pid is not None
        # The broker's JIT compiles for its first tens of seconds of traffic: not measured.
        measure("aiokafka", broker.bootstrap_servers, broker.pid, 1000.0, 30.0)
        results = {
            c: measure(c, broker.bootstrap_servers, broker.pid, args.rate, args.seconds)
            for c in clients
        }
    finally:
        broker.stop()
        shutil.rmtree(home, ignore_errors=True)
    print(f"\n{args.rate:.0f} records/s, one a request; µs of CPU per record")
    print(f"{'client':<12} {'writer':>8} {'follower':>9} {'broker':>8}")
    for client, us in results.items():
        print(f"{client:<12} {us['writer']:>8.0f} {us['follower']:>9.0f} {us['broker']:>8.0f}")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
