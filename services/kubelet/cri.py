"""CRI-shaped data and the runtime interface the kubelet drives (KEP-2273, KEP-1287 "CRI Changes").

The messages mirror k8s.io/cri-api runtime/v1 (snake_case field names, proto3 defaults): an integer
field left at 0 means "not set", so `cpu_quota == 0` and `memory_limit_in_bytes == 0` mean
"no limit". They are frozen dataclasses rather than pydantic models because the fake runtime
creates millions of them in scale runs and none of them ever crosses the wire.

`RuntimeService` is the subset of the CRI RuntimeService the resize path needs, plus the one
call the real kubelet makes outside CRI: `set_pod_cgroup_resources`, which stands for the
kubelet's PodContainerManager.SetPodCgroupConfig. Here the runtime owns the whole cgroup tree
(pod and container groups), so the pod-level write lives on the same object.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Literal, Protocol, TypeVar, runtime_checkable

__all__ = [
    "ContainerNotRunningError",
    "ContainerResources",
    "ContainerState",
    "ContainerStats",
    "ContainerStatus",
    "LinuxContainerResources",
    "NotFoundError",
    "PodSandboxState",
    "PodSandboxStatus",
    "ResourceUpdateError",
    "RuntimeService",
    "RuntimeServiceError",
    "RuntimeTimeoutError",
    "RuntimeUnavailableError",
]

ContainerState = Literal["created", "running", "exited", "unknown"]
PodSandboxState = Literal["ready", "notready"]

# One read-only empty `unified` for every message that sets no raw cgroup v2 value: a kubelet
# holds a few messages per container for as long as it runs (an empty dict each was 64 bytes).
NO_UNIFIED: Mapping[str, str] = MappingProxyType({})


# --- messages -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LinuxContainerResources:
    """runtime/v1 LinuxContainerResources: cgroup values in kernel units.

    cpu_period/cpu_quota are CFS microseconds (0 = no quota), cpu_shares the v1 weight
    (2..262144), memory_limit_in_bytes bytes (0 = no limit). `unified` carries raw cgroup v2
    key/values, as the CRI does.
    """

    cpu_period: int = 0
    cpu_quota: int = 0
    cpu_shares: int = 0
    memory_limit_in_bytes: int = 0
    oom_score_adj: int = 0
    cpuset_cpus: str = ""
    cpuset_mems: str = ""
    memory_swap_limit_in_bytes: int = 0
    unified: Mapping[str, str] = field(default_factory=lambda: NO_UNIFIED)

    def with_cpu_of(self, other: LinuxContainerResources) -> LinuxContainerResources:
        """These values with `other`'s CPU settings (period, quota, shares)."""
        return replace(
            self,
            cpu_period=other.cpu_period,
            cpu_quota=other.cpu_quota,
            cpu_shares=other.cpu_shares,
        )

    def with_memory_of(self, other: LinuxContainerResources) -> LinuxContainerResources:
        """These values with `other`'s memory limit."""
        return replace(self, memory_limit_in_bytes=other.memory_limit_in_bytes)


@dataclass(frozen=True, slots=True)
class ContainerResources:
    """runtime/v1 ContainerResources (KEP-2273): one member per platform; only Linux here."""

    linux: LinuxContainerResources | None = None


@dataclass(frozen=True, slots=True)
class ContainerStatus:
    """runtime/v1 ContainerStatus, the fields the kubelet reads during a resize.

    `resources` is what the runtime reports as applied (KEP-2273: read back, not echoed);
    `restart_count` counts restarts of this container in place (a new process in the same
    container), the kubelet's restartCount. Times are seconds since the epoch.
    """

    id: str
    name: str
    sandbox_id: str
    state: ContainerState
    pid: int | None = None
    created_at: float = 0.0
    started_at: float | None = None
    finished_at: float | None = None
    exit_code: int | None = None
    restart_count: int = 0
    resources: ContainerResources | None = None


@dataclass(frozen=True, slots=True)
class ContainerStats:
    """runtime/v1 ContainerStats, the two figures resource metrics read: CPU time used since
    the container was created (cumulative, as `usage_core_nano_seconds`) and its memory
    working set (bytes charged, less inactive page cache)."""

    cpu_usage_core_nano_seconds: int
    memory_working_set_bytes: int


@dataclass(frozen=True, slots=True)
class PodSandboxStatus:
    """runtime/v1 PodSandboxStatus plus the pod-level cgroup values read back.

    `resources` is what the pod cgroup holds; `reported` is the last UpdatePodSandboxResources
    payload (informational, KEP-1287: for NRI plugins).
    """

    id: str
    pod_uid: str
    state: PodSandboxState
    cgroup_parent: str
    created_at: float = 0.0
    resources: LinuxContainerResources | None = None
    reported: LinuxContainerResources | None = None


