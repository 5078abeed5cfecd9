"""The kubelet process's membership in its consumer group on the `nodes` topic.

Kafka's group coordinator hands each member whole partitions; `ownership.owned` turns them
into nodes. The callbacks run inside the rebalance: `on_revoked` must have stopped every node
agent before it returns (eager rebalancing: a revoked partition may go to another member, which
starts as soon as every member has rejoined), `on_assigned` starts the nodes of the new
assignment. A SIGKILLed member's partitions move after its session times out.

Records are read and dropped: the read model already folds the `nodes` topic; the group is
here only for its assignment (polling keeps the membership alive).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition

from inplace.core.bus.auth import aiokafka_options

log = logging.getLogger(__name__)

Callback = Callable[[set[int]], Awaitable[None]]


class _Listener(ConsumerRebalanceListener):  # type: ignore[misc]
    """aiokafka logs a listener's exception and carries on, which would leave nodes unserved
    without a word: the failure is kept and ends the group member (the kubelet restarts)."""

    def __init__(self, on_assigned: Callback, on_revoked: Callback) -> None:
        self._assigned = on_assigned
        self._revoked = on_revoked
        self.failed: BaseException | None = None

    async def on_partitions_revoked(self, revoked: list[TopicPartition]) -> None:
        try:
            await self._revoked({tp.partition for tp in revoked})
        except Exception as exc:
            self.failed = exc

    async def on_partitions_assigned(self, assigned: list[TopicPartition]) -> None:
        try:
            await self._assigned({tp.partition for tp in assigned})
        except Exception as exc:
            self.failed = exc


class NodeLeases:
    def __init__(
        self,
        bootstrap: str,
        *,
        topic: str,
        group: str,
        on_assigned: Callback,
        on_revoked: Callback,
        session_timeout: float,
        instance: str,
        stop_timeout: float,
    ) -> None:
        """`instance`: this process's static member name; `stop_timeout`: how long revoking
        may take (a node agent finishes the pod in hand)."""
        self.topic = topic
        self.group = group
        self._listener = _Listener(on_assigned, on_revoked)
        self._consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            **aiokafka_options(),
            group_id=group,
            group_instance_id=instance,
            client_id="kubelet",
            enable_auto_commit=False,
            auto_offset_reset="latest",
            session_timeout_ms=int(session_timeout * 1000),
            heartbeat_interval_ms=max(500, int(session_timeout * 1000) // 3),
            rebalance_timeout_ms=int((session_timeout + stop_timeout) * 1000),
        )

        # How many partitions the `nodes` topic has: the modulus of `partition_of`.
        self.count = 0

    async def run(self) -> None:
        await self._consumer.start()
        try:
            await self._consumer._client.force_metadata_update()
            parts = self._consumer.partitions_for_topic(self.topic)
            if not parts:
                raise RuntimeError(f"topic {self.topic} does not exist: run `inplace topics`")
            self.count = len(parts)
            self._consumer.subscribe([self.topic], listener=self._listener)
            log.info("kubelet joined consumer group %s on %s", self.group, self.topic)
            while True:  # assignment callbacks run inside these polls
                await self._consumer.getmany(timeout_ms=1000, max_records=500)
                if self._listener.failed is not None:
                    raise RuntimeError(
                        f"taking or giving up nodes failed: {self._listener.failed!r}"
                    ) from self._listener.failed
        finally:
            await self._consumer.stop()
