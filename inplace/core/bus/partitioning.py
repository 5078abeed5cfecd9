"""Which partition a keyed record goes to: Kafka's default partitioner (murmur2 of the key,
as the Java client). One rule for the producer and for whoever must know where a key lands
(the nodes a kubelet's partitions give it, a workload member's controllers, `inplace replay`'s
history of one pod)."""

from __future__ import annotations

from collections.abc import Sequence

from aiokafka.partitioner import DefaultPartitioner, murmur2

# aiokafka's murmur2 is pure Python (~4.6 us a key) and every write hashes its key; a role
# writes the same pods' and nodes' keys over and over. Bounded: emptied when full.
_MAX_REMEMBERED = 16_384
_hashes: dict[bytes, int] = {}


def key_hash(key: bytes) -> int:
    """murmur2 of `key` as the partitioners use it (positive), remembered."""
    found = _hashes.get(key)
    if found is None:
        if len(_hashes) >= _MAX_REMEMBERED:
            _hashes.clear()
        found = _hashes[key] = murmur2(key) & 0x7FFFFFFF
    return found


def partition_of(key: str, partitions: int) -> int:
    """The partition of `partitions` a record keyed `key` goes to."""
    return key_hash(key.encode()) % partitions


def partitioner(key: bytes | None, all_partitions: Sequence[int], available: Sequence[int]) -> int:
    """aiokafka's `partitioner` hook: DefaultPartitioner's choice, the hash remembered."""
    if key is None:
        return int(DefaultPartitioner()(key, all_partitions, available))
    return all_partitions[key_hash(key) % len(all_partitions)]
