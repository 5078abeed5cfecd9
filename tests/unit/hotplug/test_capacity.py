"""A resize request, and the node's new capacity and allocatable (reserved part kept)."""

from __future__ import annotations

from typing import Any

import pytest

from schemas.quantity import Quantity
from services.hotplug.capacity import (
    InvalidResize,
    MalformedResize,
    parse_request,
    plan_resize,
)


def q(values: dict[str, str]) -> dict[str, Quantity]:
    return {k: Quantity(v) for k, v in values.items()}


def s(values: dict[str, Quantity]) -> dict[str, str]:
    return {k: str(v) for k, v in values.items()}


# A node with 500m CPU and 1Gi memory reserved (system + kube reserved).
CAPACITY = {"cpu": "8", "memory": "32Gi", "pods": "110"}
ALLOCATABLE = {"cpu": "7500m", "memory": "31Gi", "pods": "110"}

PLAN_CASES: list[tuple[str, dict[str, str], dict[str, str], dict[str, str]]] = [
    # case, requested, new capacity, new allocatable
    (
        "upsize cpu and memory keeps the reserved part",
        {"cpu": "16", "memory": "64Gi"},
        {"cpu": "16", "memory": "64Gi", "pods": "110"},
        {"cpu": "15500m", "memory": "63Gi", "pods": "110"},
    ),
    (
        "downsize memory only",
        {"memory": "16Gi"},
        {"cpu": "8", "memory": "16Gi", "pods": "110"},
        {"cpu": "7500m", "memory": "15Gi", "pods": "110"},
    ),
    (
        "swap appears: nothing reserved of it",
        {"swap": "8Gi"},
        {"cpu": "8", "memory": "32Gi", "pods": "110", "swap": "8Gi"},
        {"cpu": "7500m", "memory": "31Gi", "pods": "110", "swap": "8Gi"},
    ),
    (
        "a hugepage pool takes allocatable memory",
        {"hugepages-2Mi": "2Gi"},
        {"cpu": "8", "memory": "32Gi", "pods": "110", "hugepages-2Mi": "2Gi"},
        {"cpu": "7500m", "memory": "29Gi", "pods": "110", "hugepages-2Mi": "2Gi"},
    ),
    (
        "same values in another spelling: unchanged",
        {"cpu": "8000m", "memory": "34359738368"},
        CAPACITY,
        ALLOCATABLE,
    ),
]


@pytest.mark.parametrize(
    ("case", "requested", "capacity", "allocatable"), PLAN_CASES, ids=[c[0] for c in PLAN_CASES]
)
def test_plan_resize(
    case: str, requested: dict[str, str], capacity: dict[str, str], allocatable: dict[str, str]
) -> None:
    change = plan_resize("node-0", q(CAPACITY), q(ALLOCATABLE), q(requested))
    assert s(change.new_capacity) == capacity
    assert s(change.new_allocatable) == allocatable
    assert s(change.old_capacity) == CAPACITY and s(change.old_allocatable) == ALLOCATABLE
    assert change.changed == (capacity != CAPACITY)


def test_memory_flow_10g_15g_5g_15g() -> None:
    # KEP-3953 Flow Control: the node keeps its 1G reserved at every step.
    capacity, allocatable = q({"cpu": "4", "memory": "10G"}), q({"cpu": "4", "memory": "9G"})
    seen = []
    for memory in ("15G", "5G", "15G"):
        change = plan_resize("n", capacity, allocatable, q({"memory": memory}))
        seen.append((str(change.new_capacity["memory"]), str(change.new_allocatable["memory"])))
        capacity, allocatable = change.new_capacity, change.new_allocatable
    assert seen == [("15G", "14G"), ("5G", "4G"), ("15G", "14G")]


def test_describe_lists_only_what_changed() -> None:
    change = plan_resize("n", q(CAPACITY), q(ALLOCATABLE), q({"cpu": "16", "swap": "8Gi"}))
    assert change.describe() == (
        "capacity cpu 8->16, swap 0->8Gi; allocatable cpu 7500m->15500m, swap 0->8Gi"
    )


INVALID_CASES: list[tuple[str, dict[str, str], str]] = [
    ("zero cpu", {"cpu": "0"}, 'cpu: Invalid value: "0": must be greater than zero'),
    ("negative memory", {"memory": "-1Gi"}, 'memory: Invalid value: "-1Gi": must be greater'),
    ("negative swap", {"swap": "-1"}, 'swap: Invalid value: "-1": must be greater than or equal'),
    (
        "below the reserved cpu",
        {"cpu": "500m"},
        'cpu: Invalid value: "500m": leaves no allocatable cpu: cpu capacity must be greater '
        "than the 500m reserved for the system",
    ),
    (
        "below the reserved memory",
        {"memory": "512Mi"},
        'memory: Invalid value: "512Mi": leaves no allocatable memory: memory capacity must be '
        "greater than the 1Gi reserved for the system",
    ),
    (
        "hugepages eating all memory",
        {"hugepages-1Gi": "31Gi"},
        'hugepages-1Gi: Invalid value: "31Gi": leaves no allocatable memory: memory capacity '
        "must be greater than the 32Gi reserved for the system and hugepages",
    ),
    (
        "hugepages not whole pages",
        {"hugepages-2Mi": "3Mi"},
        'hugepages-2Mi: Invalid value: "3Mi": must be a whole number of 2Mi pages',
    ),
    ("bad page size", {"hugepages-x": "2Mi"}, "is not a valid hugepage size"),
]


@pytest.mark.parametrize(
    ("case", "requested", "message"), INVALID_CASES, ids=[c[0] for c in INVALID_CASES]
)
def test_plan_resize_refuses(case: str, requested: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidResize) as info:
        plan_resize("node-0", q(CAPACITY), q(ALLOCATABLE), q(requested))
    assert message in str(info.value)
    assert [p.field for p in info.value.problems] == list(requested)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([], "must be a JSON object"),
        (None, "must be a JSON object"),
        ({}, "nothing to resize"),
        ({"cpu": "4", "pods": "200"}, 'unknown field "pods"'),
    ],
)
def test_parse_request_malformed(body: Any, message: str) -> None:
    with pytest.raises(MalformedResize, match=message):
        parse_request(body)


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"memory": "64Gb"}, "memory", "quantities must match the regular expression"),
        ({"cpu": "1.2.3"}, "cpu", "quantities must match"),
        ({"cpu": True}, "cpu", "must be a quantity"),
        ({"swap": {"size": 1}}, "swap", "must be a quantity"),
    ],
)
def test_parse_request_invalid(body: Any, field: str, message: str) -> None:
    with pytest.raises(InvalidResize) as info:
        parse_request(body)
    [problem] = info.value.problems
    assert problem.field == field and message in problem.message


def test_parse_request_numbers_and_strings() -> None:
    got = parse_request({"cpu": 16, "memory": "64Gi", "swap": "0", "hugepages-2Mi": "1Gi"})
    assert s(got) == {"cpu": "16", "memory": "64Gi", "swap": "0", "hugepages-2Mi": "1Gi"}
