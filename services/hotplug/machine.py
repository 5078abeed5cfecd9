"""Reading a real machine's capacity: pure parsers of the kernel's files, and a debouncer.

What Kubernetes' kubelet gets from cAdvisor's MachineInfo, from the same sources:
- cpu: the CPUs online now (`/sys/devices/system/cpu/online`, a cpulist such as `0-3,6`);
  CPU hot(un)plug moves CPUs on- and offline.
- memory: `MemTotal` of `/proc/meminfo` (cAdvisor's MemoryCapacity), in bytes.
- swap: `SwapTotal` (KEP-2400's nodeInfo.swap.capacity; here the node's "swap" capacity).
- hugepages-<size>: `HugePages_Total` * `Hugepagesize`, the default page size's pool, named
  as Kubernetes names it (`hugepages-2Mi`, `hugepages-1Gi`).

Nothing here touches a file: the service reads them and hands the text over.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Generic, TypeVar

from schemas.k8s import RESOURCE_CPU, RESOURCE_MEMORY, ResourceList
from schemas.nodeswap import SWAP_RESOURCE
from schemas.quantity import Quantity

__all__ = [
    "HUGEPAGES_PREFIX",
    "SWAP_RESOURCE",
    "Debouncer",
    "MemInfo",
    "hugepages_resource",
    "machine_capacity",
    "parse_cpu_list",
    "parse_meminfo",
    "same_capacity",
]

HUGEPAGES_PREFIX: Final = "hugepages-"
_KB: Final = 1024  # /proc/meminfo's "kB" is KiB

T = TypeVar("T")


def parse_cpu_list(text: str) -> int:
    """How many CPUs a kernel cpulist names (`0-3,6` → 5); an empty list is 0 CPUs.

    Raises ValueError for anything else, e.g. a reversed range or a repeated CPU.
    """
    text = text.strip()
    if not text:
        return 0
    cpus: set[int] = set()
    for part in text.split(","):
        first, dash, last = part.strip().partition("-")
        if not first.isdigit() or (dash and not last.isdigit()):
            raise ValueError(f"not a cpulist: {text!r}")
        lo, hi = int(first), int(last) if dash else int(first)
        if hi < lo:
            raise ValueError(f"reversed range {part!r} in cpulist {text!r}")
        span = set(range(lo, hi + 1))
        if cpus & span:
            raise ValueError(f"cpu listed twice in cpulist {text!r}")
        cpus |= span
    return len(cpus)


@dataclass(frozen=True)
class MemInfo:
    """The /proc/meminfo values capacity comes from, in bytes (hugepages: a page count)."""

    mem_total: int
    swap_total: int = 0
    hugepages_total: int = 0
    hugepage_size: int = 0


def parse_meminfo(text: str) -> MemInfo:
    """Parse /proc/meminfo (`Key:   value [kB]` lines). MemTotal is required; a kernel without
    swap or hugepages support has no SwapTotal / Hugepagesize line, which reads as 0."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        key, colon, rest = line.partition(":")
        if not colon:
            continue
        fields = rest.split()
        if not fields or not fields[0].isdigit():
            continue
        unit = fields[1] if len(fields) > 1 else ""
        values[key.strip()] = int(fields[0]) * (_KB if unit == "kB" else 1)
    if "MemTotal" not in values:
        raise ValueError("no MemTotal line in meminfo")
    return MemInfo(
        mem_total=values["MemTotal"],
        swap_total=values.get("SwapTotal", 0),
        hugepages_total=values.get("HugePages_Total", 0),
        hugepage_size=values.get("Hugepagesize", 0),
    )


def hugepages_resource(page_size_bytes: int) -> str:
    """Kubernetes' HugePageResourceName: `hugepages-` + the page size as a BinarySI quantity."""
    return HUGEPAGES_PREFIX + str(Quantity.from_int(page_size_bytes, "BinarySI"))


def machine_capacity(cpu_online: str, meminfo: str) -> ResourceList:
    """The node capacity a machine with these files has: cpu, memory, swap and the default
    hugepage pool (only when the kernel reports a hugepage size)."""
    info = parse_meminfo(meminfo)
    capacity: ResourceList = {
        RESOURCE_CPU: Quantity.from_int(parse_cpu_list(cpu_online)),
        RESOURCE_MEMORY: Quantity.from_int(info.mem_total, "BinarySI"),
        SWAP_RESOURCE: Quantity.from_int(info.swap_total, "BinarySI"),
    }
    if info.hugepage_size > 0:
        capacity[hugepages_resource(info.hugepage_size)] = Quantity.from_int(
            info.hugepages_total * info.hugepage_size, "BinarySI"
        )
    return capacity


class Debouncer(Generic[T]):
    """Lets a reading through only once it has been seen `polls` times in a row.

    A source flapping between two values never gets through; a stable one is returned on every
    poll from the `polls`-th on (comparing it with the node is the caller's business).
    """

    def __init__(self, polls: int) -> None:
        if polls < 1:
            raise ValueError("polls must be at least 1")
        self.polls = polls
        self._candidate: T | None = None
        self._seen = 0

    def observe(self, reading: T) -> T | None:
        if self._seen and reading == self._candidate:
            self._seen += 1
        else:
            self._candidate, self._seen = reading, 1
        return reading if self._seen >= self.polls else None


def same_capacity(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> bool:
    """Equal by value, a missing entry counting as zero (a node without swap = swap 0)."""
    zero = Quantity.from_int(0)
    return all(a.get(n, zero) == b.get(n, zero) for n in {*a, *b})