# --- errors -------------------------------------------------------------------------------------


class RuntimeServiceError(RuntimeError):
    """A CRI call failed. The kubelet stops the plan, backs off and retries (KEP-1287)."""

    def __init__(self, method: str, target: str, message: str) -> None:
        super().__init__(f"{method} {target}: {message}")
        self.method = method
        self.target = target
        self.message = message


_T = TypeVar("_T")


class NotFoundError(RuntimeServiceError):
    """No such sandbox or container (gRPC NotFound)."""


def found(table: Mapping[str, _T], key: str, method: str, what: str) -> _T:
    """`table[key]`, or NotFound for `method` (`what`: "no such container", …)."""
    try:
        return table[key]
    except KeyError:
        raise NotFoundError(method, key, what) from None


class ContainerNotRunningError(RuntimeServiceError):
    """The call needs a running (or a not yet running) container (gRPC FailedPrecondition)."""


class ResourceUpdateError(RuntimeServiceError):
    """The runtime (or the kernel) refused the new resource values, e.g. a v1 child CFS quota
    above its parent's (EINVAL) or a memory limit below what is in use (EBUSY)."""


class RuntimeUnavailableError(RuntimeServiceError):
    """The runtime did not answer (gRPC Unavailable); also what injected failures raise."""


class RuntimeTimeoutError(RuntimeServiceError):
    """A call did not finish in time (gRPC DeadlineExceeded): a hung runtime."""


# --- the service --------------------------------------------------------------------------------


@runtime_checkable
class RuntimeService(Protocol):
    """The container runtime as the kubelet sees it: async, CRI-shaped calls."""

    async def run_pod_sandbox(
        self,
        pod_uid: str,
        cgroup_parent: str | None = None,
        resources: LinuxContainerResources | None = None,
    ) -> str:
        """Create the pod's sandbox and its pod-level cgroup; return the sandbox id."""
        ...

    async def stop_pod_sandbox(self, sandbox_id: str) -> None:
        """Stop every container of the sandbox (idempotent)."""
        ...

    async def remove_pod_sandbox(self, sandbox_id: str) -> None:
        """Remove the sandbox, its containers and their cgroups (idempotent)."""
        ...

    async def pod_sandbox_status(self, sandbox_id: str) -> PodSandboxStatus: ...

    async def list_pod_sandboxes(self) -> list[PodSandboxStatus]: ...

    async def set_pod_cgroup_resources(
        self, sandbox_id: str, resources: LinuxContainerResources
    ) -> None:
        """Write the pod-level cgroup (the kubelet's SetPodCgroupConfig; not a CRI call)."""
        ...

    async def update_pod_sandbox_resources(
        self,
        sandbox_id: str,
        resources: LinuxContainerResources,
        overhead: LinuxContainerResources | None = None,
    ) -> None:
        """UpdatePodSandboxResources: tell the runtime the new pod-level values (best-effort)."""
        ...

    async def create_container(
        self,
        sandbox_id: str,
        name: str,
        command: list[str],
        resources: ContainerResources,
    ) -> str:
        """CreateContainer: the container's cgroup with its limits; no process yet."""
        ...

    async def start_container(self, container_id: str) -> None:
        """StartContainer: start its process. Starting an exited container is a restart:
        a new process in the same cgroup, `restart_count` + 1."""
        ...

    async def stop_container(self, container_id: str, grace_period: float = 2.0) -> None:
        """StopContainer: SIGTERM, SIGKILL after `grace_period` seconds (idempotent)."""
        ...

    async def remove_container(self, container_id: str) -> None: ...

    async def container_status(self, container_id: str) -> ContainerStatus: ...

    async def list_containers(self, sandbox_id: str | None = None) -> list[ContainerStatus]: ...

    async def update_container_resources(
        self, container_id: str, resources: ContainerResources
    ) -> None:
        """UpdateContainerResources: new limits for a container in place (no restart).

        Allowed for exited containers too; the values apply when it starts again
        (KEP-1287 Lifecycle Nuances)."""
        ...

    async def container_memory_usage(self, container_id: str) -> int:
        """Bytes charged to the container's memory cgroup now."""
        ...

    async def container_stats(self, container_id: str) -> ContainerStats:
        """ContainerStats: the container's CPU time and memory working set now."""
        ...

    async def list_container_stats(self, container_ids: list[str]) -> dict[str, ContainerStats]:
        """ListContainerStats, filtered to `container_ids`: one call for a node's containers;
        one that is gone (or unreadable) is left out."""
        ...
