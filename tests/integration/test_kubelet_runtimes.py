"""The runtime contract against both runtimes, and what only real cgroups can show.

The cgroup runtime runs real processes in real cgroups (v1 here, v2 where that is what the
machine has); it is skipped, with the reason, only where this process cannot write cgroups.
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from services.kubelet.actuation import ContainerRuntimeState, execute, plan_resize
from services.kubelet.cgroupconv import shares_to_weight, weight_to_shares
from services.kubelet.cri import (
    LinuxContainerResources,
    ResourceUpdateError,
    RuntimeService,
    RuntimeUnavailableError,
)
from services.kubelet.runtime_cgroup import (
    _V2,
    CgroupRuntime,
    cgroup_support,
    process_cgroups,
)
from services.kubelet.runtime_fake import FakeRuntime, RecordingRuntime

# The contract's asserts get pytest's detailed failure messages although it is not a test_ module.
pytest.register_assert_rewrite("tests.unit.kubelet.runtime_contract")
from tests.unit.kubelet.runtime_contract import MI, RuntimeContract, cr, lcr  # noqa: E402

CGROUPS_UNUSABLE = cgroup_support()
needs_cgroups = pytest.mark.skipif(CGROUPS_UNUSABLE is not None, reason=CGROUPS_UNUSABLE or "")


class TestFakeRuntime(RuntimeContract):
    @pytest.fixture
    async def runtime(self) -> AsyncIterator[RuntimeService]:
        yield FakeRuntime(strict_hierarchy=True)

    async def use_memory(
        self, runtime: RuntimeService, sandbox_id: str, name: str, nbytes: int
    ) -> str:
        assert isinstance(runtime, FakeRuntime)
        container_id = await runtime.create_container(sandbox_id, name, [], cr(lcr(500, 256)))
        await runtime.start_container(container_id)
        runtime.set_memory_usage(container_id, nbytes + 8 * MI)
        return container_id


# A process that really holds `nbytes` (every page written), then sleeps.
HOG = "import sys, time; b = bytearray(b'x') * int(sys.argv[1]); print(flush=True); time.sleep(1e9)"


async def eventually(check: Callable[[], Awaitable[bool]], limit_s: float = 20.0) -> None:
    """Poll `check` until it holds: cgroupfs and process exits have no change notification
    this code could wait on."""
    async with asyncio.timeout(limit_s):
        while True:
            if await check():
                return
            await asyncio.sleep(0.01)


async def wait_for_usage(runtime: RuntimeService, container_id: str, nbytes: int) -> None:
    async def charged() -> bool:
        return await runtime.container_memory_usage(container_id) >= nbytes

    await eventually(charged)


@needs_cgroups
class TestCgroupRuntime(RuntimeContract):
    @pytest.fixture
    async def runtime(self) -> AsyncIterator[RuntimeService]:
        runtime = CgroupRuntime(f"test-{uuid.uuid4().hex[:12]}")
        self.enforces_hierarchy = runtime.version == "v1"
        try:
            yield runtime
        finally:
            await runtime.close()

    async def use_memory(
        self, runtime: RuntimeService, sandbox_id: str, name: str, nbytes: int
    ) -> str:
        command = [sys.executable, "-c", HOG, str(nbytes)]
        container_id = await runtime.create_container(sandbox_id, name, command, cr(lcr(500, 256)))
        await runtime.start_container(container_id)
        await wait_for_usage(runtime, container_id, nbytes)
        return container_id


# --- only real cgroups -------------------------------------------------------------------------


def knobs(runtime: CgroupRuntime, directories: list[Path]) -> dict[str, str]:
    """The raw cgroupfs values of a group, as the kernel holds them."""
    if runtime.version == "v1":
        cpu, memory = directories
        files = {
            "quota": cpu / "cpu.cfs_quota_us",
            "period": cpu / "cpu.cfs_period_us",
            "shares": cpu / "cpu.shares",
            "memory": memory / "memory.limit_in_bytes",
        }
    else:
        (group,) = directories
        files = {
            "max": group / "cpu.max",
            "weight": group / "cpu.weight",
            "memory": group / "memory.max",
        }
    return {name: path.read_text().strip() for name, path in files.items()}


@pytest.fixture
async def cgroup_runtime() -> AsyncIterator[CgroupRuntime]:
    runtime = CgroupRuntime(f"test-{uuid.uuid4().hex[:12]}")
    try:
        yield runtime
    finally:
        await runtime.close()


@needs_cgroups
async def test_limits_really_change_in_cgroupfs_with_the_process_still_running(
    cgroup_runtime: CgroupRuntime,
) -> None:
    runtime = RecordingRuntime(cgroup_runtime)
    pod_before, pod_after = lcr(1000, 256), lcr(2500, 640)
    sandbox_id = await runtime.run_pod_sandbox("demo", resources=pod_before)
    container_id = await runtime.create_container(sandbox_id, "app", [], cr(lcr(1000, 256)))
    await runtime.start_container(container_id)
    pid = (await runtime.container_status(container_id)).pid
    assert pid is not None
    dirs = cgroup_runtime.cgroup_dirs(container_id)
    # The process is in our groups: /proc/<pid>/cgroup names the container's path.
    expected_path = cgroup_runtime.cgroup_path(container_id)
    assert expected_path == f"/inplace/{cgroup_runtime.node_rel.name}/poddemo/app"
    assert process_cgroups(pid).count(expected_path) == len(dirs)
    for directory in dirs:
        assert str(pid) in (directory / "cgroup.procs").read_text().split()
    before = knobs(cgroup_runtime, dirs)
    if cgroup_runtime.version == "v1":
        assert before == {"quota": "100000", "period": "100000", "shares": "1024",
                          "memory": str(256 * MI)}  # fmt: skip

    # Resize through the real plan: 1 CPU / 256Mi → 2.5 CPU / 640Mi.
    target = lcr(2500, 640)
    state = ContainerRuntimeState("app", container_id, True, lcr(1000, 256))
    plan = plan_resize([state], {"app": target}, {}, pod_before, pod_after, sandbox_id=sandbox_id)
    assert isinstance(plan, list)
    runtime.calls.clear()
    result = await execute(plan, runtime)
    assert result.ok, result.error
    assert [c.method for c in runtime.calls] == [
        "set_pod_cgroup_resources",  # memory up
        "set_pod_cgroup_resources",  # cpu quota up
        "set_pod_cgroup_resources",  # cpu shares up
        "update_pod_sandbox_resources",
        "update_container_resources",
        "container_status",
    ]

    after = knobs(cgroup_runtime, dirs)
    if cgroup_runtime.version == "v1":
        assert after == {"quota": "250000", "period": "100000", "shares": "2560",
                         "memory": str(640 * MI)}  # fmt: skip
    else:
        assert after == {"max": "250000 100000", "weight": "98", "memory": str(640 * MI)}
    pod_knobs = knobs(cgroup_runtime, cgroup_runtime.pod_cgroup_dirs(sandbox_id))
    assert pod_knobs["memory"] == str(640 * MI)

    # Same process, never restarted, still in the same groups.
    status = await runtime.container_status(container_id)
    assert status.pid == pid and status.restart_count == 0 and status.state == "running"
    os.kill(pid, 0)
    assert process_cgroups(pid).count(expected_path) == len(dirs)
    assert result.statuses["app"].resources is not None
    assert result.statuses["app"].resources.linux is not None
    assert result.statuses["app"].resources.linux.cpu_quota == 250_000


@needs_cgroups
async def test_close_leaves_no_cgroups_and_no_processes() -> None:
    runtime = CgroupRuntime(f"test-{uuid.uuid4().hex[:12]}")
    pids = []
    made: list[Path] = []
    for uid in ("a", "b"):
        sandbox_id = await runtime.run_pod_sandbox(uid, resources=lcr(1000, 256))
        made += runtime.pod_cgroup_dirs(sandbox_id)
        for name in ("c1", "c2"):
            container_id = await runtime.create_container(sandbox_id, name, [], cr(lcr(100, 64)))
            await runtime.start_container(container_id)
            made += runtime.cgroup_dirs(container_id)
            pid = (await runtime.container_status(container_id)).pid
            assert pid is not None
            pids.append(pid)
    node_dirs = runtime.node_cgroup_dirs()
    assert all(d.is_dir() for d in made + node_dirs)

    await runtime.close()

    assert not any(d.exists() for d in made + node_dirs)
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    await runtime.close()  # idempotent


@needs_cgroups
async def test_a_process_exiting_on_its_own_is_reported_exited(
    cgroup_runtime: CgroupRuntime,
) -> None:
    sandbox_id = await cgroup_runtime.run_pod_sandbox("x", resources=lcr(1000, 256))
    container_id = await cgroup_runtime.create_container(
        sandbox_id, "job", ["sh", "-c", "sleep 0.2; exit 3"], cr(lcr(100, 64))
    )
    await cgroup_runtime.start_container(container_id)

    async def exited() -> bool:
        return (await cgroup_runtime.container_status(container_id)).state != "running"

    await eventually(exited)
    status = await cgroup_runtime.container_status(container_id)
    assert (status.state, status.exit_code, status.pid) == ("exited", 3, None)
    # An exited container starts again in place: a restart.
    await cgroup_runtime.start_container(container_id)
    assert (await cgroup_runtime.container_status(container_id)).restart_count == 1


# --- the fake's misbehaviour, which scale and failure tests rely on ----------------------------


async def test_fake_latency_failures_and_journal() -> None:
    fake = FakeRuntime(latency={"update_container_resources": 0.05})
    sandbox_id = await fake.run_pod_sandbox("u", resources=lcr(1000, 256))
    container_id = await fake.create_container(sandbox_id, "app", [], cr(lcr(100, 64)))
    loop = asyncio.get_running_loop()
    started = loop.time()
    await fake.start_container(container_id)
    assert loop.time() - started < 0.05  # latency only where configured
    started = loop.time()
    await fake.update_container_resources(container_id, cr(lcr(200, 64)))
    assert loop.time() - started >= 0.05

    fake.fail_next("update_container_resources", times=2, error=ResourceUpdateError)
    for _ in range(2):
        with pytest.raises(ResourceUpdateError, match="injected failure"):
            await fake.update_container_resources(container_id, cr(lcr(300, 64)))
    await fake.update_container_resources(container_id, cr(lcr(300, 64)))  # third succeeds

    fake.fail_when(lambda call: call.values.get("cpu_shares") == 512)
    with pytest.raises(RuntimeUnavailableError):
        await fake.update_container_resources(container_id, cr(lcr(500, 64)))
    await fake.update_container_resources(container_id, cr(lcr(600, 64)))
    fake.clear_failures()
    await fake.update_container_resources(container_id, cr(lcr(500, 64)))

    updates = fake.journal("update_container_resources")
    assert [c.values["cpu_shares"] for c in updates] == [204, 307, 307, 307, 512, 614, 512]
    assert [type(e).__name__ for _, e in fake.errors] == [
        "ResourceUpdateError", "ResourceUpdateError", "RuntimeUnavailableError",
    ]  # fmt: skip


async def test_fake_hang_until_released() -> None:
    fake = FakeRuntime()
    sandbox_id = await fake.run_pod_sandbox("u", resources=lcr(1000, 256))
    container_id = await fake.create_container(sandbox_id, "app", [], cr(lcr(100, 64)))
    fake.hang("update_container_resources", lambda call: call.target == container_id)
    hung = asyncio.create_task(fake.update_container_resources(container_id, cr(lcr(200, 64))))
    await asyncio.sleep(0.05)
    assert not hung.done()
    await fake.container_status(container_id)  # other calls are not affected
    fake.release()
    await asyncio.wait_for(hung, 1)
    assert (await fake.container_status(container_id)).resources == cr(lcr(200, 64))
    await asyncio.wait_for(  # released: no longer hangs
        fake.update_container_resources(container_id, cr(lcr(300, 64))), 1
    )


async def test_fake_process_exit_and_memory_usage() -> None:
    fake = FakeRuntime()
    sandbox_id = await fake.run_pod_sandbox("u", resources=lcr(1000, 256))
    container_id = await fake.create_container(sandbox_id, "app", [], cr(lcr(100, 64)))
    await fake.start_container(container_id)
    fake.set_memory_usage(container_id, 10 * MI)
    assert await fake.container_memory_usage(container_id) == 10 * MI
    with pytest.raises(ResourceUpdateError):  # the pod's limit too
        await fake.set_pod_cgroup_resources(sandbox_id, lcr(1000, 8))
    fake.exit_container(container_id, exit_code=1)
    status = await fake.container_status(container_id)
    assert (status.state, status.exit_code) == ("exited", 1)
    assert await fake.container_memory_usage(container_id) == 0


# --- cgroup v2 files, on an emulated tree (this machine has v1 controllers only) ---------------


def test_cgroup_v2_files_written_and_read_back(tmp_path: Path) -> None:
    # The v2 writer/reader on plain files laid out like a v2 group, so its formats are checked
    # even where no v2 controllers exist (the kernel side is covered on v2 machines by the
    # contract suite above).
    group = tmp_path / "inplace" / "n" / "podu" / "app"
    group.mkdir(parents=True)
    parents = [tmp_path, *reversed(group.parents[: len(group.relative_to(tmp_path).parts) - 1])]
    for directory in [*parents, group]:
        (directory / "cgroup.subtree_control").write_text("")
    for name, value in {"cpu.max": "max 100000", "cpu.weight": "100", "memory.max": "max"}.items():
        (group / name).write_text(value)
    v2 = _V2(tmp_path)
    rel = group.relative_to(tmp_path)
    v2.make(rel)
    # Controllers are delegated down to the pod; the container (a leaf) delegates nothing.
    assert [(d / "cgroup.subtree_control").read_text() for d in parents] == ["+cpu +memory"] * 4
    assert (group / "cgroup.subtree_control").read_text() == ""
    wanted = LinuxContainerResources(100_000, 150_000, 1536, 100_000_000)
    v2.write(rel, wanted)
    assert (group / "cpu.max").read_text() == "150000 100000"
    assert (group / "cpu.weight").read_text() == str(shares_to_weight(1536)) == "59"
    assert (group / "memory.max").read_text() == "100000000"
    # The kernel keeps whole pages; the value read back is still the one written.
    (group / "memory.max").write_text(str(100_000_000 - 100_000_000 % 4096))
    assert v2.read(rel, wanted) == wanted
    # Something else changed the weight: report what is there, as shares.
    (group / "cpu.weight").write_text("39")
    assert v2.read(rel, wanted).cpu_shares == weight_to_shares(39)
    v2.write(rel, LinuxContainerResources(cpu_shares=2))
    assert (group / "cpu.max").read_text() == "max 100000"
    assert (group / "memory.max").read_text() == "max"
    assert v2.read(rel, LinuxContainerResources(cpu_shares=2)) == LinuxContainerResources(
        cpu_shares=2
    )


async def test_fake_without_a_journal_still_runs_and_fails_calls() -> None:
    """The kubelet's fake keeps no journal (it grew with every pod and resize, forever);
    what the journal is not needed for still works: the calls, and failures picked by them."""
    fake = FakeRuntime(keep_calls=False)
    sandbox_id = await fake.run_pod_sandbox("u", resources=lcr(1000, 256))
    container_id = await fake.create_container(sandbox_id, "app", [], cr(lcr(100, 64)))
    fake.fail_when(lambda call: call.method == "update_container_resources")
    with pytest.raises(RuntimeUnavailableError):
        await fake.update_container_resources(container_id, cr(lcr(200, 64)))
    fake.clear_failures()
    await fake.update_container_resources(container_id, cr(lcr(300, 64)))
    assert (await fake.container_status(container_id)).resources == cr(lcr(300, 64))
    assert fake.journal() == [] and fake.errors == []
