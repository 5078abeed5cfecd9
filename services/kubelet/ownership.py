"""Which nodes this kubelet process serves: a pure function of the partitions Kafka's group
coordinator gave it.

Every event about a node is keyed by the node's name on the `nodes` topic, so a node lives on
one partition, chosen by the producer's partitioner (murmur2 of the key, as Kafka's Java
client). Kubelet processes of one configuration form one consumer group on that topic: the
partitions a process is assigned are the nodes it serves, and a rebalance moves whole nodes
(DESIGN.md §6). No lock, no leader election: only Kafka's own assignment.
"""

from __future__ import annotations

from collections.abc import Iterable

from inplace.core.bus.partitioning import partition_of


def owned(nodes: Iterable[str], assigned: Iterable[int], partitions: int) -> set[str]:
    """The nodes among `nodes` whose partition is one of `assigned`."""
    mine = set(assigned)
    return {n for n in nodes if partition_of(n, partitions) in mine}
