"""Pure: read a resize request, and compute a node's new capacity and allocatable (KEP-3953).

A resize names new capacities for some of cpu, memory, swap and hugepages-<size> (what hotplug
can change: the KEP's "Node Compute Resource"); every other capacity entry stays.

Allocatable keeps what the node reserved: per resource, new allocatable = new capacity -
(old capacity - old allocatable). KEP-3953 leaves system/kube reserved alone ("Non-Goals:
Dynamically adjust system reserved and kube reserved values"). Memory also gives up whatever
hugepages take, as the kubelet's node allocatable does (pre-allocated hugepages are not
memory pods can use): a hugepage pool that grows by 1Gi takes 1Gi of allocatable memory.

initialCapacity is not ours: the reducer sets it at registration and a resize never moves it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from schemas.k8s import RESOURCE_CPU, RESOURCE_MEMORY, ResourceList
from schemas.quantity import ZERO, Quantity, QuantityError
from services.hotplug.machine import HUGEPAGES_PREFIX, SWAP_RESOURCE, same_capacity

__all__ = [
    "RESIZABLE",
    "CapacityChange",
    "InvalidResize",
    "MalformedResize",
    "Problem",
    "parse_request",
    "plan_resize",
]

RESIZABLE: Final = (RESOURCE_CPU, RESOURCE_MEMORY, SWAP_RESOURCE)
# A node can run without swap or hugepages, never without CPUs or memory.
_MUST_BE_POSITIVE: Final = frozenset({RESOURCE_CPU, RESOURCE_MEMORY})
_NAMES_HINT: Final = "cpu, memory, swap, hugepages-<size>"


class MalformedResize(ValueError):
    """The request is not a resize at all (400 BadRequest)."""


@dataclass(frozen=True)
class Problem:
    """One invalid field, worded like Kubernetes' field errors."""

    field: str
    value: str
    message: str

    def __str__(self) -> str:
        return f'{self.field}: Invalid value: "{self.value}": {self.message}'


class InvalidResize(ValueError):
    """A well-formed resize with values that cannot be (422 Invalid)."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__(", ".join(str(p) for p in problems))
        self.problems = problems


def _is_hugepages(name: str) -> bool:
    return name.startswith(HUGEPAGES_PREFIX)


def _page_size(name: str) -> Quantity | None:
    try:
        size = Quantity.parse(name.removeprefix(HUGEPAGES_PREFIX))
    except QuantityError:
        return None
    return size if ZERO < size else None


def parse_request(body: Any) -> ResourceList:
    """The requested capacities of a JSON body such as `{"cpu": "16", "memory": "64Gi"}`.

    Raises MalformedResize for a body that is not such an object (or names nothing, or
    something that is not resizable), InvalidResize for values that are not quantities.
    """
    if not isinstance(body, dict):
        raise MalformedResize(
            'the request body must be a JSON object such as {"cpu": "16", "memory": "64Gi"}'
        )
    if not body:
        raise MalformedResize(f"nothing to resize: name at least one of {_NAMES_HINT}")
    unknown = sorted(k for k in body if k not in RESIZABLE and not _is_hugepages(k))
    if unknown:
        raise MalformedResize(
            f'unknown field "{unknown[0]}": a node resize changes only {_NAMES_HINT}'
        )
    requested: ResourceList = {}
    problems: list[Problem] = []
    for name, raw in body.items():
        if isinstance(raw, bool) or not isinstance(raw, str | int | float):
            problems.append(Problem(name, str(raw), "must be a quantity such as 16 or 64Gi"))
            continue
        try:
            requested[name] = Quantity.parse(raw)
        except QuantityError as exc:
            problems.append(Problem(name, str(raw), str(exc)))
    if problems:
        raise InvalidResize(problems)
    return requested


@dataclass(frozen=True)
class CapacityChange:
    """A node's capacity and allocatable before and after a resize."""

    name: str
    old_capacity: ResourceList
    new_capacity: ResourceList
    old_allocatable: ResourceList
    new_allocatable: ResourceList

    @property
    def changed(self) -> bool:
        return not same_capacity(self.old_capacity, self.new_capacity) or not same_capacity(
            self.old_allocatable, self.new_allocatable
        )

    def describe(self) -> str:
        """`capacity cpu 8->16, memory 32Gi->64Gi; allocatable cpu 8->16, …` (changes only)."""
        return (
            f"capacity {_deltas(self.old_capacity, self.new_capacity)}; "
            f"allocatable {_deltas(self.old_allocatable, self.new_allocatable)}"
        )


