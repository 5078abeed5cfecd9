"""Node ownership from a consumer group's partitions: the same partition the producer's
partitioner picks for the node's key, and every node served by exactly one member."""

from __future__ import annotations

from aiokafka.partitioner import DefaultPartitioner
from hypothesis import given
from hypothesis import strategies as st

from inplace.core.bus.partitioning import partition_of
from services.kubelet.ownership import owned

NAMES = st.lists(st.from_regex(r"[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?", fullmatch=True), max_size=40)


@given(st.text(min_size=1, max_size=60), st.integers(min_value=1, max_value=64))
def test_a_node_lives_where_the_producer_writes_its_events(name: str, partitions: int) -> None:
    every = list(range(partitions))
    assert partition_of(name, partitions) == DefaultPartitioner()(name.encode(), every, every)


@given(NAMES, st.integers(min_value=1, max_value=12), st.integers(min_value=1, max_value=5))
def test_members_split_the_nodes_without_overlap(
    names: list[str], partitions: int, members: int
) -> None:
    # A round-robin share of partitions per member, as an assignor could hand them out.
    shares = [set(range(m, partitions, members)) for m in range(members)]
    served = [owned(names, share, partitions) for share in shares]
    assert set().union(*served) == set(names)
    assert sum(len(s) for s in served) == len(set(names))


def test_no_partition_no_node() -> None:
    assert owned(["node-0", "node-1"], set(), 6) == set()
    assert owned(["node-0", "node-1"], set(range(6)), 6) == {"node-0", "node-1"}
