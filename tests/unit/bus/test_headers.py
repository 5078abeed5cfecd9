"""Skipping records by their `type` header, before any parsing."""

from __future__ import annotations

import asyncio

from aiokafka import TopicPartition
from aiokafka.structs import ConsumerRecord

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
