"""The latest resource usage sample of each node, followed from the `usage` topic (the
kubelets write one per node every so often): what the metrics API serves. Records are kept
raw and decoded when asked; samples older than FRESH_S are left out, as metrics-server drops
a node it can no longer scrape."""

from __future__ import annotations

import asyncio
import logging
import time

from aiokafka import AIOKafkaConsumer, TopicPartition
from pydantic import ValidationError

from inplace.core.bus.auth import aiokafka_options
from inplace.core.settings import Settings
from schemas.usage import USAGE, NodeUsage

FRESH_S = 120.0
MISSING_TOPIC_RETRY_S = 30.0
log = logging.getLogger(__name__)


class UsageFollower:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._latest: dict[str, tuple[float, bytes]] = {}  # node → (written at, record)

    def node(self, name: str) -> NodeUsage | None:
        """The node's latest fresh sample, if any (a malformed one counts as none)."""
        held = self._latest.get(name)
        if held is None or time.time() - held[0] > FRESH_S:
            return None
        try:
            return NodeUsage.model_validate_json(held[1])
        except ValidationError:
            log.warning("malformed usage sample of node %s skipped", name)
            return None

    def heard(self) -> dict[str, float]:
        """When each node's kubelet last wrote a sample (seconds since the epoch), fresh or
        not: the node's heartbeat."""
        return {node: written for node, (written, _) in self._latest.items()}

    def nodes(self) -> list[NodeUsage]:
        return [u for name in sorted(self._latest) if (u := self.node(name)) is not None]

    async def run(self) -> None:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=self.settings.kafka_bootstrap,
            **aiokafka_options(),
            group_id=None,
            enable_auto_commit=False,
            client_id="apiserver-usage",
        )
        await consumer.start()
        try:
            topic = self.settings.topic(USAGE)
            while not (parts := consumer.partitions_for_topic(topic)):
                await consumer._client.force_metadata_update()  # first use of the topic
                if parts := consumer.partitions_for_topic(topic):
                    break
                # A cluster whose topics predate it: `inplace topics` makes the missing ones.
                log.warning("no %s topic yet: the metrics API stays empty until there is", topic)
                await asyncio.sleep(MISSING_TOPIC_RETRY_S)
            tps = [TopicPartition(topic, p) for p in sorted(parts)]
            consumer.assign(tps)
            # From the samples of the last FRESH_S on: the history before is of no use.
            since = int((time.time() - FRESH_S) * 1000)
            found = await consumer.offsets_for_times(dict.fromkeys(tps, since))
            for tp in tps:
                if found.get(tp) is not None:
                    consumer.seek(tp, found[tp].offset)  # type: ignore[union-attr]
                else:
                    await consumer.seek_to_end(tp)
            while True:
                batches = await consumer.getmany(timeout_ms=1000)
                for records in batches.values():
                    for record in records:
                        if record.key and record.value:
                            node = record.key.decode(errors="replace")
                            self._latest[node] = (record.timestamp / 1000, record.value)
        finally:
            await consumer.stop()
