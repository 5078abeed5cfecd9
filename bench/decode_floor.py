"""The floor under CPU per resize: what decoding and folding the records of one resize costs
the roles that read them, with nothing else (no Kafka fetch, no decision, no write). Not a test.

Runs a small load on a throwaway cluster, reads back the records of the `pods` and
`k8s-events` topics as the roles receive them (raw values), and times, in this process, the
production decode (`schemas.envelope.decode`) and the read models' fold (`ReadModel`, what the
apiserver, kubelet and scheduler hold; `ClusterState`, what the projector folds) per
record. The floor per resize is that cost times the records of one resize times the roles
that read each: every pod record is decoded and folded by the apiserver, the kubelet, the
scheduler and the projector (quota only in namespaces with a ResourceQuota, which the load's
have not); every Kubernetes Event by the apiserver and the projector.

    .venv/bin/python -m bench.decode_floor --resizes 2000
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import time
from collections import Counter

from aiokafka import AIOKafkaConsumer, TopicPartition

from bench.cluster import resize_load, throwaway_cluster
from inplace.core.bus.consumer import RawRecord, Record
from inplace.core.bus.producer import Position
from inplace.core.projection.state import ClusterState
from inplace.core.readmodel import ReadModel
from inplace.core.settings import Settings
from schemas.envelope import decode
from schemas.events import K8S_EVENTS, PODS

# Who decodes and folds each topic's records (services/*/service.py INPUT_TOPICS; workload
# skips pods no CloneSet controls by a header, hotplug reads nodes only).
POD_READERS = ("apiserver", "kubelet", "scheduler", "projector")
EVENT_READERS = ("apiserver", "projector")
RESIZE_TYPES = ("ResizeProposed", "ResizeStatusChanged", "Allocated", "Actuated")


async def raw_records(settings: Settings, topic: str) -> list[RawRecord]:
    """Every record of `topic` with a value, as the roles receive them, in partition order."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=settings.kafka_bootstrap, enable_auto_commit=False, group_id=None
    )
    await consumer.start()
    try:
        name = settings.topic(topic)
        await consumer._client.force_metadata_update()
        tps = [TopicPartition(name, p) for p in sorted(consumer.partitions_for_topic(name) or ())]
        end = await consumer.end_offsets(tps)
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        out: list[RawRecord] = []
        todo = {tp for tp in tps if end[tp] > 0}
        while todo:
            for tp, items in (await consumer.getmany(*todo, timeout_ms=1000)).items():
                out += [r for r in items if r.value is not None]
                if await consumer.position(tp) >= end[tp]:
                    todo.discard(tp)
        return out
    finally:
        await consumer.stop()


def per_record_us(
    values: list[tuple[str, int, int, bytes]], rounds: int
) -> tuple[float, float, float]:
    """Mean µs per record: decode alone, decode + read-model fold, decode + projector fold."""
    gc.collect()
    best = [float("inf")] * 3
    for _ in range(rounds):
        t0 = time.process_time()
        for _topic, _p, _o, value in values:
            decode(value)
        t1 = time.process_time()
        model = ReadModel(Settings(), role="bench", window=0)
        for topic, p, o, value in values:
            model._apply(Record(Position(topic, p, o), decode(value)))
        t2 = time.process_time()
        state = ClusterState()
        for topic, p, o, value in values:
            state.apply(Record(Position(topic, p, o), decode(value)))
        t3 = time.process_time()
        for i, took in enumerate((t1 - t0, t2 - t1, t3 - t2)):
            best[i] = min(best[i], took)
    n = len(values)
    return best[0] / n * 1e6, best[1] / n * 1e6, best[2] / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=20)
    parser.add_argument("--pods", type=int, default=400)
    parser.add_argument("--resizes", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with throwaway_cluster(secure=False) as (cluster, settings, _):
        injected = resize_load(
            cluster, settings, nodes=args.nodes, pods=args.pods, resizes=args.resizes
        )
        pods = asyncio.run(raw_records(settings, PODS))
        events = asyncio.run(raw_records(settings, K8S_EVENTS))
    pod_values = [(settings.topic(PODS), r.partition, r.offset, r.value) for r in pods]
    event_values = [(settings.topic(K8S_EVENTS), r.partition, r.offset, r.value) for r in events]
    types = Counter(decode(v).type for _, _, _, v in pod_values)
    reasons = Counter(decode(v).payload.event.reason for _, _, _, v in event_values)  # type: ignore[attr-defined]
    pod_per_resize = sum(types[t] for t in RESIZE_TYPES) / injected
    event_per_resize = (
        sum(n for r, n in reasons.items() if (r or "").startswith("Resize")) / injected
    )
    pod_us = per_record_us(pod_values, args.rounds)
    event_us = per_record_us(event_values, args.rounds)
    print(
        f"{injected} resizes injected; per resize {pod_per_resize:.2f} pod records, "
        f"{event_per_resize:.2f} Kubernetes Events"
    )
    print(
        f"pod records ({len(pod_values)}): decode {pod_us[0]:.1f} µs, + read-model fold "
        f"{pod_us[1]:.1f} µs, + projector fold {pod_us[2]:.1f} µs"
    )
    print(
        f"Kubernetes Events ({len(event_values)}): decode {event_us[0]:.1f} µs, + read-model "
        f"fold {event_us[1]:.1f} µs, + projector fold {event_us[2]:.1f} µs"
    )
    readers = len(POD_READERS) - 1  # the projector's fold is counted apart
    floor_ms = (
        pod_per_resize * (readers * pod_us[1] + pod_us[2])
        + event_per_resize * ((len(EVENT_READERS) - 1) * event_us[1] + event_us[2])
    ) / 1000
    print(
        f"floor: {floor_ms:.2f} ms of CPU per resize over the roles, for decoding and folding "
        f"alone ({', '.join(POD_READERS)} read every pod record; "
        f"{', '.join(EVENT_READERS)} every Event)"
    )


if __name__ == "__main__":
    main()
