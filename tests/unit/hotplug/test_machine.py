"""Machine capacity parsers (cpulist, /proc/meminfo) and the debouncer, from sample files."""

from __future__ import annotations

import pytest

from schemas.quantity import Quantity
from services.hotplug.machine import (
    Debouncer,
    MemInfo,
    hugepages_resource,
    machine_capacity,
    parse_cpu_list,
    parse_meminfo,
    same_capacity,
)

# A 4-CPU VM with 16 GiB, 2 GiB of swap and 512 default (2Mi) hugepages reserved.
MEMINFO_VM = """\
MemTotal:       16777216 kB
MemFree:        12000000 kB
MemAvailable:   14000000 kB
Buffers:          100000 kB
SwapCached:            0 kB
SwapTotal:       2097152 kB
SwapFree:        2097152 kB
AnonHugePages:         0 kB
HugePages_Total:     512
HugePages_Free:      512
HugePages_Rsvd:        0
HugePages_Surp:        0
Hugepagesize:       2048 kB
Hugetlb:         1048576 kB
"""

# After memory hotplug (+8 GiB) and a swap device removed.
MEMINFO_GROWN = """\
MemTotal:       25165824 kB
MemFree:        20000000 kB
SwapTotal:             0 kB
SwapFree:              0 kB
HugePages_Total:     512
Hugepagesize:       2048 kB
"""

# A kernel without swap or hugetlb support: no such lines at all.
MEMINFO_MINIMAL = "MemTotal:        1024000 kB\nMemFree:          512000 kB\n"

# 1 GiB default hugepages.
MEMINFO_GIGANTIC = """\
MemTotal:       67108864 kB
SwapTotal:             0 kB
HugePages_Total:       4
Hugepagesize:    1048576 kB
"""


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("0-3\n", 4),
        ("0\n", 1),
        ("0-1", 2),
        ("0-3,6\n", 5),
        ("0,2-3,5,7-8\n", 6),
        ("0-63,128-191\n", 128),
        ("", 0),
        ("\n", 0),
    ],
)
def test_parse_cpu_list(text: str, want: int) -> None:
    assert parse_cpu_list(text) == want


@pytest.mark.parametrize("text", ["3-1", "0-", "a-b", "0,,1", "0-3,2", "-1", "0 1"])
def test_parse_cpu_list_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_cpu_list(text)


@pytest.mark.parametrize(
    ("text", "want"),
    [
        (MEMINFO_VM, MemInfo(16 * 2**30, 2 * 2**30, 512, 2 * 2**20)),
        (MEMINFO_GROWN, MemInfo(24 * 2**30, 0, 512, 2 * 2**20)),
        (MEMINFO_MINIMAL, MemInfo(1024000 * 1024, 0, 0, 0)),
        (MEMINFO_GIGANTIC, MemInfo(64 * 2**30, 0, 4, 2**30)),
    ],
)
def test_parse_meminfo(text: str, want: MemInfo) -> None:
    assert parse_meminfo(text) == want


def test_parse_meminfo_needs_memtotal() -> None:
    with pytest.raises(ValueError, match="MemTotal"):
        parse_meminfo("MemFree: 10 kB\nnot a line\n")


@pytest.mark.parametrize(
    ("size", "want"),
    [(2 * 2**20, "hugepages-2Mi"), (2**30, "hugepages-1Gi"), (64 * 2**10, "hugepages-64Ki")],
)
def test_hugepages_resource(size: int, want: str) -> None:
    assert hugepages_resource(size) == want


@pytest.mark.parametrize(
    ("cpus", "meminfo", "want"),
    [
        (
            "0-3\n",
            MEMINFO_VM,
            {"cpu": "4", "memory": "16Gi", "swap": "2Gi", "hugepages-2Mi": "1Gi"},
        ),
        (
            "0-7\n",
            MEMINFO_GROWN,
            {"cpu": "8", "memory": "24Gi", "swap": "0", "hugepages-2Mi": "1Gi"},
        ),
        ("0\n", MEMINFO_MINIMAL, {"cpu": "1", "memory": "1000Mi", "swap": "0"}),
        (
            "0-15",
            MEMINFO_GIGANTIC,
            {"cpu": "16", "memory": "64Gi", "swap": "0", "hugepages-1Gi": "4Gi"},
        ),
    ],
)
def test_machine_capacity(cpus: str, meminfo: str, want: dict[str, str]) -> None:
    got = machine_capacity(cpus, meminfo)
    assert {k: str(v) for k, v in got.items()} == want


def test_debouncer_lets_a_stable_reading_through_and_never_a_flapping_one() -> None:
    d: Debouncer[int] = Debouncer(2)
    assert [d.observe(x) for x in (4, 4, 4)] == [None, 4, 4]
    flapping = [d.observe(x) for x in (8, 4, 8, 4, 8, 4)]
    assert flapping == [None] * 6
    assert [d.observe(x) for x in (8, 8)] == [None, 8]
    once: Debouncer[int] = Debouncer(1)
    assert [once.observe(x) for x in (1, 2, 2)] == [1, 2, 2]
    with pytest.raises(ValueError):
        Debouncer(0)


def test_same_capacity_counts_missing_as_zero() -> None:
    node = {"cpu": Quantity("4"), "memory": Quantity("16Gi")}
    machine = {**node, "swap": Quantity("0"), "memory": Quantity("17179869184")}
    assert same_capacity(node, machine)
    assert not same_capacity(node, {**machine, "swap": Quantity("1Gi")})
