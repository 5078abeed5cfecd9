"""The kubelet's usage samples: CPU rates from two readings, a node's record from its pods,
and a sampler's rounds over a runtime."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from schemas.usage import NodeUsage
from services.kubelet.cri import ContainerStats
from services.kubelet.usage import UsageSampler, node_record, rate, sample_forever

AT = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


def test_a_rate_needs_two_readings_of_one_container() -> None:
    assert rate(None, (5_000_000_000, 10.0)) is None
    assert rate((1_000_000_000, 10.0), (2_000_000_000, 14.0)) == 250_000_000
    assert rate((9_000_000_000, 10.0), (2_000_000_000, 14.0)) is None  # recreated


def test_a_node_is_the_sum_of_its_pods_and_validates_as_the_schema() -> None:
    raw = node_record(
        "node-0",
        {"team/b": [("app", 300, 2048)], "team/a": [("app", 100, 1024), ("sidecar", 1, 1)]},
        AT,
        15.0,
    )
    record = NodeUsage.model_validate_json(raw)
    assert (record.node, record.at, record.window_seconds) == ("node-0", AT, 15.0)
    assert (record.cpu_nanocores, record.memory_bytes) == (401, 3073)
    assert [(p.namespace, p.name) for p in record.pods] == [("team", "a"), ("team", "b")]
    assert [(c.name, c.cpu_nanocores) for c in record.pods[0].containers] == [
        ("app", 100),
        ("sidecar", 1),
    ]


class Stats:
    """A runtime's ListContainerStats: each call, every container known used 0.5 s more."""

    def __init__(self, known: set[str]) -> None:
        self.known = known
        self.cpu_ns = 0

    async def list_container_stats(self, ids: list[str]) -> dict[str, ContainerStats]:
        self.cpu_ns += 500_000_000
        return {c: ContainerStats(self.cpu_ns, 1 << 20) for c in ids if c in self.known}


def test_the_second_round_has_rates_a_gone_container_drops_out_a_node_let_go_restarts() -> None:
    runtime = Stats({"c1", "c2"})
    sampler = UsageSampler(runtime)  # type: ignore[arg-type]
    pods = {"team/web": {"app": "c1", "side": "c2"}}

    async def rounds() -> list[NodeUsage]:
        first = await sampler.sample("node-0", pods, 15.0)
        second = await sampler.sample("node-0", pods, 15.0)
        runtime.known.discard("c2")
        third = await sampler.sample("node-0", pods, 15.0)
        sampler.keep([])  # node-0 went to another process: its readings with it
        fourth = await sampler.sample("node-0", pods, 15.0)
        return [NodeUsage.model_validate_json(r) for r in (first, second, third, fourth)]

    first, second, third, fourth = asyncio.run(rounds())
    assert first.pods == []  # no earlier reading: no rate yet, the node's record all the same
    assert [c.name for c in second.pods[0].containers] == ["app", "side"]
    assert all(c.cpu_nanocores > 0 for c in second.pods[0].containers)
    assert [c.name for c in third.pods[0].containers] == ["app"]
    assert fourth.pods == []


@pytest.mark.parametrize(("late_after", "turns"), [(3600.0, 3), (0.0, 0)])
def test_a_round_lets_other_work_run_between_its_nodes(late_after: float, turns: int) -> None:
    """A round samples node after node without the runtime ever making it wait (the fake
    runtime's stats are in memory): the pods' work must still get turns in between, or every
    resize under way waits for the whole round; a round running late (a busy process) turns
    only once `turn_every` of its own work went by, not after every node, or it waits behind
    the queue once per node and the nodes' heartbeats come late."""
    sampler = UsageSampler(Stats({"c1"}))  # type: ignore[arg-type]
    nodes = {f"node-{i}": {"team/web": {"app": "c1"}} for i in range(3)}
    seen: list[str] = []

    async def write(records: list[tuple[bytes, bytes]]) -> None:
        seen.append(f"round of {len(records)}")
        raise asyncio.CancelledError  # one round is enough

    async def other_work() -> None:
        while True:
            seen.append("other")
            await asyncio.sleep(0)

    async def main() -> None:
        worker = asyncio.create_task(other_work())
        await asyncio.sleep(0)
        try:
            await sample_forever(
                sampler, lambda: nodes, write, every=0.0, turn_every=3600.0, late_after=late_after
            )
        except asyncio.CancelledError:
            pass
        worker.cancel()

    asyncio.run(main())
    during = seen[seen.index("other") + 1 : seen.index("round of 3")]
    # The round's first wait (for its start) is a turn too; then one per node, or none.
    assert during.count("other") == 1 + turns
