"""Skipping records by their `type` header, before any parsing."""

from __future__ import annotations

import asyncio

from aiokafka import TopicPartition
from aiokafka.structs import ConsumerRecord
from prometheus_client import REGISTRY

from inplace.core.bus.consumer import decode_batch
from inplace.core.bus.headers import of_types
from schemas import events as ev
from schemas.envelope import Envelope


def raw(offset: int, envelope: Envelope | None, headers: bool = True) -> ConsumerRecord:  # type: ignore[type-arg]
    value = envelope.encode() if envelope else b"{not json"
    kind = envelope.type if envelope else "ResizeProposed"
    return ConsumerRecord(
        "pods", 0, offset, 0, 0, b"k", value, None, 1, len(value),
        [("type", kind.encode())] if headers else [],
    )  # fmt: skip


def envelope(payload: ev.PodEvent) -> Envelope:
    return Envelope.wrap(payload, producer="test")


def test_of_types_takes_named_types_and_records_without_the_header() -> None:
    proposed = envelope(ev.ResizeProposed(namespace="a", name="p", uid="u", containers=[]))
    deleted = envelope(ev.PodDeleted(namespace="a", name="p", uid="u"))
    accept = of_types({"PodDeleted"})
    assert accept(raw(0, deleted))
    assert not accept(raw(1, proposed))
    assert accept(raw(2, proposed, headers=False))


def test_skipped_records_are_not_decoded_but_advance_the_position() -> None:
    proposed = envelope(ev.ResizeProposed(namespace="a", name="p", uid="u", containers=[]))
    deleted = envelope(ev.PodDeleted(namespace="a", name="p", uid="u"))
    tp = TopicPartition("pods", 0)
    # A malformed record under a skipped type is never parsed, so never dead-lettered.
    items = [raw(0, proposed), raw(1, None), raw(2, deleted), raw(3, proposed)]
    batch = asyncio.run(decode_batch({tp: items}, "test", None, of_types({"PodDeleted"})))
    assert [r.envelope.type for r in batch.records] == ["PodDeleted"]
    assert [r.position.offset for r in batch.records] == [2]
    assert batch.malformed == []
    assert batch.next_offsets == {tp: 4}


def test_records_before_the_readers_position_are_counted_not_decoded() -> None:
    """A reader's own writes, applied from their bytes on the broker's ack, come back in a
    later fetch below its position: counted as consumed by their type header, not parsed."""
    proposed = envelope(ev.ResizeProposed(namespace="a", name="p", uid="u", containers=[]))
    tp = TopicPartition("pods", 0)
    labels = {"role": "own-test", "type": "ResizeProposed"}
    items = [raw(0, None), raw(1, None), raw(2, proposed)]  # 0, 1: never parsed
    batch = asyncio.run(decode_batch({tp: items}, "own-test", None, None, {tp: 2}))
    assert [r.position.offset for r in batch.records] == [2]
    assert batch.malformed == []
    assert batch.next_offsets == {tp: 3}
    assert REGISTRY.get_sample_value("inplace_events_consumed_total", labels) == 3
    # Without a position every record is decoded: the two malformed ones are found.
    batch = asyncio.run(decode_batch({tp: items}, "own-test", None))
    assert [bad.position.offset for bad in batch.malformed] == [0, 1]