def _deltas(old: Mapping[str, Quantity], new: Mapping[str, Quantity]) -> str:
    names = [n for n in new if old.get(n, ZERO) != new[n]]
    names += [n for n in old if n not in new and not old[n].is_zero()]
    if not names:
        return "unchanged"
    return ", ".join(f"{n} {old.get(n, ZERO)}->{new.get(n, ZERO)}" for n in names)


def _hugepages_total(capacity: Mapping[str, Quantity]) -> Quantity:
    return sum((q for n, q in capacity.items() if _is_hugepages(n)), ZERO)


def _value_problems(requested: Mapping[str, Quantity]) -> list[Problem]:
    problems: list[Problem] = []
    for name, quantity in requested.items():
        if name in _MUST_BE_POSITIVE and not ZERO < quantity:
            problems.append(Problem(name, str(quantity), "must be greater than zero"))
        elif quantity < ZERO:
            problems.append(Problem(name, str(quantity), "must be greater than or equal to 0"))
        elif _is_hugepages(name):
            size = _page_size(name)
            if size is None:
                problems.append(Problem(name, str(quantity), "is not a valid hugepage size"))
            elif quantity.value() % size.value() != 0:
                problems.append(
                    Problem(name, str(quantity), f"must be a whole number of {size} pages")
                )
    return problems


def plan_resize(
    name: str,
    capacity: Mapping[str, Quantity],
    allocatable: Mapping[str, Quantity],
    requested: Mapping[str, Quantity],
) -> CapacityChange:
    """The node's capacity and allocatable with `requested` applied (see the module docstring).

    A value equal to the current one changes nothing (and keeps the current spelling), so a
    resize to the same capacity is a no-op (`changed` is False). Raises InvalidResize for a
    zero or negative cpu/memory, a negative swap or hugepage pool, a pool that is not whole
    pages, and a capacity that leaves nothing allocatable once the reserved part is taken.
    """
    problems = _value_problems(requested)
    if problems:
        raise InvalidResize(problems)
    new_capacity: ResourceList = dict(capacity)
    new_allocatable: ResourceList = dict(allocatable)
    for resource, quantity in requested.items():
        old = capacity.get(resource)
        if old is not None and old == quantity:
            continue
        new_capacity[resource] = quantity
        if old is None or resource not in allocatable:
            # Nothing was reserved of a resource the node did not advertise before.
            new_allocatable[resource] = quantity
        else:
            new_allocatable[resource] = allocatable[resource] + (quantity - old)
    hugepages_delta = _hugepages_total(new_capacity) - _hugepages_total(capacity)
    if not hugepages_delta.is_zero() and RESOURCE_MEMORY in new_allocatable:
        new_allocatable[RESOURCE_MEMORY] = new_allocatable[RESOURCE_MEMORY] - hugepages_delta
    problems = _allocatable_problems(requested, new_capacity, new_allocatable)
    if problems:
        raise InvalidResize(problems)
    return CapacityChange(
        name=name,
        old_capacity=dict(capacity),
        new_capacity=new_capacity,
        old_allocatable=dict(allocatable),
        new_allocatable=new_allocatable,
    )


def _allocatable_problems(
    requested: Mapping[str, Quantity],
    new_capacity: Mapping[str, Quantity],
    new_allocatable: Mapping[str, Quantity],
) -> list[Problem]:
    problems: list[Problem] = []
    for resource, quantity in new_allocatable.items():
        positive = resource in _MUST_BE_POSITIVE
        if (ZERO < quantity) if positive else not (quantity < ZERO):
            continue
        # Blame the field the user gave: memory, or the hugepage pool that ate it.
        field = resource
        if resource not in requested:
            field = next((n for n in requested if _is_hugepages(n)), resource)
        if field not in requested:
            continue  # already short before this resize: not this request's fault
        reserved = new_capacity.get(resource, ZERO) - quantity
        what = "reserved for the system"
        if resource == RESOURCE_MEMORY and not _hugepages_total(new_capacity).is_zero():
            what = "reserved for the system and hugepages"
        bound = "greater than" if positive else "at least"
        problems.append(
            Problem(
                field,
                str(requested[field]),
                f"leaves no allocatable {resource}: {resource} capacity must be {bound} "
                f"the {reserved} {what}",
            )
        )
    return problems
