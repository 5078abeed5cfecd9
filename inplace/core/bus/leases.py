"""A role process's membership in its consumer group on the topic its work is keyed by.

Processes of one role share its work through Kafka's own machinery: they form one consumer
group on the topic whose key names the unit of work (the kubelet: `nodes`, keyed by node; the
workload controller: `workloads`, keyed by CloneSet), and Kafka's group coordinator hands each
member whole partitions, so every unit lives on one partition and is served by one process
(`partitioning.partition_of`). No lock, no leader election. The callbacks run inside the rebalance:
`on_revoked` must have stopped the work of its partitions before it returns (eager
rebalancing: a revoked partition may go to another member, which starts as soon as every
member has rejoined), `on_assigned` starts the work of the new assignment. A SIGKILLed
member's partitions move after its session times out; a member restarted under the same
static name (KIP-345) gets its partitions back at once.

Records are read and dropped: the role's read model already folds the topic; the group is
here only for its assignment (polling keeps the membership alive).
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Awaitable, Callable

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
from pydantic import Field
from pydantic_settings import BaseSettings

from inplace.core.bus.auth import aiokafka_options

log = logging.getLogger(__name__)

Callback = Callable[[set[int]], Awaitable[None]]

HEARTBEAT_MS = 1000  # at most; a third of the session timeout when that is shorter


class GroupMember(BaseSettings):
    """A role process's settings as a member of its role's group; each role's own settings
    inherit them under its prefix (INPLACE_KUBELET_INSTANCE, INPLACE_WORKLOAD_INSTANCE …)."""

    # A member that dies without leaving gives its partitions up after this long without a
    # heartbeat.
    group_session_timeout: float = Field(default=10.0, ge=6.0, le=300.0)
    # Static group membership (KIP-345): a process restarted under the same name gets its
    # partitions back at once, without waiting for the session timeout. Defaults to the
    # host's name (one process of a role per host); several processes of a role on one host
    # need a name each (`inplace up --kubelets N` gives kubelet-1 … kubelet-N).
    instance: str = Field(default_factory=socket.gethostname, min_length=1)


class _Listener(ConsumerRebalanceListener):  # type: ignore[misc]
    """aiokafka logs a listener's exception and carries on, which would leave work unserved
    without a word: the failure is kept and ends the group member (the role restarts)."""

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


class PartitionLeases:
    def __init__(
        self,
        bootstrap: str,
        *,
        role: str,
        topic: str,
        group: str,
        on_assigned: Callback,
        on_revoked: Callback,
        session_timeout: float,
        instance: str,
        stop_timeout: float,
    ) -> None:
        """`instance`: this process's static member name; `stop_timeout`: how long revoking
        may take (e.g. a node agent finishes the pod in hand)."""
        self.role = role
        self.topic = topic
        self.group = group
        self._listener = _Listener(on_assigned, on_revoked)
        self._consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            **aiokafka_options(),
            group_id=group,
            group_instance_id=instance,
            client_id=role,
            enable_auto_commit=False,
            auto_offset_reset="latest",
            session_timeout_ms=int(session_timeout * 1000),
            # A member learns of a rebalance from a heartbeat's answer: every second, not a
            # third of the session timeout (a process joining waited ~3 s for the others).
            heartbeat_interval_ms=min(HEARTBEAT_MS, int(session_timeout * 1000) // 3),
            rebalance_timeout_ms=int((session_timeout + stop_timeout) * 1000),
        )

        # How many partitions the topic has: the modulus of `partition_of`.
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
            log.info("%s joined consumer group %s on %s", self.role, self.group, self.topic)
            while True:  # assignment callbacks run inside these polls
                await self._consumer.getmany(timeout_ms=1000, max_records=500)
                if self._listener.failed is not None:
                    raise RuntimeError(
                        f"taking or giving up partitions failed: {self._listener.failed!r}"
                    ) from self._listener.failed
        finally:
            await self._consumer.stop()
