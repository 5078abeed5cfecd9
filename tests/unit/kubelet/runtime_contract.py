"""The container runtime contract: one abstract suite, run against every RuntimeService.

In the style of pyeventsourcing's recorder tests: a concrete test class subclasses
`RuntimeContract` and provides the `runtime` fixture (and a way to make a container use memory);
every test here then runs against it. tests/integration/test_kubelet_runtimes.py runs it against
the FakeRuntime and the real-cgroup runtime, so the fake can be trusted in scale tests.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from services.kubelet.actuation import ContainerRuntimeState, execute, plan_resize
from services.kubelet.cri import (
    ContainerNotRunningError,
    ContainerResources,
    LinuxContainerResources,
    NotFoundError,
    ResourceUpdateError,
    RuntimeService,
    RuntimeServiceError,
)
from services.kubelet.runtime_fake import resource_values

MI = 1024 * 1024


def lcr(cpu_m: int, mem_mi: int, *, limit_m: int | None = None) -> LinuxContainerResources:
    """CRI values for a CPU request/limit in milli-CPU and a memory limit in MiB."""
    limit = cpu_m if limit_m is None else limit_m
    return LinuxContainerResources(
        cpu_period=100_000 if limit else 0,
        cpu_quota=limit * 100 if limit else 0,
        cpu_shares=max(2, cpu_m * 1024 // 1000),
        memory_limit_in_bytes=mem_mi * MI,
    )


def cr(resources: LinuxContainerResources) -> ContainerResources:
    return ContainerResources(linux=resources)


class RuntimeContract:
    """What every RuntimeService promises the kubelet. Subclasses provide the fixtures."""

    # Whether a container limit above its pod's is refused (cgroup v1 CFS quota; the fake
    # with strict_hierarchy). cgroup v2 clamps instead of refusing.
    enforces_hierarchy: bool = True

    @pytest.fixture
    async def runtime(self) -> AsyncIterator[RuntimeService]:
        raise NotImplementedError
        yield  # pragma: no cover

    async def use_memory(
        self, runtime: RuntimeService, sandbox_id: str, name: str, nbytes: int
    ) -> str:
        """Create and start a container that has `nbytes` of memory charged to it."""
        raise NotImplementedError

    # -- helpers --------------------------------------------------------------------------------

    @staticmethod
    async def started(
        runtime: RuntimeService,
        resources: LinuxContainerResources,
        *,
        pod: LinuxContainerResources | None = None,
        uid: str = "u1",
        name: str = "app",
    ) -> tuple[str, str]:
        sandbox_id = await runtime.run_pod_sandbox(uid, resources=pod or lcr(4000, 1024))
        container_id = await runtime.create_container(sandbox_id, name, [], cr(resources))
        await runtime.start_container(container_id)
        return sandbox_id, container_id

    @staticmethod
    async def applied(runtime: RuntimeService, container_id: str) -> dict[str, int]:
        status = await runtime.container_status(container_id)
        assert status.resources is not None and status.resources.linux is not None
        return resource_values(status.resources.linux)

    # -- lifecycle ------------------------------------------------------------------------------

    async def test_start_reports_running_with_the_resources_it_was_created_with(
        self, runtime: RuntimeService
    ) -> None:
        assert isinstance(runtime, RuntimeService)
        sandbox_id, container_id = await self.started(runtime, lcr(500, 128))
        status = await runtime.container_status(container_id)
        assert status.state == "running"
        assert status.name == "app" and status.sandbox_id == sandbox_id
        assert status.pid is not None and status.pid > 0
        assert status.restart_count == 0 and status.started_at is not None
        assert await self.applied(runtime, container_id) == resource_values(lcr(500, 128))
        assert [c.id for c in await runtime.list_containers(sandbox_id)] == [container_id]
        assert [s.id for s in await runtime.list_pod_sandboxes()] == [sandbox_id]

    async def test_created_container_is_not_running_until_started(
        self, runtime: RuntimeService
    ) -> None:
        sandbox_id = await runtime.run_pod_sandbox("u1", resources=lcr(1000, 256))
        container_id = await runtime.create_container(sandbox_id, "app", [], cr(lcr(100, 64)))
        status = await runtime.container_status(container_id)
        assert status.state == "created" and status.pid is None

    async def test_update_reads_back_exactly_and_keeps_the_process(
        self, runtime: RuntimeService
    ) -> None:
        _, container_id = await self.started(runtime, lcr(500, 128))
        before = await runtime.container_status(container_id)
        for resources in (
            lcr(1500, 256),  # grow both
            lcr(200, 64),  # shrink both
            lcr(700, 96, limit_m=1200),  # request != limit
            lcr(300, 0, limit_m=0),  # remove both limits
            LinuxContainerResources(100_000, 50_000, 512, 100_000_000),  # not page-aligned
        ):
            await runtime.update_container_resources(container_id, cr(resources))
            assert await self.applied(runtime, container_id) == resource_values(resources)
        after = await runtime.container_status(container_id)
        assert after.pid == before.pid
        assert after.restart_count == 0
        assert after.state == "running"

    async def test_restart_changes_pid_and_restart_count(self, runtime: RuntimeService) -> None:
        _, container_id = await self.started(runtime, lcr(500, 128))
        first = await runtime.container_status(container_id)
        await runtime.stop_container(container_id, 1.0)
        stopped = await runtime.container_status(container_id)
        assert stopped.state == "exited" and stopped.pid is None
        assert stopped.finished_at is not None and stopped.exit_code is not None
        await runtime.start_container(container_id)
        second = await runtime.container_status(container_id)
        assert second.state == "running"
        assert second.pid is not None and second.pid != first.pid
        assert second.restart_count == 1
        assert await self.applied(runtime, container_id) == resource_values(lcr(500, 128))

    async def test_update_of_an_exited_container_applies_when_it_starts(
        self, runtime: RuntimeService
    ) -> None:
        # KEP-1287 Lifecycle Nuances: terminated containers can be resized.
        _, container_id = await self.started(runtime, lcr(500, 128))
        await runtime.stop_container(container_id, 1.0)
        await runtime.update_container_resources(container_id, cr(lcr(800, 192)))
        assert await self.applied(runtime, container_id) == resource_values(lcr(800, 192))
        await runtime.start_container(container_id)
        assert await self.applied(runtime, container_id) == resource_values(lcr(800, 192))

    async def test_stop_is_idempotent_and_stop_pod_sandbox_stops_all(
        self, runtime: RuntimeService
    ) -> None:
        sandbox_id, first = await self.started(runtime, lcr(100, 64))
        second = await runtime.create_container(sandbox_id, "second", [], cr(lcr(100, 64)))
        await runtime.start_container(second)
        await runtime.stop_container(first, 1.0)
        await runtime.stop_container(first, 1.0)
        await runtime.stop_pod_sandbox(sandbox_id)
        states = {c.id: c.state for c in await runtime.list_containers(sandbox_id)}
        assert states == {first: "exited", second: "exited"}
        assert (await runtime.pod_sandbox_status(sandbox_id)).state == "notready"

    async def test_remove(self, runtime: RuntimeService) -> None:
        sandbox_id, container_id = await self.started(runtime, lcr(100, 64))
        await runtime.remove_container(container_id)
        with pytest.raises(NotFoundError):
            await runtime.container_status(container_id)
        assert await runtime.list_containers(sandbox_id) == []
        await runtime.remove_pod_sandbox(sandbox_id)
        assert await runtime.list_pod_sandboxes() == []
        await runtime.remove_pod_sandbox(sandbox_id)  # idempotent

    # -- pod level ------------------------------------------------------------------------------

    async def test_pod_cgroup_reads_back_and_sandbox_update_is_recorded(
        self, runtime: RuntimeService
    ) -> None:
        sandbox_id = await runtime.run_pod_sandbox("u1", resources=lcr(1000, 256))
        status = await runtime.pod_sandbox_status(sandbox_id)
        assert status.state == "ready" and status.pod_uid == "u1"
        assert resource_values(status.resources) == resource_values(lcr(1000, 256))
        await runtime.set_pod_cgroup_resources(sandbox_id, lcr(2000, 512))
        await runtime.update_pod_sandbox_resources(sandbox_id, lcr(2000, 512))
        status = await runtime.pod_sandbox_status(sandbox_id)
        assert resource_values(status.resources) == resource_values(lcr(2000, 512))
        assert status.reported == lcr(2000, 512)

    async def test_plan_executes_in_kep_order_and_reads_back(self, runtime: RuntimeService) -> None:
        # The actuation plan against the runtime: grow then shrink, two containers; on cgroup
        # v1 the kernel itself would refuse the wrong order (EINVAL).
        pod_before = lcr(1000, 256)
        sandbox_id = await runtime.run_pod_sandbox("u1", resources=pod_before)
        ids = {}
        for name in ("c1", "c2"):
            ids[name] = await runtime.create_container(sandbox_id, name, [], cr(lcr(500, 128)))
            await runtime.start_container(ids[name])
        current = {name: lcr(500, 128) for name in ids}
        for target, pod_after in (
            ({"c1": lcr(1500, 256), "c2": lcr(500, 128)}, lcr(2000, 384)),
            ({"c1": lcr(200, 64), "c2": lcr(300, 96)}, lcr(500, 160)),
        ):
            states = [ContainerRuntimeState(n, ids[n], True, current[n]) for n in ids]
            plan = plan_resize(states, target, {}, pod_before, pod_after, sandbox_id=sandbox_id)
            assert isinstance(plan, list)
            result = await execute(plan, runtime, read_back=ids)
            assert result.ok, result.error
            assert {n: resource_values(r) for n, r in result.actual.items()} == {
                n: resource_values(r) for n, r in target.items()
            }
            pod_status = await runtime.pod_sandbox_status(sandbox_id)
            assert resource_values(pod_status.resources) == resource_values(pod_after)
            current, pod_before = dict(target), pod_after

    # -- errors ---------------------------------------------------------------------------------

    async def test_errors_are_runtime_error_types(self, runtime: RuntimeService) -> None:
        with pytest.raises(NotFoundError) as missing:
            await runtime.container_status("no-such-container")
        assert isinstance(missing.value, RuntimeServiceError)
        assert isinstance(missing.value, RuntimeError)
        with pytest.raises(NotFoundError):
            await runtime.update_container_resources("no-such-container", cr(lcr(1, 1)))
        with pytest.raises(NotFoundError):
            await runtime.set_pod_cgroup_resources("no-such-sandbox", lcr(1, 1))
        with pytest.raises(NotFoundError):
            await runtime.create_container("no-such-sandbox", "app", [], cr(lcr(1, 1)))
        sandbox_id, container_id = await self.started(runtime, lcr(100, 64))
        with pytest.raises(ContainerNotRunningError):
            await runtime.start_container(container_id)
        with pytest.raises(RuntimeServiceError):
            await runtime.create_container(sandbox_id, "app", [], cr(lcr(100, 64)))

    async def test_container_limit_above_pod_limit_is_refused(
        self, runtime: RuntimeService
    ) -> None:
        if not self.enforces_hierarchy:
            pytest.skip("this runtime clamps a child's limit instead of refusing it")
        sandbox_id, container_id = await self.started(runtime, lcr(500, 128), pod=lcr(1000, 256))
        with pytest.raises(ResourceUpdateError):
            await runtime.update_container_resources(container_id, cr(lcr(2000, 128)))
        with pytest.raises(ResourceUpdateError):
            await runtime.set_pod_cgroup_resources(sandbox_id, lcr(200, 256))
        assert await self.applied(runtime, container_id) == resource_values(lcr(500, 128))

    async def test_stats_report_the_working_set_and_cpu_time(self, runtime: RuntimeService) -> None:
        sandbox_id = await runtime.run_pod_sandbox("u1", resources=lcr(2000, 1024))
        container_id = await self.use_memory(runtime, sandbox_id, "hog", 64 * MI)
        first = await runtime.container_stats(container_id)
        assert first.memory_working_set_bytes >= 64 * MI
        again = await runtime.container_stats(container_id)
        assert again.cpu_usage_core_nano_seconds >= first.cpu_usage_core_nano_seconds >= 0
        listed = await runtime.list_container_stats([container_id, "no-such-container"])
        assert list(listed) == [container_id]  # one that is gone is left out
        assert listed[container_id].memory_working_set_bytes >= 64 * MI

    async def test_memory_limit_below_usage_is_refused(self, runtime: RuntimeService) -> None:
        sandbox_id = await runtime.run_pod_sandbox("u1", resources=lcr(2000, 1024))
        container_id = await self.use_memory(runtime, sandbox_id, "hog", 64 * MI)
        usage = await runtime.container_memory_usage(container_id)
        assert usage >= 64 * MI
        with pytest.raises(ResourceUpdateError):
            await runtime.update_container_resources(container_id, cr(lcr(500, 16)))
        assert await self.applied(runtime, container_id) == resource_values(lcr(500, 256))
        # Above usage is fine.
        await runtime.update_container_resources(container_id, cr(lcr(500, 200)))
        assert await self.applied(runtime, container_id) == resource_values(lcr(500, 200))
