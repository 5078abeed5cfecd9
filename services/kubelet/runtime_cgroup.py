"""A container runtime that runs real processes in real Linux cgroups (v1 or v2).

Layout, under one parent of its own per runtime (so tests and nodes never touch each other):

    <mount>/inplace/<node-id>/<cgroup_parent = pod<uid>>/<container name>

on cgroup v1 once per controller hierarchy (`cpu/…` and `memory/…`), on v2 once in the unified
tree (with `+cpu +memory` enabled in `cgroup.subtree_control` down the chain). Limits are applied
by writing cgroupfs files (v1: cpu.cfs_period_us, cpu.cfs_quota_us, cpu.shares,
memory.limit_in_bytes; v2: cpu.max, cpu.weight, memory.max) and ContainerStatus.resources is
read BACK from those files: KEP-2273 wants the values actually in force, not an echo.

Two kernel facts leak through, on purpose, because the kubelet's ordering rules exist for them:
v1 refuses a child CFS quota above its parent's and a parent quota below a child's (EINVAL), and
refuses a memory limit below current usage (EBUSY). Both surface as ResourceUpdateError.

The kernel stores memory limits in whole pages and v2 stores CPU weight rather than shares, so a
value read back can differ from the one written although it is the same setting. When the read
value is exactly what the last written value becomes in the kernel, the written value is
reported (as containerd reports the spec it applied); anything else is reported as read.

A container is one process started through `sh`, which joins the container's cgroups before it
`exec`s the command, so nothing it allocates is charged elsewhere. Restart = kill + a new process
in the same cgroups (new PID, restart_count + 1); an update never touches the process.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import re
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Protocol

from services.kubelet.cgroupconv import shares_to_weight, weight_to_shares
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
    RuntimeServiceError,
    found,
)

__all__ = [
    "DEFAULT_COMMAND",
    "CgroupRuntime",
    "cgroup_support",
    "detect_version",
    "process_cgroups",
]

CGROUP_ROOT: Final = Path("/sys/fs/cgroup")
PARENT: Final = "inplace"
DEFAULT_COMMAND: Final = ["sleep", "infinity"]
_NAME: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,252}$")
_PAGE: Final = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
# cgroup v1 reports "no memory limit" as PAGE_COUNTER_MAX pages: about 2^63.
_V1_UNLIMITED: Final = 1 << 62
# The shell joins the cgroups, then becomes the command; 125 = could not join.
_JOIN_AND_EXEC: Final = (
    'for f in "$@"; do case "$f" in --) shift; break;; esac; '
    'echo $$ > "$f" || exit 125; shift; done; exec "$@"'
)


def detect_version(root: Path = CGROUP_ROOT) -> str | None:
    """'v2' (unified hierarchy at `root`), 'v1' (cpu and memory hierarchies), or None."""
    if (root / "cgroup.controllers").exists():
        return "v2"
    if (root / "cpu" / "cpu.shares").exists() and (
        root / "memory" / "memory.limit_in_bytes"
    ).exists():
        return "v1"
    return None


def cgroup_support(root: Path = CGROUP_ROOT) -> str | None:
    """None when this process can create and write cgroups here; otherwise why not."""
    if not sys.platform.startswith("linux"):
        return f"cgroups need Linux, not {sys.platform}"
    version = detect_version(root)
    if version is None:
        return f"no cgroup v2 tree and no v1 cpu+memory hierarchies under {root}"
    if version == "v2":
        controllers = (root / "cgroup.controllers").read_text().split()
        missing = {"cpu", "memory"} - set(controllers)
        if missing:
            return f"cgroup v2 controllers {sorted(missing)} are not available at {root}"
        probes = [root / f"{PARENT}-probe-{os.getpid()}"]
        knob = "cpu.weight"
    else:
        probes = [root / c / f"{PARENT}-probe-{os.getpid()}" for c in ("cpu", "memory")]
        knob = "cpu.shares"
    try:
        for probe in probes:
            probe.mkdir(exist_ok=True)
        if version == "v2":
            _enable_controllers(root, probes[0])
            (probes[0] / knob).write_text("100")
        else:
            (probes[0] / knob).write_text("1024")
    except OSError as exc:
        return f"cgroups under {root} are not writable here: {exc}"
    finally:
        for probe in probes:
            with contextlib.suppress(OSError):
                probe.rmdir()
    return None


def _enable_controllers(root: Path, leaf: Path) -> None:
    """v2: every group above `leaf` (root included) must delegate cpu and memory to its
    children; the leaf itself holds processes, so its own subtree_control stays empty (the v2
    "no internal processes" rule)."""
    for relative in reversed(leaf.relative_to(root).parents):
        control = root / relative / "cgroup.subtree_control"
        enabled = control.read_text().split()
        wanted = [c for c in ("cpu", "memory") if c not in enabled]
        if wanted:
            control.write_text(" ".join(f"+{c}" for c in wanted))


def process_cgroups(pid: int) -> list[str]:
    """The cgroup paths of a process, one per hierarchy, from /proc/<pid>/cgroup ([] if gone).

    procfs and cgroupfs are in-memory files: reading them never blocks on a disk."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return []
    return [line.split(":", 2)[2] for line in lines if line.count(":") >= 2]


