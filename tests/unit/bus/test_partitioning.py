"""One partitioning rule: the producer's partitioner and `partition_of` agree with Kafka's
default partitioner (aiokafka's DefaultPartitioner, murmur2 as the Java client)."""

from __future__ import annotations

from aiokafka.partitioner import DefaultPartitioner
from hypothesis import given
from hypothesis import strategies as st

from inplace.core.bus import partitioning
from inplace.core.bus.partitioning import partition_of, partitioner

KEYS = st.text(min_size=1, max_size=80)


@given(KEYS, st.integers(min_value=1, max_value=64))
def test_a_key_lands_where_kafkas_default_partitioner_puts_it(key: str, count: int) -> None:
    parts = list(range(count))
    expected = DefaultPartitioner()(key.encode(), parts, parts)
    assert partitioner(key.encode(), parts, parts) == expected
    assert partitioner(key.encode(), parts, parts) == expected  # remembered: the same
    assert partition_of(key, count) == expected


def test_the_remembered_hashes_stay_bounded_and_right() -> None:
    parts = list(range(12))
    keys = [f"ns/pod-{i}".encode() for i in range(partitioning._MAX_REMEMBERED + 10)]
    for key in keys:
        partitioner(key, parts, parts)
    assert len(partitioning._hashes) <= partitioning._MAX_REMEMBERED
    assert all(
        partitioner(key, parts, parts) == DefaultPartitioner()(key, parts, parts)
        for key in keys[::97]
    )


def test_a_record_without_a_key_goes_to_an_available_partition() -> None:
    assert partitioner(None, [0, 1, 2], [2]) == 2
