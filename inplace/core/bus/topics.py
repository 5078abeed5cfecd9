"""Topic layout: partition counts, replication and retention are settings, not code."""

from __future__ import annotations

from dataclasses import dataclass

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError

from inplace.core.bus.auth import aiokafka_options
from inplace.core.settings import Settings
from schemas.events import DEAD_LETTER, K8S_EVENTS, NODES, PODS, POLICY, WORKLOADS
from schemas.usage import RETENTION_MS as USAGE_RETENTION_MS
from schemas.usage import USAGE


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int
    config: dict[str, str]


# The log is the system of record, so event topics keep everything (retention -1, delete
# policy: never compacted, because projections and replays need the full history).
_KEEP_FOREVER = {"cleanup.policy": "delete", "retention.ms": "-1", "retention.bytes": "-1"}


def topic_specs(settings: Settings) -> list[TopicSpec]:
    isr = {"min.insync.replicas": str(settings.min_insync_replicas)}
    t = settings.topic
    return [
        TopicSpec(t(PODS), settings.pods_partitions, {**_KEEP_FOREVER, **isr}),
        TopicSpec(t(NODES), settings.nodes_partitions, {**_KEEP_FOREVER, **isr}),
        TopicSpec(t(POLICY), settings.policy_partitions, {**_KEEP_FOREVER, **isr}),
        TopicSpec(t(K8S_EVENTS), settings.events_partitions, {**_KEEP_FOREVER, **isr}),
        TopicSpec(t(WORKLOADS), settings.workloads_partitions, {**_KEEP_FOREVER, **isr}),
        # Resource usage samples (the metrics API's source): telemetry, an hour of it.
        TopicSpec(
            t(USAGE),
            settings.nodes_partitions,
            {"cleanup.policy": "delete", "retention.ms": str(USAGE_RETENTION_MS), **isr},
        ),
        # Parked records are evidence for an operator; keep them 30 days.
        TopicSpec(t(DEAD_LETTER), 1, {"cleanup.policy": "delete", "retention.ms": "2592000000"}),
    ]


async def ensure_topics(settings: Settings) -> list[str]:
    """Create missing topics (idempotent); returns the names created now."""
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.kafka_bootstrap, **aiokafka_options())
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        missing = [spec for spec in topic_specs(settings) if spec.name not in existing]
        if not missing:
            return []
        new = [
            NewTopic(
                name=spec.name,
                num_partitions=spec.partitions,
                replication_factor=settings.replication_factor,
                topic_configs=spec.config,
            )
            for spec in missing
        ]
        response = await admin.create_topics(new)
        for topic, code, *rest in response.topic_errors:
            # 36 = TOPIC_ALREADY_EXISTS: another process won the race, which is all we need.
            if code not in (0, TopicAlreadyExistsError.errno):
                message = rest[0] if rest else ""
                raise RuntimeError(f"cannot create topic {topic}: error {code} {message}".strip())
        return [spec.name for spec in missing]
    finally:
        await admin.close()