def _read(path: Path) -> str:
    return path.read_text().strip()


_TICK_NS = 1_000_000_000 // os.sysconf("SC_CLK_TCK")


def _process_cpu_ns(pid: int) -> int:
    """User + system CPU time of a process (0 once it is gone), from /proc/<pid>/stat."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return (int(fields[11]) + int(fields[12])) * _TICK_NS  # utime, stime (fields 14, 15)


def _stat(path: Path, key: str) -> int:
    """One `key value` line of a cgroup stat file (0 when absent)."""
    for line in _read(path).splitlines():
        name, _, value = line.partition(" ")
        if name == key:
            return int(value)
    return 0


def _same_page(written: int, read: int) -> bool:
    return written > 0 and read == written - written % _PAGE


# --- cgroup hierarchies -------------------------------------------------------------------------


class _Hierarchy(Protocol):
    def dirs(self, rel: Path) -> list[Path]: ...
    def make(self, rel: Path) -> None: ...
    def write(self, rel: Path, resources: LinuxContainerResources) -> None: ...
    def read(self, rel: Path, last: LinuxContainerResources) -> LinuxContainerResources: ...
    def memory_usage(self, rel: Path) -> int: ...
    def cpu_usage_ns(self, rel: Path) -> int: ...
    def working_set(self, rel: Path) -> int: ...


@dataclass
class _V1:
    root: Path

    def dirs(self, rel: Path) -> list[Path]:
        return [self.root / "cpu" / rel, self.root / "memory" / rel]

    def make(self, rel: Path) -> None:
        for directory in self.dirs(rel):
            directory.mkdir(parents=True, exist_ok=True)

    def write(self, rel: Path, resources: LinuxContainerResources) -> None:
        cpu, memory = self.dirs(rel)
        period = resources.cpu_period or 100_000
        if int(_read(cpu / "cpu.cfs_period_us")) != period:
            (cpu / "cpu.cfs_period_us").write_text(str(period))
        quota = str(resources.cpu_quota) if resources.cpu_quota > 0 else "-1"
        if _read(cpu / "cpu.cfs_quota_us") != quota:
            (cpu / "cpu.cfs_quota_us").write_text(quota)
        if resources.cpu_shares > 0:
            (cpu / "cpu.shares").write_text(str(resources.cpu_shares))
        limit = resources.memory_limit_in_bytes
        current = int(_read(memory / "memory.limit_in_bytes"))
        if limit > 0 and not _same_page(limit, current):
            (memory / "memory.limit_in_bytes").write_text(str(limit))
        elif limit <= 0 and current < _V1_UNLIMITED:
            (memory / "memory.limit_in_bytes").write_text("-1")

    def read(self, rel: Path, last: LinuxContainerResources) -> LinuxContainerResources:
        cpu, memory = self.dirs(rel)
        quota = int(_read(cpu / "cpu.cfs_quota_us"))
        period = int(_read(cpu / "cpu.cfs_period_us"))
        limit = int(_read(memory / "memory.limit_in_bytes"))
        if limit >= _V1_UNLIMITED:
            limit = 0
        elif _same_page(last.memory_limit_in_bytes, limit):
            limit = last.memory_limit_in_bytes
        return LinuxContainerResources(
            cpu_period=period if quota > 0 else 0,
            cpu_quota=max(quota, 0),
            cpu_shares=int(_read(cpu / "cpu.shares")),
            memory_limit_in_bytes=limit,
        )

    def memory_usage(self, rel: Path) -> int:
        return int(_read(self.dirs(rel)[1] / "memory.usage_in_bytes"))

    def cpu_usage_ns(self, rel: Path) -> int:
        accounted = self.dirs(rel)[0] / "cpuacct.usage"  # cpu,cpuacct mounted together
        if accounted.exists():
            return int(_read(accounted))
        # cpuacct mounted apart, where this runtime makes no group: its processes' own times.
        return sum(
            _process_cpu_ns(int(pid)) for pid in _read(accounted.parent / "cgroup.procs").split()
        )

    def working_set(self, rel: Path) -> int:
        inactive = _stat(self.dirs(rel)[1] / "memory.stat", "total_inactive_file")
        return max(0, self.memory_usage(rel) - inactive)


@dataclass
class _V2:
    root: Path

    def dirs(self, rel: Path) -> list[Path]:
        return [self.root / rel]

    def make(self, rel: Path) -> None:
        directory = self.root / rel
        directory.mkdir(parents=True, exist_ok=True)
        _enable_controllers(self.root, directory)

    def write(self, rel: Path, resources: LinuxContainerResources) -> None:
        directory = self.root / rel
        period = resources.cpu_period or 100_000
        quota = str(resources.cpu_quota) if resources.cpu_quota > 0 else "max"
        (directory / "cpu.max").write_text(f"{quota} {period}")
        weight = shares_to_weight(resources.cpu_shares)
        if weight > 0:
            (directory / "cpu.weight").write_text(str(weight))
        limit = resources.memory_limit_in_bytes
        (directory / "memory.max").write_text(str(limit) if limit > 0 else "max")

    def read(self, rel: Path, last: LinuxContainerResources) -> LinuxContainerResources:
        directory = self.root / rel
        quota_text, period_text = _read(directory / "cpu.max").split()
        quota = 0 if quota_text == "max" else int(quota_text)
        weight = int(_read(directory / "cpu.weight"))
        shares = last.cpu_shares
        if shares_to_weight(shares) != weight:
            shares = weight_to_shares(weight)
        memory_text = _read(directory / "memory.max")
        limit = 0 if memory_text == "max" else int(memory_text)
        if _same_page(last.memory_limit_in_bytes, limit):
            limit = last.memory_limit_in_bytes
        return LinuxContainerResources(
            cpu_period=int(period_text) if quota > 0 else 0,
            cpu_quota=quota,
            cpu_shares=shares,
            memory_limit_in_bytes=limit,
        )

    def memory_usage(self, rel: Path) -> int:
        return int(_read(self.root / rel / "memory.current"))

    def cpu_usage_ns(self, rel: Path) -> int:
        return _stat(self.root / rel / "cpu.stat", "usage_usec") * 1000

    def working_set(self, rel: Path) -> int:
        # What the kubelet (cAdvisor) reports: usage less the inactive file cache.
        inactive = _stat(self.root / rel / "memory.stat", "inactive_file")
        return max(0, self.memory_usage(rel) - inactive)


# --- bookkeeping --------------------------------------------------------------------------------


@dataclass
class _Sandbox:
    id: str
    pod_uid: str
    rel: Path
    created_at: float
    last: LinuxContainerResources
    state: PodSandboxState = "ready"
    reported: LinuxContainerResources | None = None


@dataclass
class _Container:
    id: str
    name: str
    sandbox_id: str
    rel: Path
    command: list[str]
    created_at: float
    last: LinuxContainerResources
    process: asyncio.subprocess.Process | None = None
    state: ContainerState = "created"
    started_at: float | None = None
    finished_at: float | None = None
    exit_code: int | None = None
    restart_count: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


def _os_error(method: str, target: str, exc: OSError) -> RuntimeServiceError:
    name = errno.errorcode.get(exc.errno or 0, "EIO")
    if exc.errno in (errno.EINVAL, errno.EBUSY):
        return ResourceUpdateError(method, target, f"{name}: {exc.strerror}")
    return RuntimeServiceError(method, target, f"{name}: {exc}")


class CgroupRuntime:
    """RuntimeService on real processes and cgroups. Use `async with` or call `close()`."""

    def __init__(
        self,
        node_id: str,
        *,
        root: Path = CGROUP_ROOT,
        default_command: list[str] | None = None,
        join_timeout: float = 5.0,
    ) -> None:
        if not _NAME.match(node_id):
            raise ValueError(f"node id {node_id!r} is not a valid cgroup name")
        version = detect_version(root)
        if version is None:
            raise RuntimeError(f"no usable cgroup hierarchy under {root}")
        self.version = version
        self.root = root
        self.node_rel = Path(PARENT) / node_id
        self.default_command = list(default_command or DEFAULT_COMMAND)
        self.join_timeout = join_timeout
        self._fs: _Hierarchy = _V2(root) if version == "v2" else _V1(root)
        self._sandboxes: dict[str, _Sandbox] = {}
        self._containers: dict[str, _Container] = {}
        self._made: list[Path] = []  # every group this runtime created, parents first
        self._closed = False

    async def __aenter__(self) -> CgroupRuntime:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- paths ----------------------------------------------------------------------------------

    def cgroup_dirs(self, container_id: str) -> list[Path]:
        """The container's cgroup directories (one per v1 controller, one on v2)."""
        return self._fs.dirs(self._container(container_id, "cgroup_dirs").rel)

    def cgroup_path(self, container_id: str) -> str:
        """The container's cgroup as /proc/<pid>/cgroup names it (e.g. /inplace/n/podu/app)."""
        return "/" + str(self._container(container_id, "cgroup_path").rel)

    def pod_cgroup_dirs(self, sandbox_id: str) -> list[Path]:
        return self._fs.dirs(self._sandbox(sandbox_id, "pod_cgroup_dirs").rel)

    def node_cgroup_dirs(self) -> list[Path]:
        return self._fs.dirs(self.node_rel)

    def _make(self, rel: Path) -> None:
        for part in [*reversed(rel.parents), rel]:
            if part == Path("."):
                continue
            if part not in self._made and not all(d.exists() for d in self._fs.dirs(part)):
                self._made.append(part)
        self._fs.make(rel)

    def _remove(self, rel: Path) -> None:
        for directory in self._fs.dirs(rel):
            for _ in range(50):
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError as exc:
                    # EBUSY while the last process of the group is still being reaped.
                    if exc.errno != errno.EBUSY:
                        raise
                    time.sleep(0.02)
        with contextlib.suppress(ValueError):
            self._made.remove(rel)

    # -- lookups --------------------------------------------------------------------------------

    def _sandbox(self, sandbox_id: str, method: str) -> _Sandbox:
        return found(self._sandboxes, sandbox_id, method, "no such pod sandbox")

    def _container(self, container_id: str, method: str) -> _Container:
        return found(self._containers, container_id, method, "no such container")

    def _children(self, sandbox_id: str) -> list[_Container]:
        return [c for c in self._containers.values() if c.sandbox_id == sandbox_id]

    def _apply(
        self, method: str, target: str, rel: Path, resources: LinuxContainerResources
    ) -> None:
        try:
            self._fs.write(rel, resources)
        except OSError as exc:
            raise _os_error(method, target, exc) from exc

    def _read_back(
        self, method: str, target: str, rel: Path, last: LinuxContainerResources
    ) -> LinuxContainerResources:
        try:
            return self._fs.read(rel, last)
        except OSError as exc:
            raise _os_error(method, target, exc) from exc

    # -- sandboxes ------------------------------------------------------------------------------

    async def run_pod_sandbox(
        self,
        pod_uid: str,
        cgroup_parent: str | None = None,
        resources: LinuxContainerResources | None = None,
    ) -> str:
        group = cgroup_parent or f"pod{pod_uid}"
        if not _NAME.match(group):
            raise RuntimeServiceError("run_pod_sandbox", pod_uid, f"bad cgroup name {group!r}")
        sandbox_id = f"sb-{pod_uid}"
        if sandbox_id in self._sandboxes:
            raise RuntimeServiceError("run_pod_sandbox", pod_uid, "sandbox already exists")
        rel = self.node_rel / group
        resources = resources or LinuxContainerResources()
        try:
            self._make(rel)
        except OSError as exc:
            raise _os_error("run_pod_sandbox", pod_uid, exc) from exc
        self._sandboxes[sandbox_id] = _Sandbox(sandbox_id, pod_uid, rel, time.time(), resources)
        try:
            self._apply("run_pod_sandbox", sandbox_id, rel, resources)
        except RuntimeServiceError:
            del self._sandboxes[sandbox_id]
            self._remove(rel)
            raise
        return sandbox_id

    async def stop_pod_sandbox(self, sandbox_id: str) -> None:
        sandbox = self._sandbox(sandbox_id, "stop_pod_sandbox")
        for container in self._children(sandbox_id):
            await self.stop_container(container.id, 0.0)
        sandbox.state = "notready"

    async def remove_pod_sandbox(self, sandbox_id: str) -> None:
        sandbox = self._sandboxes.get(sandbox_id)
        if sandbox is None:
            return
        for container in self._children(sandbox_id):
            await self.remove_container(container.id)
        self._remove(sandbox.rel)
        del self._sandboxes[sandbox_id]

    def _sandbox_status(self, sandbox: _Sandbox) -> PodSandboxStatus:
        return PodSandboxStatus(
            id=sandbox.id,
            pod_uid=sandbox.pod_uid,
            state=sandbox.state,
            cgroup_parent=sandbox.rel.name,
            created_at=sandbox.created_at,
            resources=self._read_back("pod_sandbox_status", sandbox.id, sandbox.rel, sandbox.last),
            reported=sandbox.reported,
        )

    async def pod_sandbox_status(self, sandbox_id: str) -> PodSandboxStatus:
        return self._sandbox_status(self._sandbox(sandbox_id, "pod_sandbox_status"))

    async def list_pod_sandboxes(self) -> list[PodSandboxStatus]:
        return [self._sandbox_status(s) for s in self._sandboxes.values()]

    async def set_pod_cgroup_resources(
        self, sandbox_id: str, resources: LinuxContainerResources
    ) -> None:
        sandbox = self._sandbox(sandbox_id, "set_pod_cgroup_resources")
        self._apply("set_pod_cgroup_resources", sandbox_id, sandbox.rel, resources)
        sandbox.last = resources

    async def update_pod_sandbox_resources(
        self,
        sandbox_id: str,
        resources: LinuxContainerResources,
        overhead: LinuxContainerResources | None = None,
    ) -> None:
        # Informational for the runtime (NRI); the pod cgroup was already written.
        self._sandbox(sandbox_id, "update_pod_sandbox_resources").reported = resources

    # -- containers -----------------------------------------------------------------------------

    async def create_container(
        self,
        sandbox_id: str,
        name: str,
        command: list[str],
        resources: ContainerResources,
    ) -> str:
        sandbox = self._sandbox(sandbox_id, "create_container")
        if not _NAME.match(name):
            raise RuntimeServiceError("create_container", sandbox_id, f"bad name {name!r}")
        container_id = f"{sandbox_id}-{name}"
        if container_id in self._containers:
            raise RuntimeServiceError("create_container", sandbox_id, f"name {name!r} is in use")
        rel = sandbox.rel / name
        linux = resources.linux or LinuxContainerResources()
        try:
            self._make(rel)
        except OSError as exc:
            raise _os_error("create_container", container_id, exc) from exc
        try:
            self._apply("create_container", container_id, rel, linux)
        except RuntimeServiceError:
            self._remove(rel)
            raise
        self._containers[container_id] = _Container(
            id=container_id,
            name=name,
            sandbox_id=sandbox_id,
            rel=rel,
            command=list(command or self.default_command),
            created_at=time.time(),
            last=linux,
        )
        return container_id

    def _procs_files(self, container: _Container) -> list[str]:
        return [str(d / "cgroup.procs") for d in self._fs.dirs(container.rel)]

    def _refresh(self, container: _Container) -> None:
        """Notice a process that exited on its own."""
        process = container.process
        if container.state == "running" and process is not None and process.returncode is not None:
            container.state = "exited"
            container.exit_code = process.returncode
            container.finished_at = time.time()
            container.process = None

    async def _wait_joined(
        self, container: _Container, process: asyncio.subprocess.Process
    ) -> None:
        # /proc/<pid>/cgroup has one line per hierarchy: "4:memory:/inplace/…" on v1,
        # "0::/inplace/…" on v2; the process has joined when each of ours shows the group.
        expected = "/" + str(container.rel)
        deadline = time.monotonic() + self.join_timeout
        while time.monotonic() < deadline:
            if process.returncode is not None:
                raise RuntimeServiceError(
                    "start_container",
                    container.id,
                    f"process exited ({process.returncode}) before joining its cgroup",
                )
            paths = process_cgroups(process.pid)
            if paths and sum(p == expected for p in paths) >= len(self._fs.dirs(container.rel)):
                return
            await asyncio.sleep(0.005)
        raise RuntimeServiceError(
            "start_container", container.id, "process did not join its cgroup"
        )

    async def start_container(self, container_id: str) -> None:
        container = self._container(container_id, "start_container")
        async with container.lock:
            self._refresh(container)
            if container.state == "running":
                raise ContainerNotRunningError(
                    "start_container", container_id, "container is already running"
                )
            try:
                process = await asyncio.create_subprocess_exec(
                    "/bin/sh",
                    "-c",
                    _JOIN_AND_EXEC,
                    "sh",
                    *self._procs_files(container),
                    "--",
                    *container.command,
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=asyncio.subprocess.DEVNULL,
                    stderr=asyncio.subprocess.DEVNULL,
                    start_new_session=True,
                )
            except OSError as exc:
                raise _os_error("start_container", container_id, exc) from exc
            try:
                await self._wait_joined(container, process)
            except RuntimeServiceError:
                await self._kill(process, 0.0)
                raise
            if container.started_at is not None:
                container.restart_count += 1
            container.process = process
            container.state = "running"
            container.started_at = time.time()
            container.finished_at = None
            container.exit_code = None

    async def _kill(self, process: asyncio.subprocess.Process, grace_period: float) -> int:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM if grace_period > 0 else signal.SIGKILL)
            try:
                async with asyncio.timeout(grace_period if grace_period > 0 else None):
                    await process.wait()
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                await process.wait()
        return process.returncode if process.returncode is not None else -1

    def _kill_strays(self, container: _Container) -> None:
        """SIGKILL anything left in the container's cgroup (a child that left the session)."""
        for procs in self._procs_files(container):
            with contextlib.suppress(OSError):
                for pid in Path(procs).read_text().split():
                    with contextlib.suppress(ProcessLookupError, ValueError):
                        os.kill(int(pid), signal.SIGKILL)

    async def stop_container(self, container_id: str, grace_period: float = 2.0) -> None:
        container = self._container(container_id, "stop_container")
        async with container.lock:
            self._refresh(container)
            process = container.process
            if process is not None:
                container.exit_code = await self._kill(process, grace_period)
                container.finished_at = time.time()
                container.process = None
                container.state = "exited"
            self._kill_strays(container)

    async def remove_container(self, container_id: str) -> None:
        container = self._containers.get(container_id)
        if container is None:
            return
        await self.stop_container(container_id, 0.0)
        self._remove(container.rel)
        del self._containers[container_id]

    def _status(self, container: _Container) -> ContainerStatus:
        self._refresh(container)
        linux = self._read_back("container_status", container.id, container.rel, container.last)
        return ContainerStatus(
            id=container.id,
            name=container.name,
            sandbox_id=container.sandbox_id,
            state=container.state,
            pid=container.process.pid if container.process is not None else None,
            created_at=container.created_at,
            started_at=container.started_at,
            finished_at=container.finished_at,
            exit_code=container.exit_code,
            restart_count=container.restart_count,
            resources=ContainerResources(linux=linux),
        )

    async def container_status(self, container_id: str) -> ContainerStatus:
        return self._status(self._container(container_id, "container_status"))

    async def list_containers(self, sandbox_id: str | None = None) -> list[ContainerStatus]:
        return [
            self._status(c)
            for c in list(self._containers.values())
            if sandbox_id is None or c.sandbox_id == sandbox_id
        ]

    async def update_container_resources(
        self, container_id: str, resources: ContainerResources
    ) -> None:
        container = self._container(container_id, "update_container_resources")
        linux = resources.linux or LinuxContainerResources()
        self._apply("update_container_resources", container_id, container.rel, linux)
        container.last = linux

    async def container_memory_usage(self, container_id: str) -> int:
        container = self._container(container_id, "container_memory_usage")
        try:
            return self._fs.memory_usage(container.rel)
        except OSError as exc:
            raise _os_error("container_memory_usage", container_id, exc) from exc

    async def container_stats(self, container_id: str) -> ContainerStats:
        container = self._container(container_id, "container_stats")
        try:
            cpu = self._fs.cpu_usage_ns(container.rel)
            memory = self._fs.working_set(container.rel)
        except OSError as exc:
            raise _os_error("container_stats", container_id, exc) from exc
        return ContainerStats(cpu, memory)

    async def list_container_stats(self, container_ids: list[str]) -> dict[str, ContainerStats]:
        found: dict[str, ContainerStats] = {}
        for cid in container_ids:
            try:
                found[cid] = await self.container_stats(cid)
            except RuntimeServiceError:
                continue  # gone, or its cgroup unreadable: left out, as ListContainerStats does
        return found

    # -- shutdown -------------------------------------------------------------------------------

    async def close(self) -> None:
        """Kill every process this runtime started and remove every cgroup it made, children
        first; the shared `inplace` parent goes too when no other runtime still uses it."""
        if self._closed:
            return
        self._closed = True
        for container_id in list(self._containers):
            await self.remove_container(container_id)
        for sandbox_id in list(self._sandboxes):
            await self.remove_pod_sandbox(sandbox_id)
        for rel in sorted(self._made, key=lambda p: len(p.parts), reverse=True):
            if rel != Path(PARENT):
                self._remove(rel)
        # The shared parent: whoever closes last removes it (EBUSY while others use it).
        for directory in self._fs.dirs(Path(PARENT)):
            with contextlib.suppress(OSError):
                directory.rmdir()
        self._made.clear()
