"""The fake runtime's simulated usage: CPU time accrues at the set rate only while the
container runs (what resource metrics read through ContainerStats)."""

from __future__ import annotations

from services.kubelet.cri import ContainerResources, LinuxContainerResources
from services.kubelet.runtime_fake import FakeRuntime


async def test_cpu_time_accrues_at_the_simulated_rate_while_running() -> None:
    now = [100.0]
    runtime = FakeRuntime(cpu_clock=lambda: now[0])
    sandbox = await runtime.run_pod_sandbox("u1")
    cid = await runtime.create_container(sandbox, "app", [], ContainerResources(
        linux=LinuxContainerResources(cpu_period=100_000, cpu_quota=50_000)
    ))  # fmt: skip
    await runtime.start_container(cid)
    runtime.set_cpu_usage(cid, 250_000_000)  # a quarter of a core
    runtime.set_memory_usage(cid, 3 << 20)
    now[0] += 4.0
    stats = await runtime.container_stats(cid)
    assert (stats.cpu_usage_core_nano_seconds, stats.memory_working_set_bytes) == (
        1_000_000_000,
        3 << 20,
    )
    await runtime.stop_container(cid)
    now[0] += 10.0  # stopped: nothing more
    assert (await runtime.container_stats(cid)).cpu_usage_core_nano_seconds == 1_000_000_000
    await runtime.start_container(cid)
    now[0] += 2.0
    assert (await runtime.container_stats(cid)).cpu_usage_core_nano_seconds == 1_500_000_000
