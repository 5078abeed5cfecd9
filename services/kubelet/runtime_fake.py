"""An in-memory container runtime for scale runs and tests, and a recorder for any runtime.

`FakeRuntime` keeps sandboxes and containers in dicts and "applies" resources by storing them,
so ContainerStatus.resources reads back exactly what was last accepted. It can behave badly on
purpose: per-call latency, failing the next N calls of a method or every call a predicate picks,
hanging calls until released, and simulated memory usage per container. Like the kernel it
refuses a memory limit below current usage (EBUSY on cgroup v1), and with `strict_hierarchy` it
refuses a container limit above its pod's, as cgroup v1 does for CFS quota (EINVAL), which makes
an ordering mistake in the kubelet fail loudly instead of silently.

Every call is journaled (`calls`) before it runs, so ordering tests can assert the exact
sequence; `RecordingRuntime` gives the same journal around any other RuntimeService.
"""

from __future__ import annotations

import asyncio
import itertools
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields

from services.kubelet.cri import (
    ContainerNotRunningError,
    ContainerResources,
    ContainerState,
    ContainerStats,
    ContainerStatus,
    LinuxContainerResources,
    PodSandboxState,
    PodSandboxStatus,
    ResourceUpdateError,
    RuntimeService,
    RuntimeServiceError,
    RuntimeUnavailableError,
    found,
)
from services.kubelet.interning import InternTable

__all__ = ["Call", "FakeRuntime", "RecordingRuntime", "journal_values", "resource_values"]

# Every value of a CRI resource set, so two sets share a held object only when all are equal.
_CRI_FIELDS = fields(LinuxContainerResources)

ErrorFactory = type[RuntimeServiceError] | RuntimeServiceError | None


def resource_values(resources: LinuxContainerResources | None) -> dict[str, int]:
    """The key values of a resize, for journals: CFS period/quota, shares, memory limit."""
    resources = resources or LinuxContainerResources()
    return {
        "cpu_period": resources.cpu_period,
        "cpu_quota": resources.cpu_quota,
        "cpu_shares": resources.cpu_shares,
        "memory_limit_in_bytes": resources.memory_limit_in_bytes,
    }


def journal_values(resources: LinuxContainerResources | None) -> dict[str, object]:
    """`resource_values` plus what a node resize resyncs (KEP-3953): the cgroup v2 swap limit
    and the OOM score adj, so tests can see them in the calls that set them."""
    resources = resources or LinuxContainerResources()
    return {
        **resource_values(resources),
        "memory_swap_max": resources.unified.get("memory.swap.max"),
        "oom_score_adj": resources.oom_score_adj,
    }


@dataclass(frozen=True)
class Call:
    """One runtime call: method name, target (sandbox or container id, or pod uid) and the
    values that matter for ordering (resources, names)."""

    method: str
    target: str
    values: Mapping[str, object] = field(default_factory=dict)


def _linux(resources: ContainerResources | None) -> LinuxContainerResources:
    if resources is None or resources.linux is None:
        return LinuxContainerResources()
    return resources.linux


def _over(child: int, parent: int) -> bool:
    """A child limit above its parent's. 0 means no limit of its own, which the kernel allows
    under any parent (the parent's limit still applies)."""
    return parent > 0 and child > parent


# --- the fake -----------------------------------------------------------------------------------


@dataclass(slots=True)
class _Sandbox:
    id: str
    pod_uid: str
    cgroup_parent: str
    resources: LinuxContainerResources
    created_at: float
    state: PodSandboxState = "ready"
    reported: LinuxContainerResources | None = None
    # Its containers, so pod-level calls need not scan every container on the node (a list:
    # a sandbox has a few, and a dict each cost ~180 bytes a pod at scale).
    children: list[_Container] = field(default_factory=list)


