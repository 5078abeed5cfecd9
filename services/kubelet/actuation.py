"""Actuation of an accepted resize: a pure plan of runtime calls, and its execution.

`plan_resize` is the kubelet's computePodResizeAction + doPodResizeAction ordering, as data.
KEP-1287 "Container resource limit update ordering":

1. a net increase of a resource → the pod-level cgroup first, then the containers;
2. a net decrease → the containers first, then the pod-level cgroup;
3. no net change → the containers only;
and in all cases container decreases are applied before container increases.

The plan runs in phases that honour all three rules at once, for memory and CPU together:

    A. pod-level increases            (memory, CPU quota, CPU shares — limits before requests)
    B. container decreases            (in place, one UpdateContainerResources per container)
    C. containers restarted for their RestartContainer resize policy (shrinking ones first)
    D. container increases            (in place)
    E. pod-level decreases            (memory, CPU shares, CPU quota — requests before limits)
       UpdatePodSandboxResources right after the last pod-level step, best-effort (KEP-1287
       CRI Changes: "called after the Kubelet reconfigures the pod-level cgroups")
    F. exited containers get their new values, used when they start again (Lifecycle Nuances)

so the sum of container limits never exceeds the pod limit in between: every grow happens under
a pod limit that was already raised, every shrink before the pod limit comes down. Each update
carries the container's full resources as they should be *after* that call, so a container that
shrinks memory and grows CPU is written twice: memory in B (CPU still old), CPU in D.

A memory limit below what the container (or pod) uses now is not applied: the plan is a
`Blocked` outcome instead, the resize stays InProgress and is retried later (KEP-1287 Notes,
Troubleshooting). `execute` runs the steps, stops at the first failure (failure handling:
"Kubelet does not attempt to update limits for containers that are lined up for update after
the failing container") and reads the actual resources back with ContainerStatus.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from schemas.k8s import (
    RESOURCE_CPU,
    RESOURCE_MEMORY,
    ContainerResizePolicy,
    ResourceResizeRestartPolicy,
)
from services.kubelet.cgroupconv import MIN_SHARES, quota_to_milli_cpu
from services.kubelet.cri import (
    ContainerResources,
    ContainerStatus,
    LinuxContainerResources,
    RuntimeService,
    RuntimeServiceError,
    RuntimeTimeoutError,
)

__all__ = [
    "ActuationResult",
    "Blocked",
    "ContainerRuntimeState",
    "RestartContainer",
    "SetPodCgroup",
    "Step",
    "UpdateContainerResources",
    "UpdatePodSandboxResources",
    "execute",
    "plan_resize",
    "restart_policy",
    "retry_delay",
]

log = logging.getLogger(__name__)

Direction = Literal[-1, 0, 1]


# --- inputs -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ContainerRuntimeState:
    """One container as the runtime reports it before the resize.

    `resources` is ContainerStatus.resources.linux (read back, not what was last asked for);
    `memory_usage` the bytes charged to it now (for the memory-below-usage rule).
    """

    name: str
    container_id: str
    running: bool
    resources: LinuxContainerResources | None
    memory_usage: int = 0


# --- steps --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SetPodCgroup:
    """Write the pod-level cgroup (the kubelet's SetPodCgroupConfig) for one resource.

    `resources` is the pod-level configuration after this step (other values unchanged).
    """

    sandbox_id: str
    resource: Literal["memory", "cpu"]
    what: Literal["limit", "request"]
    resources: LinuxContainerResources

    best_effort: bool = field(default=False, init=False)


@dataclass(frozen=True)
class UpdateContainerResources:
    """UpdateContainerResources: the container's resources after this call, in place."""

    container: str
    container_id: str
    resources: LinuxContainerResources

    best_effort: bool = field(default=False, init=False)


@dataclass(frozen=True)
class RestartContainer:
    """The RestartContainer resize policy: StopContainer, UpdateContainerResources on the
    stopped container, StartContainer — a new process in the same container."""

    container: str
    container_id: str
    resources: LinuxContainerResources

    best_effort: bool = field(default=False, init=False)


@dataclass(frozen=True)
class UpdatePodSandboxResources:
    """UpdatePodSandboxResources: informs the runtime (NRI) of the new pod-level values.

    Best-effort (KEP-1287): a failure is logged and never blocks the resize."""

    sandbox_id: str
    resources: LinuxContainerResources

    best_effort: bool = field(default=True, init=False)


Step = SetPodCgroup | UpdateContainerResources | RestartContainer | UpdatePodSandboxResources


@dataclass(frozen=True)
class Blocked:
    """The resize cannot be actuated now; it stays InProgress and is retried later.

    `container` is None when the pod-level limit is what would drop below usage.
    """

    container: str | None
    reason: str


# --- comparisons --------------------------------------------------------------------------------


def _cmp(a: float, b: float) -> Direction:
    return 1 if b > a else -1 if b < a else 0


def _limit_key(value: int) -> float:
    # 0 (or -1) means "no limit": larger than any limit.
    return float("inf") if value <= 0 else float(value)


def _memory_direction(before: LinuxContainerResources, after: LinuxContainerResources) -> Direction:
    return _cmp(_limit_key(before.memory_limit_in_bytes), _limit_key(after.memory_limit_in_bytes))


def _quota_direction(before: LinuxContainerResources, after: LinuxContainerResources) -> Direction:
    if (before.cpu_quota, before.cpu_period) == (after.cpu_quota, after.cpu_period):
        return 0
    if before.cpu_quota <= 0 or after.cpu_quota <= 0:
        return _cmp(_limit_key(before.cpu_quota), _limit_key(after.cpu_quota))
    direction = _cmp(
        quota_to_milli_cpu(before.cpu_quota, before.cpu_period),
        quota_to_milli_cpu(after.cpu_quota, after.cpu_period),
    )
    # Same CPU over a different period is still a change to write; treat it as a grow.
    return direction or 1


def _shares_direction(before: LinuxContainerResources, after: LinuxContainerResources) -> Direction:
    # At or below the kernel minimum all share values are the same weight (the kubelet's
    # "Special case for minimum CPU request").
    if before.cpu_shares <= MIN_SHARES and after.cpu_shares <= MIN_SHARES:
        return 0
    return _cmp(before.cpu_shares, after.cpu_shares)


def _cpu_direction(before: LinuxContainerResources, after: LinuxContainerResources) -> Direction:
    """A container's CPU change: by its limit when the limit changes, else by its request
    (computePodResizeAction: markContainerForUpdate on cpuLimit, else on cpuRequest)."""
    return _quota_direction(before, after) or _shares_direction(before, after)


def restart_policy(
    policies: Sequence[ContainerResizePolicy] | None, resource: str
) -> ResourceResizeRestartPolicy:
    """A container's resize policy for a resource; NotRequired when unset (the default)."""
    for policy in policies or ():
        if policy.resource_name == resource:
            return policy.restart_policy
    return "NotRequired"


# --- the plan -----------------------------------------------------------------------------------


@dataclass
class _Change:
    state: ContainerRuntimeState
    target: LinuxContainerResources
    memory: Direction
    cpu: Direction
    restart: bool


def _pod_phase_steps(
    sandbox_id: str,
    before: LinuxContainerResources,
    after: LinuxContainerResources,
    grow: bool,
) -> tuple[list[SetPodCgroup], LinuxContainerResources]:
    """Pod-level steps of one phase: increases (limits first) or decreases (requests first)."""
    want: Direction = 1 if grow else -1
    steps: list[SetPodCgroup] = []
    current = before

    def memory() -> None:
        nonlocal current
        if _memory_direction(before, after) == want:
            current = current.with_memory_of(after)
            steps.append(SetPodCgroup(sandbox_id, "memory", "limit", current))

    def cpu_limit() -> None:
        nonlocal current
        if _quota_direction(before, after) == want:
            current = replace(current, cpu_quota=after.cpu_quota, cpu_period=after.cpu_period)
            steps.append(SetPodCgroup(sandbox_id, "cpu", "limit", current))

    def cpu_request() -> None:
        nonlocal current
        if _shares_direction(before, after) == want:
            current = replace(current, cpu_shares=after.cpu_shares)
            steps.append(SetPodCgroup(sandbox_id, "cpu", "request", current))

    # Limits grow before requests and shrink after them, keeping requests <= limits.
    for action in (memory, cpu_limit, cpu_request) if grow else (memory, cpu_request, cpu_limit):
        action()
    return steps, current


def _blocked(
    states: Sequence[ContainerRuntimeState],
    changes: Sequence[_Change],
    pod_before: LinuxContainerResources,
    pod_after: LinuxContainerResources | None,
) -> Blocked | None:
    """The memory-below-usage rule, for each shrinking container and for the pod cgroup
    (doPodResizeAction: "Aborting attempt to set pod memory limit less than current memory
    usage"). A container restarted for its resize policy starts afresh and is not checked."""
    for change in changes:
        limit = change.target.memory_limit_in_bytes
        if change.restart or change.memory >= 0 or limit <= 0:
            continue
        if change.state.memory_usage >= limit:
            return Blocked(
                container=change.state.name,
                reason=(
                    f"memory limit {limit} of container {change.state.name!r} is not above its "
                    f"current memory usage {change.state.memory_usage}"
                ),
            )
    if pod_after is not None and _memory_direction(pod_before, pod_after) < 0:
        usage = sum(state.memory_usage for state in states if state.running)
        if pod_after.memory_limit_in_bytes > 0 and usage >= pod_after.memory_limit_in_bytes:
            return Blocked(
                container=None,
                reason=(
                    "aborting attempt to set pod memory limit "
                    f"{pod_after.memory_limit_in_bytes} less than current memory usage {usage}"
                ),
            )
    return None


def plan_resize(
    pod_before_actual: Sequence[ContainerRuntimeState],
    allocated_target: Mapping[str, LinuxContainerResources],
    resize_policies: Mapping[str, Sequence[ContainerResizePolicy] | None],
    pod_level_before: LinuxContainerResources | None,
    pod_level_after: LinuxContainerResources | None,
    *,
    sandbox_id: str,
) -> list[Step] | Blocked:
    """The exact runtime calls, in order, that take a pod from its actual resources to its
    allocated ones; or Blocked when a memory limit would drop below current usage.

    `pod_before_actual` lists the pod's containers (init/sidecars first, as in the spec) with
    what the runtime reports; `allocated_target` the CRI resources of the allocation
    (cgroupconv.container_resources); `pod_level_before/after` the pod cgroup as read back and
    as ResourceConfigForPod gives it for the allocation (None: leave the pod level alone).
    A container without a target, or whose runtime reports no resources, is left alone, as the
    kubelet does ("Not enough information to actuate a resize").
    """
    changes: list[_Change] = []
    exited: list[UpdateContainerResources] = []
    for state in pod_before_actual:
        target = allocated_target.get(state.name)
        if target is None or state.resources is None:
            continue
        memory = _memory_direction(state.resources, target)
        cpu = _cpu_direction(state.resources, target)
        if not state.running:
            if memory or cpu:
                exited.append(UpdateContainerResources(state.name, state.container_id, target))
            continue
        if not memory and not cpu:
            continue
        policies = resize_policies.get(state.name)
        # RestartContainer takes precedence when any changed resource asks for it (KEP-1287
        # Container Resize Policy); NotRequired never restarts.
        restart = (
            memory != 0 and restart_policy(policies, RESOURCE_MEMORY) == "RestartContainer"
        ) or (cpu != 0 and restart_policy(policies, RESOURCE_CPU) == "RestartContainer")
        changes.append(_Change(state, target, memory, cpu, restart))

    pod_before = pod_level_before or LinuxContainerResources()
    blocked = _blocked(pod_before_actual, changes, pod_before, pod_level_after)
    if blocked is not None:
        return blocked

    steps: list[Step] = []
    pod_current = pod_before
    if pod_level_after is not None:
        grow, pod_current = _pod_phase_steps(sandbox_id, pod_before, pod_level_after, grow=True)
        steps.extend(grow)

    # In-place updates start from the target's other settings with the old cpu/memory.
    working = {
        c.state.name: c.target.with_cpu_of(c.state.resources or c.target).with_memory_of(
            c.state.resources or c.target
        )
        for c in changes
        if not c.restart
    }
    for change in changes:  # B: decreases
        if change.restart or not (change.memory < 0 or change.cpu < 0):
            continue
        name = change.state.name
        if change.memory < 0:
            working[name] = working[name].with_memory_of(change.target)
        if change.cpu < 0:
            working[name] = working[name].with_cpu_of(change.target)
        steps.append(UpdateContainerResources(name, change.state.container_id, working[name]))
    restarts = [c for c in changes if c.restart]
    restarts.sort(key=lambda c: not (c.memory <= 0 and c.cpu <= 0))  # shrinking ones first
    for change in restarts:  # C
        steps.append(RestartContainer(change.state.name, change.state.container_id, change.target))
    for change in changes:  # D: increases
        if change.restart or not (change.memory > 0 or change.cpu > 0):
            continue
        name = change.state.name
        steps.append(UpdateContainerResources(name, change.state.container_id, change.target))

    if pod_level_after is not None:
        shrink, pod_current = _pod_phase_steps(sandbox_id, pod_current, pod_level_after, grow=False)
        steps.extend(shrink)
    last_pod_step = max((i for i, s in enumerate(steps) if isinstance(s, SetPodCgroup)), default=-1)
    if last_pod_step >= 0:
        steps.insert(last_pod_step + 1, UpdatePodSandboxResources(sandbox_id, pod_current))
    steps.extend(exited)  # F
    return steps


# --- execution ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ActuationResult:
    """What `execute` did: the steps that succeeded, the one that failed (and why), best-effort
    failures that were only logged, and each container's status read back afterwards."""

    completed: tuple[Step, ...]
    failed: Step | None = None
    error: RuntimeServiceError | None = None
    best_effort_errors: tuple[tuple[Step, RuntimeServiceError], ...] = ()
    statuses: Mapping[str, ContainerStatus] = field(default_factory=dict)
    read_errors: Mapping[str, RuntimeServiceError] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Every step succeeded (best-effort failures aside)."""
        return self.failed is None

    @property
    def actual(self) -> dict[str, LinuxContainerResources | None]:
        """Per container read back, the resources the runtime reports (KEP-2273)."""
        return {
            name: status.resources.linux if status.resources is not None else None
            for name, status in self.statuses.items()
        }


def _target_of(step: Step) -> str:
    if isinstance(step, SetPodCgroup | UpdatePodSandboxResources):
        return step.sandbox_id
    return step.container_id


async def _run(step: Step, runtime: RuntimeService) -> None:
    if isinstance(step, SetPodCgroup):
        await runtime.set_pod_cgroup_resources(step.sandbox_id, step.resources)
    elif isinstance(step, UpdateContainerResources):
        await runtime.update_container_resources(
            step.container_id, ContainerResources(linux=step.resources)
        )
    elif isinstance(step, RestartContainer):
        await runtime.stop_container(step.container_id)
        await runtime.update_container_resources(
            step.container_id, ContainerResources(linux=step.resources)
        )
        await runtime.start_container(step.container_id)
    else:
        await runtime.update_pod_sandbox_resources(step.sandbox_id, step.resources)


async def _bounded(step: Step, runtime: RuntimeService, limit_s: float | None) -> None:
    try:
        async with asyncio.timeout(limit_s):
            await _run(step, runtime)
    except TimeoutError:
        raise RuntimeTimeoutError(
            type(step).__name__, _target_of(step), f"no answer in {limit_s}s"
        ) from None


async def execute(
    plan: Sequence[Step],
    runtime: RuntimeService,
    *,
    read_back: Mapping[str, str] | None = None,
    step_timeout: float | None = None,
) -> ActuationResult:
    """Run a plan in order; stop at the first failed step (best-effort steps only log).

    Afterwards, whether or not every step succeeded, read back ContainerStatus for every
    container the plan touched plus `read_back` (container name → id), so the caller can
    publish what is really applied. `step_timeout` turns a hung runtime into a
    RuntimeTimeoutError instead of a stuck kubelet.
    """
    completed: list[Step] = []
    best_effort_errors: list[tuple[Step, RuntimeServiceError]] = []
    failed: Step | None = None
    error: RuntimeServiceError | None = None
    for step in plan:
        try:
            await _bounded(step, runtime, step_timeout)
        except RuntimeServiceError as exc:
            if step.best_effort:
                log.warning("best-effort %s failed, resize continues: %s", type(step).__name__, exc)
                best_effort_errors.append((step, exc))
                continue
            log.warning("resize step %s failed, stopping: %s", type(step).__name__, exc)
            failed, error = step, exc
            break
        completed.append(step)

    ids: dict[str, str] = {
        step.container: step.container_id
        for step in plan
        if isinstance(step, UpdateContainerResources | RestartContainer)
    }
    ids.update(read_back or {})
    statuses: dict[str, ContainerStatus] = {}
    read_errors: dict[str, RuntimeServiceError] = {}
    for name, container_id in ids.items():
        try:
            async with asyncio.timeout(step_timeout):
                statuses[name] = await runtime.container_status(container_id)
        except TimeoutError:
            read_errors[name] = RuntimeTimeoutError(
                "container_status", container_id, f"no answer in {step_timeout}s"
            )
        except RuntimeServiceError as exc:
            read_errors[name] = exc
    return ActuationResult(
        completed=tuple(completed),
        failed=failed,
        error=error,
        best_effort_errors=tuple(best_effort_errors),
        statuses=statuses,
        read_errors=read_errors,
    )


def retry_delay(attempt: int, *, initial: float = 1.0, maximum: float = 300.0) -> float:
    """Exponential back-off before retrying a failed or blocked actuation: initial * 2^(n-1),
    capped (the kubelet's pod-worker back-off doubles up to 5 minutes)."""
    if attempt <= 0:
        return 0.0
    return min(maximum, initial * 2 ** min(attempt - 1, 62))
