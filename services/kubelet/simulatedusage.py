"""Simulated usage on fake nodes: a pod's `usage.inplace.dev/<container>` annotation
(`cpu=250m,memory=100Mi`) sets what that container uses in the fake runtime, which runs no
workload, so `kubectl top` and a VPA-like autoscaler have something to measure.

CPU use is held to the container's CPU limit (CFS throttles it) and memory to its memory
limit (where a real container would be OOM-killed: not simulated); so a resize below the
simulated working set is held back, as on a real node. The pure part: which containers use
what; the agent hands it to a runtime that simulates (`UsageSimulator`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from schemas.k8s import Pod
from schemas.quantity import QuantityError, parse_quantity

PREFIX = "usage.inplace.dev/"


@runtime_checkable
class UsageSimulator(Protocol):
    """A runtime whose containers' usage can be set (the fake one)."""

    def set_cpu_usage(self, container_id: str, nanocores: int) -> None: ...

    def set_memory_usage(self, container_id: str, usage: int) -> None: ...


@dataclass(frozen=True, slots=True)
class SimulatedUsage:
    cpu_nanocores: int
    memory_bytes: int


class UsageAnnotationError(ValueError):
    """An annotation that is no `cpu=…,memory=…`; one line."""


def simulated_usage(pod: Pod) -> dict[str, SimulatedUsage]:
    """Container name → the usage its annotation asks for, within its limits; containers
    without one are left out. A malformed annotation raises UsageAnnotationError."""
    annotations = pod.metadata.annotations or {}
    if not any(key.startswith(PREFIX) for key in annotations):
        return {}
    limits = {c.name: (c.resources.limits or {}) for c in pod.spec.containers}
    out: dict[str, SimulatedUsage] = {}
    for key, value in annotations.items():
        name = key.removeprefix(PREFIX)
        if not key.startswith(PREFIX) or name not in limits:
            continue
        asked = _parse(key, value)
        cpu_limit, memory_limit = limits[name].get("cpu"), limits[name].get("memory")
        cpu = max(0, asked.get("cpu", 0))
        memory = max(0, asked.get("memory", 0))
        if cpu_limit is not None:
            cpu = min(cpu, cpu_limit.nano_value())
        if memory_limit is not None:
            memory = min(memory, memory_limit.value())
        out[name] = SimulatedUsage(cpu, memory)
    return out


def _parse(key: str, value: str) -> dict[str, int]:
    """`cpu=250m,memory=100Mi` → {"cpu": nanocores, "memory": bytes}."""
    found: dict[str, int] = {}
    for part in (p.strip() for p in value.split(",") if p.strip()):
        resource, _, amount = part.partition("=")
        if resource not in ("cpu", "memory") or not amount:
            raise UsageAnnotationError(f"{key}: {part!r} is not cpu=<quantity> or memory=<…>")
        try:
            quantity = parse_quantity(amount.strip())
        except QuantityError as exc:
            raise UsageAnnotationError(f"{key}: {exc}") from None
        found[resource] = quantity.nano_value() if resource == "cpu" else quantity.value()
    return found
