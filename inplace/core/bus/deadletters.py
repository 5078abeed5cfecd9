"""Reading the dead-letter topic back (what an operator looks at)."""

from __future__ import annotations

from dataclasses import dataclass

from aiokafka import AIOKafkaConsumer, TopicPartition

from inplace.core.bus.auth import aiokafka_options
from schemas.events import DEAD_LETTER


@dataclass(frozen=True)
class DeadLetter:
    source: str  # topic:partition:offset of the parked record
    consumer: str
    reason: str
    value: bytes | None


async def read_dead_letters(
    bootstrap: str, limit: int = 50, topic_prefix: str = ""
) -> list[DeadLetter]:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, **aiokafka_options(), enable_auto_commit=False
    )
    await consumer.start()
    try:
        tp = TopicPartition(f"{topic_prefix}{DEAD_LETTER}", 0)
        consumer.assign([tp])
        end = (await consumer.end_offsets([tp]))[tp]
        consumer.seek(tp, max(0, end - limit))
        found: list[DeadLetter] = []
        while await consumer.position(tp) < end:
            for record in (await consumer.getmany(tp, timeout_ms=1000)).get(tp, []):
                h = {k: v.decode(errors="replace") for k, v in record.headers}
                source = (
                    f"{h.get('source-topic')}:{h.get('source-partition')}:{h.get('source-offset')}"
                )
                found.append(
                    DeadLetter(source, h.get("consumer", ""), h.get("reason", ""), record.value)
                )
        return found
    finally:
        await consumer.stop()