@dataclass(slots=True)
class _Container:
    id: str
    name: str
    sandbox_id: str
    resources: LinuxContainerResources
    created_at: float
    state: ContainerState = "created"
    pid: int | None = None
    started_at: float | None = None
    finished_at: float | None = None
    exit_code: int | None = None
    restart_count: int = 0
    memory_usage: int = 0
    # Simulated CPU use: this many nanocores while running, summed into cpu_used (ns) up to
    # cpu_since (the runtime's CPU clock) whenever the rate or the state changes, or it is read.
    cpu_nanocores: int = 0
    cpu_used: float = 0.0
    cpu_since: float | None = None


@dataclass
class _Failure:
    method: str | None
    predicate: Callable[[Call], bool] | None
    error: ErrorFactory
    remaining: int | None  # None: every matching call


class FakeRuntime:
    """RuntimeService in memory. Not thread-safe; one asyncio loop."""

    def __init__(
        self,
        *,
        latency: float | Mapping[str, float] = 0.0,
        strict_hierarchy: bool = False,
        enforce_memory_usage: bool = True,
        clock: Callable[[], float] = time.time,
        keep_calls: bool = True,
        cpu_clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`keep_calls`: record every call for `journal` (tests read it). A kubelet serving
        simulated nodes for as long as it runs passes False: the journal grew by a few
        calls per pod and per resize, forever."""
        self.latency = latency
        self.keep_calls = keep_calls
        self.strict_hierarchy = strict_hierarchy
        self.enforce_memory_usage = enforce_memory_usage
        self.calls: list[Call] = []
        self.errors: list[tuple[Call, RuntimeServiceError]] = []
        self._clock = clock
        # Simulated CPU time accrues on the clock rates are measured by (the usage sampler's).
        self._cpu_clock = cpu_clock
        self._sandboxes: dict[str, _Sandbox] = {}
        self._containers: dict[str, _Container] = {}
        self._values: InternTable[tuple[object, ...], LinuxContainerResources] = InternTable()
        self._failures: list[_Failure] = []
        self._hangs: list[tuple[str | None, Callable[[Call], bool] | None]] = []
        self._release = asyncio.Event()
        self._pids = itertools.count(10_000)

    # -- misbehaviour ---------------------------------------------------------------------------

    def fail_next(self, method: str, times: int = 1, error: ErrorFactory = None) -> None:
        """Fail the next `times` calls of `method` (RuntimeUnavailableError by default)."""
        self._failures.append(_Failure(method, None, error, times))

    def fail_when(self, predicate: Callable[[Call], bool], error: ErrorFactory = None) -> None:
        """Fail every call `predicate` picks, until `clear_failures`."""
        self._failures.append(_Failure(None, predicate, error, None))

    def clear_failures(self) -> None:
        self._failures.clear()

    def hang(
        self, method: str | None = None, predicate: Callable[[Call], bool] | None = None
    ) -> None:
        """Make matching calls (all calls when both are None) wait until `release`."""
        self._hangs.append((method, predicate))

    def release(self) -> None:
        """Let every hung call go on (and stop hanging new ones)."""
        self._hangs.clear()
        self._release.set()
        self._release = asyncio.Event()

    def set_memory_usage(self, container_id: str, usage: int) -> None:
        """Simulate `usage` bytes charged to a container's memory cgroup."""
        self._container(container_id, "set_memory_usage").memory_usage = usage

    def set_cpu_usage(self, container_id: str, nanocores: int) -> None:
        """Simulate a container using `nanocores` of CPU from now on (while it runs)."""
        container = self._container(container_id, "set_cpu_usage")
        _account_cpu(container, self._cpu_clock())
        container.cpu_nanocores = nanocores

    def journal(self, *methods: str) -> list[Call]:
        """The calls made so far, only of `methods` when given."""
        return [c for c in self.calls if not methods or c.method in methods]

    async def _enter(self, method: str, target: str, **values: object) -> None:
        # A scale run's runtime has nothing to record, hang, delay or fail: every call of the
        # usage sampling's rounds (50,000 pods' worth each) returns here.
        if not (self.keep_calls or self._hangs or self._failures or self.latency):
            return
        call = Call(method, target, values)
        if self.keep_calls:
            self.calls.append(call)
        if any((m is None or m == method) and (p is None or p(call)) for m, p in list(self._hangs)):
            await self._release.wait()
        delay = self.latency.get(method, 0.0) if isinstance(self.latency, Mapping) else self.latency
        if delay > 0:
            await asyncio.sleep(delay)
        for failure in list(self._failures):
            if failure.method is not None and failure.method != method:
                continue
            if failure.predicate is not None and not failure.predicate(call):
                continue
            if failure.remaining is not None:
                failure.remaining -= 1
                if failure.remaining <= 0:
                    self._failures.remove(failure)
            error = failure.error
            if error is None:
                error = RuntimeUnavailableError(method, target, "injected failure")
            elif isinstance(error, type):
                error = error(method, target, "injected failure")
            if self.keep_calls:
                self.errors.append((call, error))
            raise error

    # -- lookups --------------------------------------------------------------------------------

    def _kept(self, resources: LinuxContainerResources) -> LinuxContainerResources:
        """The values to hold for a sandbox or container: one object per distinct value set
        (they are frozen), as a scale run's containers mostly have the same few (~100 bytes
        each, two or three per pod)."""
        key = tuple(
            tuple(value.items()) if isinstance(value, Mapping) else value
            for value in (getattr(resources, f.name) for f in _CRI_FIELDS)
        )
        return self._values.held(key, resources)

    def _sandbox(self, sandbox_id: str, method: str) -> _Sandbox:
        return found(self._sandboxes, sandbox_id, method, "no such pod sandbox")

    def _container(self, container_id: str, method: str) -> _Container:
        return found(self._containers, container_id, method, "no such container")

    def _children(self, sandbox_id: str) -> list[_Container]:
        sandbox = self._sandboxes.get(sandbox_id)
        return list(sandbox.children) if sandbox is not None else []

    def _check_child(
        self, method: str, target: str, child: LinuxContainerResources, sandbox: _Sandbox
    ) -> None:
        if not self.strict_hierarchy:
            return
        parent = sandbox.resources
        if _over(child.cpu_quota, parent.cpu_quota):
            raise ResourceUpdateError(method, target, "invalid argument: CFS quota above the pod's")
        if _over(child.memory_limit_in_bytes, parent.memory_limit_in_bytes):
            raise ResourceUpdateError(method, target, "memory limit above the pod's")

    @staticmethod
    def _unique(prefix: str, taken: Mapping[str, object]) -> str:
        if prefix not in taken:
            return prefix
        return next(f"{prefix}-{n}" for n in itertools.count(1) if f"{prefix}-{n}" not in taken)

    # -- sandboxes ------------------------------------------------------------------------------

    async def run_pod_sandbox(
        self,
        pod_uid: str,
        cgroup_parent: str | None = None,
        resources: LinuxContainerResources | None = None,
    ) -> str:
        await self._enter("run_pod_sandbox", pod_uid, **resource_values(resources))
        sandbox_id = self._unique(f"sb-{pod_uid}", self._sandboxes)
        self._sandboxes[sandbox_id] = _Sandbox(
            id=sandbox_id,
            pod_uid=pod_uid,
            cgroup_parent=cgroup_parent or "",  # "": the default, pod<uid>, made when asked
            resources=self._kept(resources or LinuxContainerResources()),
            created_at=self._clock(),
        )
        return sandbox_id

    async def stop_pod_sandbox(self, sandbox_id: str) -> None:
        await self._enter("stop_pod_sandbox", sandbox_id)
        sandbox = self._sandbox(sandbox_id, "stop_pod_sandbox")
        for container in self._children(sandbox_id):
            self._stop(container, exit_code=137)
        sandbox.state = "notready"

    async def remove_pod_sandbox(self, sandbox_id: str) -> None:
        await self._enter("remove_pod_sandbox", sandbox_id)
        for container in self._children(sandbox_id):
            del self._containers[container.id]
        self._sandboxes.pop(sandbox_id, None)

    def _sandbox_status(self, sandbox: _Sandbox) -> PodSandboxStatus:
        return PodSandboxStatus(
            id=sandbox.id,
            pod_uid=sandbox.pod_uid,
            state=sandbox.state,
            cgroup_parent=sandbox.cgroup_parent or f"pod{sandbox.pod_uid}",
            created_at=sandbox.created_at,
            resources=sandbox.resources,
            reported=sandbox.reported,
        )

    async def pod_sandbox_status(self, sandbox_id: str) -> PodSandboxStatus:
        await self._enter("pod_sandbox_status", sandbox_id)
        return self._sandbox_status(self._sandbox(sandbox_id, "pod_sandbox_status"))

    async def list_pod_sandboxes(self) -> list[PodSandboxStatus]:
        await self._enter("list_pod_sandboxes", "")
        return [self._sandbox_status(s) for s in self._sandboxes.values()]

    async def set_pod_cgroup_resources(
        self, sandbox_id: str, resources: LinuxContainerResources
    ) -> None:
        await self._enter("set_pod_cgroup_resources", sandbox_id, **resource_values(resources))
        sandbox = self._sandbox(sandbox_id, "set_pod_cgroup_resources")
        children = self._children(sandbox_id)
        if self.strict_hierarchy:
            for child in children:
                if _over(child.resources.cpu_quota, resources.cpu_quota):
                    raise ResourceUpdateError(
                        "set_pod_cgroup_resources",
                        sandbox_id,
                        f"invalid argument: CFS quota below container {child.name!r}'s",
                    )
                if _over(child.resources.memory_limit_in_bytes, resources.memory_limit_in_bytes):
                    raise ResourceUpdateError(
                        "set_pod_cgroup_resources",
                        sandbox_id,
                        f"memory limit below container {child.name!r}'s",
                    )
        usage = sum(c.memory_usage for c in children if c.state == "running")
        limit = resources.memory_limit_in_bytes
        if self.enforce_memory_usage and 0 < limit < usage:
            raise ResourceUpdateError(
                "set_pod_cgroup_resources", sandbox_id, "device or resource busy"
            )
        sandbox.resources = self._kept(resources)

    async def update_pod_sandbox_resources(
        self,
        sandbox_id: str,
        resources: LinuxContainerResources,
        overhead: LinuxContainerResources | None = None,
    ) -> None:
        await self._enter("update_pod_sandbox_resources", sandbox_id, **resource_values(resources))
        self._sandbox(sandbox_id, "update_pod_sandbox_resources").reported = self._kept(resources)

    # -- containers -----------------------------------------------------------------------------

    async def create_container(
        self,
        sandbox_id: str,
        name: str,
        command: list[str],
        resources: ContainerResources,
    ) -> str:
        linux = _linux(resources)
        await self._enter("create_container", sandbox_id, name=name, **journal_values(linux))
        sandbox = self._sandbox(sandbox_id, "create_container")
        if any(c.name == name for c in self._children(sandbox_id)):
            raise RuntimeServiceError("create_container", sandbox_id, f"name {name!r} is in use")
        container_id = self._unique(f"{sandbox_id}/{name}", self._containers)
        self._check_child("create_container", container_id, linux, sandbox)
        container = _Container(
            id=container_id,
            name=sys.intern(name),  # the same few names in every pod
            sandbox_id=sandbox_id,
            resources=self._kept(linux),
            created_at=self._clock(),
        )
        self._containers[container_id] = container
        sandbox.children.append(container)
        return container_id

    async def start_container(self, container_id: str) -> None:
        await self._enter("start_container", container_id)
        container = self._container(container_id, "start_container")
        if container.state == "running":
            raise ContainerNotRunningError(
                "start_container", container_id, "container is already running"
            )
        if container.started_at is not None:
            container.restart_count += 1
        _account_cpu(container, self._cpu_clock())  # nothing used while not running
        container.state = "running"
        container.pid = next(self._pids)
        container.started_at = self._clock()
        container.finished_at = None
        container.exit_code = None

    def _stop(self, container: _Container, exit_code: int) -> None:
        if container.state != "running":
            return
        _account_cpu(container, self._cpu_clock())  # what it used until now
        container.state = "exited"
        container.pid = None
        container.finished_at = self._clock()
        container.exit_code = exit_code
        container.memory_usage = 0

    async def stop_container(self, container_id: str, grace_period: float = 2.0) -> None:
        await self._enter("stop_container", container_id)
        self._stop(self._container(container_id, "stop_container"), exit_code=143)

    async def remove_container(self, container_id: str) -> None:
        await self._enter("remove_container", container_id)
        container = self._containers.pop(container_id, None)
        if container is not None and (sandbox := self._sandboxes.get(container.sandbox_id)):
            sandbox.children.remove(container)

    def exit_container(self, container_id: str, exit_code: int = 0) -> None:
        """Simulate the container's process exiting on its own."""
        self._stop(self._container(container_id, "exit_container"), exit_code=exit_code)

    def _status(self, container: _Container) -> ContainerStatus:
        return ContainerStatus(
            id=container.id,
            name=container.name,
            sandbox_id=container.sandbox_id,
            state=container.state,
            pid=container.pid,
            created_at=container.created_at,
            started_at=container.started_at,
            finished_at=container.finished_at,
            exit_code=container.exit_code,
            restart_count=container.restart_count,
            resources=ContainerResources(linux=container.resources),
        )

    async def container_status(self, container_id: str) -> ContainerStatus:
        await self._enter("container_status", container_id)
        return self._status(self._container(container_id, "container_status"))

    async def list_containers(self, sandbox_id: str | None = None) -> list[ContainerStatus]:
        await self._enter("list_containers", sandbox_id or "")
        if sandbox_id is None:
            return [self._status(c) for c in self._containers.values()]
        return [self._status(c) for c in self._children(sandbox_id)]

    async def update_container_resources(
        self, container_id: str, resources: ContainerResources
    ) -> None:
        linux = _linux(resources)
        await self._enter("update_container_resources", container_id, **journal_values(linux))
        container = self._container(container_id, "update_container_resources")
        self._check_child(
            "update_container_resources",
            container_id,
            linux,
            self._sandbox(container.sandbox_id, "update_container_resources"),
        )
        limit = linux.memory_limit_in_bytes
        if self.enforce_memory_usage and 0 < limit < container.memory_usage:
            raise ResourceUpdateError(
                "update_container_resources", container_id, "device or resource busy"
            )
        container.resources = self._kept(linux)

    async def container_memory_usage(self, container_id: str) -> int:
        await self._enter("container_memory_usage", container_id)
        container = self._container(container_id, "container_memory_usage")
        return container.memory_usage if container.state == "running" else 0

    async def container_stats(self, container_id: str) -> ContainerStats:
        await self._enter("container_stats", container_id)
        return self._stats(self._container(container_id, "container_stats"))

    async def list_container_stats(self, container_ids: list[str]) -> dict[str, ContainerStats]:
        await self._enter("list_container_stats", "")
        found = (self._containers.get(cid) for cid in container_ids)
        return {c.id: self._stats(c) for c in found if c is not None}

    def _stats(self, container: _Container) -> ContainerStats:
        _account_cpu(container, self._cpu_clock())
        memory = container.memory_usage if container.state == "running" else 0
        return ContainerStats(int(container.cpu_used), memory)

    async def close(self) -> None:
        """Nothing to release; here so both runtimes can be closed the same way."""


def _account_cpu(container: _Container, now: float) -> None:
    """Add the CPU time used at the current rate since the last account (`now`: seconds on
    the runtime's clock)."""
    if container.state == "running" and container.cpu_since is not None:
        container.cpu_used += container.cpu_nanocores * (now - container.cpu_since)
    container.cpu_since = now


# --- recording any runtime ----------------------------------------------------------------------


class RecordingRuntime:
    """Wraps a RuntimeService and journals every call (method, target, key values) before
    delegating; the journal is the same shape as FakeRuntime's."""

    def __init__(self, inner: RuntimeService) -> None:
        self.inner = inner
        self.calls: list[Call] = []

    def _record(self, method: str, target: str, **values: object) -> None:
        self.calls.append(Call(method, target, values))

    def journal(self, *methods: str) -> list[Call]:
        return [c for c in self.calls if not methods or c.method in methods]

    async def run_pod_sandbox(
        self,
        pod_uid: str,
        cgroup_parent: str | None = None,
        resources: LinuxContainerResources | None = None,
    ) -> str:
        self._record("run_pod_sandbox", pod_uid, **resource_values(resources))
        return await self.inner.run_pod_sandbox(pod_uid, cgroup_parent, resources)

    async def stop_pod_sandbox(self, sandbox_id: str) -> None:
        self._record("stop_pod_sandbox", sandbox_id)
        await self.inner.stop_pod_sandbox(sandbox_id)

    async def remove_pod_sandbox(self, sandbox_id: str) -> None:
        self._record("remove_pod_sandbox", sandbox_id)
        await self.inner.remove_pod_sandbox(sandbox_id)

    async def pod_sandbox_status(self, sandbox_id: str) -> PodSandboxStatus:
        self._record("pod_sandbox_status", sandbox_id)
        return await self.inner.pod_sandbox_status(sandbox_id)

    async def list_pod_sandboxes(self) -> list[PodSandboxStatus]:
        self._record("list_pod_sandboxes", "")
        return await self.inner.list_pod_sandboxes()

    async def set_pod_cgroup_resources(
        self, sandbox_id: str, resources: LinuxContainerResources
    ) -> None:
        self._record("set_pod_cgroup_resources", sandbox_id, **resource_values(resources))
        await self.inner.set_pod_cgroup_resources(sandbox_id, resources)

    async def update_pod_sandbox_resources(
        self,
        sandbox_id: str,
        resources: LinuxContainerResources,
        overhead: LinuxContainerResources | None = None,
    ) -> None:
        self._record("update_pod_sandbox_resources", sandbox_id, **resource_values(resources))
        await self.inner.update_pod_sandbox_resources(sandbox_id, resources, overhead)

    async def create_container(
        self,
        sandbox_id: str,
        name: str,
        command: list[str],
        resources: ContainerResources,
    ) -> str:
        self._record("create_container", sandbox_id, name=name, **journal_values(resources.linux))
        return await self.inner.create_container(sandbox_id, name, command, resources)

    async def start_container(self, container_id: str) -> None:
        self._record("start_container", container_id)
        await self.inner.start_container(container_id)

    async def stop_container(self, container_id: str, grace_period: float = 2.0) -> None:
        self._record("stop_container", container_id)
        await self.inner.stop_container(container_id, grace_period)

    async def remove_container(self, container_id: str) -> None:
        self._record("remove_container", container_id)
        await self.inner.remove_container(container_id)

    async def container_status(self, container_id: str) -> ContainerStatus:
        self._record("container_status", container_id)
        return await self.inner.container_status(container_id)

    async def list_containers(self, sandbox_id: str | None = None) -> list[ContainerStatus]:
        self._record("list_containers", sandbox_id or "")
        return await self.inner.list_containers(sandbox_id)

    async def update_container_resources(
        self, container_id: str, resources: ContainerResources
    ) -> None:
        self._record("update_container_resources", container_id, **journal_values(resources.linux))
        await self.inner.update_container_resources(container_id, resources)

    async def container_memory_usage(self, container_id: str) -> int:
        self._record("container_memory_usage", container_id)
        return await self.inner.container_memory_usage(container_id)

    async def container_stats(self, container_id: str) -> ContainerStats:
        self._record("container_stats", container_id)
        return await self.inner.container_stats(container_id)

    async def list_container_stats(self, container_ids: list[str]) -> dict[str, ContainerStats]:
        self._record("list_container_stats", "")
        return await self.inner.list_container_stats(container_ids)
