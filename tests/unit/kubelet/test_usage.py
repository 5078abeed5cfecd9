"""The kubelet's usage samples: CPU rates from two readings, a node's record from its pods."""

from __future__ import annotations

from datetime import UTC, datetime

from schemas.usage import ContainerUsage, NodeUsage
from services.kubelet.usage import Reading, node_usage, rate

AT = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


def test_a_rate_needs_two_readings_of_one_container() -> None:
    assert rate(None, Reading(5_000_000_000, 10.0)) is None
    assert rate(Reading(1_000_000_000, 10.0), Reading(2_000_000_000, 14.0)) == 250_000_000
    assert rate(Reading(9_000_000_000, 10.0), Reading(2_000_000_000, 14.0)) is None  # recreated


def test_a_node_is_the_sum_of_its_pods_and_round_trips() -> None:
    record = node_usage(
        "node-0",
        {
            "team/b": [ContainerUsage(name="app", cpu_nanocores=300, memory_bytes=2048)],
            "team/a": [
                ContainerUsage(name="app", cpu_nanocores=100, memory_bytes=1024),
                ContainerUsage(name="sidecar", cpu_nanocores=1, memory_bytes=1),
            ],
        },
        AT,
        15.0,
    )
    assert (record.cpu_nanocores, record.memory_bytes) == (401, 3073)
    assert [(p.namespace, p.name) for p in record.pods] == [("team", "a"), ("team", "b")]
    assert NodeUsage.model_validate_json(record.model_dump_json(by_alias=True)) == record
