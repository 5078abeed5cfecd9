"""Actuation ordering (KEP-1287 "Container resource limit update ordering" and "failure
handling"): the exact plan for each case, and the exact calls a runtime sees when it runs.

Values are CRI values: shares/quota as cgroupconv computes them for the CPU quantities in the
comments, memory in MiB.
"""

from __future__ import annotations

import pytest

from schemas.k8s import ContainerResizePolicy
from services.kubelet.actuation import (
    ActuationResult,
    Blocked,
    ContainerRuntimeState,
    RestartContainer,
    SetPodCgroup,
    Step,
    UpdateContainerResources,
    UpdatePodSandboxResources,
    execute,
    plan_resize,
    restart_policy,
    retry_delay,
)
from services.kubelet.cri import (
    ContainerResources,
    LinuxContainerResources,
    ResourceUpdateError,
    RuntimeTimeoutError,
    RuntimeUnavailableError,
)
from services.kubelet.runtime_fake import Call, FakeRuntime, resource_values

MI = 1024 * 1024
SB = "sb"


def L(cpu_m: int, mem_mi: int = 0, *, limit_m: int | None = None) -> LinuxContainerResources:
    """CRI resources for a CPU request (and limit, default = request) in milli-CPU and a
    memory limit in MiB, as cgroupconv.container_resources makes them."""
    limit = cpu_m if limit_m is None else limit_m
    return LinuxContainerResources(
        cpu_period=100_000 if limit else 0,
        cpu_quota=limit * 100 if limit else 0,
        cpu_shares=max(2, cpu_m * 1024 // 1000),
        memory_limit_in_bytes=mem_mi * MI,
    )


def running(
    name: str, resources: LinuxContainerResources, usage_mi: int = 0
) -> ContainerRuntimeState:
    return ContainerRuntimeState(name, f"id-{name}", True, resources, usage_mi * MI)


def restart_on(*resources: str) -> list[ContainerResizePolicy]:
    return [
        ContainerResizePolicy(resource_name=r, restart_policy="RestartContainer") for r in resources
    ]


def upd(name: str, resources: LinuxContainerResources) -> UpdateContainerResources:
    return UpdateContainerResources(name, f"id-{name}", resources)


def pod_step(resource: str, what: str, resources: LinuxContainerResources) -> SetPodCgroup:
    return SetPodCgroup(SB, resource, what, resources)  # type: ignore[arg-type]


def sandbox(resources: LinuxContainerResources) -> UpdatePodSandboxResources:
    return UpdatePodSandboxResources(SB, resources)


# --- the plan, case by case --------------------------------------------------------------------


def test_increase_pod_level_first_then_containers() -> None:
    # Guaranteed 1 CPU / 1Gi → 2 CPU / 2Gi.
    plan = plan_resize(
        [running("app", L(1000, 1024))],
        {"app": L(2000, 2048)},
        {},
        L(1000, 1024),
        L(2000, 2048),
        sandbox_id=SB,
    )
    mem_up = L(1000, 2048)
    quota_up = L(1000, 2048, limit_m=2000)
    assert plan == [
        pod_step("memory", "limit", mem_up),
        pod_step("cpu", "limit", quota_up),  # limits grow before requests
        pod_step("cpu", "request", L(2000, 2048)),
        sandbox(L(2000, 2048)),  # right after the pod-level cgroups
        upd("app", L(2000, 2048)),
    ]


def test_decrease_containers_first_then_pod_level() -> None:
    plan = plan_resize(
        [running("app", L(2000, 2048))],
        {"app": L(1000, 1024)},
        {},
        L(2000, 2048),
        L(1000, 1024),
        sandbox_id=SB,
    )
    assert plan == [
        upd("app", L(1000, 1024)),
        pod_step("memory", "limit", L(2000, 1024)),
        pod_step("cpu", "request", L(1000, 1024, limit_m=2000)),  # requests shrink first
        pod_step("cpu", "limit", L(1000, 1024)),
        sandbox(L(1000, 1024)),
    ]


def test_mixed_cpu_up_memory_down_per_resource_order() -> None:
    # CPU: net increase → pod first; memory: net decrease → pod last. The container is written
    # twice: memory down (CPU still old), then CPU up.
    plan = plan_resize(
        [running("app", L(1000, 2048))],
        {"app": L(2000, 1024)},
        {},
        L(1000, 2048),
        L(2000, 1024),
        sandbox_id=SB,
    )
    assert plan == [
        pod_step("cpu", "limit", L(1000, 2048, limit_m=2000)),
        pod_step("cpu", "request", L(2000, 2048)),
        upd("app", L(1000, 1024)),
        upd("app", L(2000, 1024)),
        pod_step("memory", "limit", L(2000, 1024)),
        sandbox(L(2000, 1024)),
    ]


def test_no_net_change_containers_only_decrease_before_increase() -> None:
    # c1 +500m, c2 -500m: the pod total is unchanged, so no pod-level step and no sandbox call;
    # c2's decrease comes first although c1 is listed first.
    plan = plan_resize(
        [running("c1", L(1000, 512)), running("c2", L(1000, 512))],
        {"c1": L(1500, 512), "c2": L(500, 512)},
        {},
        L(2000, 1024),
        L(2000, 1024),
        sandbox_id=SB,
    )
    assert plan == [upd("c2", L(500, 512)), upd("c1", L(1500, 512))]


def test_multi_container_net_increase_all_decreases_first() -> None:
    # Net +500m CPU over three containers (KEP e2e "Increase CPU for c1 & c3, decrease c2").
    plan = plan_resize(
        [running("c1", L(1000, 256)), running("c2", L(1000, 256)), running("c3", L(1000, 256))],
        {"c1": L(1250, 256), "c2": L(500, 256), "c3": L(1750, 256)},
        {},
        L(3000, 768),
        L(3500, 768),
        sandbox_id=SB,
    )
    assert plan == [
        pod_step("cpu", "limit", L(3000, 768, limit_m=3500)),
        pod_step("cpu", "request", L(3500, 768)),
        sandbox(L(3500, 768)),
        upd("c2", L(500, 256)),
        upd("c1", L(1250, 256)),
        upd("c3", L(1750, 256)),
    ]


def test_restart_container_policy_restarts_instead_of_update() -> None:
    plan = plan_resize(
        [running("app", L(1000, 1024)), running("sidecar", L(200, 128))],
        {"app": L(1000, 2048), "sidecar": L(300, 128)},
        {"app": restart_on("memory")},
        L(1200, 1152),
        L(1300, 2176),
        sandbox_id=SB,
    )
    assert plan == [
        pod_step("memory", "limit", L(1200, 2176)),
        pod_step("cpu", "limit", L(1200, 2176, limit_m=1300)),
        pod_step("cpu", "request", L(1300, 2176)),
        sandbox(L(1300, 2176)),
        RestartContainer("app", "id-app", L(1000, 2048)),
        upd("sidecar", L(300, 128)),  # NotRequired: in place
    ]


@pytest.mark.parametrize(
    ("policies", "target", "restarts"),
    [
        pytest.param(restart_on("memory"), L(2000, 2048), True, id="both change, memory restarts"),
        pytest.param(restart_on("cpu"), L(2000, 2048), True, id="both change, cpu restarts"),
        pytest.param(restart_on("memory"), L(2000, 1024), False, id="only cpu changes"),
        pytest.param(restart_on("cpu"), L(1000, 2048), False, id="only memory changes"),
        pytest.param(None, L(2000, 2048), False, id="no policy: NotRequired"),
    ],
)
def test_restart_wins_when_a_changed_resource_requires_it(
    policies: list[ContainerResizePolicy] | None, target: LinuxContainerResources, restarts: bool
) -> None:
    plan = plan_resize(
        [running("app", L(1000, 1024))], {"app": target}, {"app": policies}, None, None,
        sandbox_id=SB,
    )  # fmt: skip
    assert isinstance(plan, list)
    kinds = [type(step) for step in plan]
    assert kinds == ([RestartContainer] if restarts else [UpdateContainerResources])


def test_shrinking_restarts_come_before_growing_restarts() -> None:
    plan = plan_resize(
        [running("grow", L(500, 256)), running("shrink", L(1000, 256))],
        {"grow": L(1000, 256), "shrink": L(500, 256)},
        {"grow": restart_on("cpu"), "shrink": restart_on("cpu")},
        None,
        None,
        sandbox_id=SB,
    )
    assert plan == [
        RestartContainer("shrink", "id-shrink", L(500, 256)),
        RestartContainer("grow", "id-grow", L(1000, 256)),
    ]


def test_memory_limit_below_usage_is_blocked() -> None:
    plan = plan_resize(
        [running("app", L(1000, 1024), usage_mi=700)],
        {"app": L(1000, 512)},
        {},
        L(1000, 1024),
        L(1000, 512),
        sandbox_id=SB,
    )
    assert plan == Blocked(
        "app",
        f"memory limit {512 * MI} of container 'app' is not above its current memory usage "
        f"{700 * MI}",
    )


def test_memory_below_usage_of_a_restarted_container_is_not_blocked() -> None:
    plan = plan_resize(
        [running("app", L(1000, 1024), usage_mi=700)],
        {"app": L(1000, 512)},
        {"app": restart_on("memory")},
        None,
        None,
        sandbox_id=SB,
    )
    assert plan == [RestartContainer("app", "id-app", L(1000, 512))]


def test_pod_memory_limit_below_pod_usage_is_blocked() -> None:
    # Each container stays under its own new limit, but together they use more than the pod's.
    plan = plan_resize(
        [running("c1", L(500, 512), usage_mi=300), running("c2", L(500, 0), usage_mi=300)],
        {"c1": L(500, 400), "c2": L(500, 0)},
        {},
        L(1000, 1024),
        L(1000, 500),
        sandbox_id=SB,
    )
    assert plan == Blocked(
        None,
        f"aborting attempt to set pod memory limit {500 * MI} less than current memory usage "
        f"{600 * MI}",
    )


def test_exited_container_gets_new_values_for_its_next_start() -> None:
    # KEP-1287 Lifecycle Nuances: terminated containers can be resized; no restart, no ordering.
    exited = ContainerRuntimeState("job", "id-job", False, L(1000, 1024))
    plan = plan_resize([exited], {"job": L(2000, 1024)}, {}, None, None, sandbox_id=SB)
    assert plan == [upd("job", L(2000, 1024))]


def test_nothing_to_do() -> None:
    same = plan_resize(
        [running("app", L(1000, 1024))], {"app": L(1000, 1024)}, {}, L(1000, 1024), L(1000, 1024),
        sandbox_id=SB,
    )  # fmt: skip
    assert same == []
    # Both at or below 2 shares is the same weight: 1m and 2m need no update.
    tiny = plan_resize(
        [running("app", L(1, 0, limit_m=0))], {"app": L(2, 0, limit_m=0)}, {}, None, None,
        sandbox_id=SB,
    )  # fmt: skip
    assert tiny == []
    unknown = ContainerRuntimeState("app", "id-app", True, None)
    assert plan_resize([unknown], {"app": L(1, 0)}, {}, None, None, sandbox_id=SB) == []


def test_removing_a_limit_is_a_grow() -> None:
    plan = plan_resize(
        [running("app", L(1000, 1024))],
        {"app": L(1000, 0, limit_m=0)},
        {},
        L(1000, 1024),
        L(1000, 0, limit_m=0),
        sandbox_id=SB,
    )
    assert plan == [
        pod_step("memory", "limit", L(1000, 0)),
        pod_step("cpu", "limit", L(1000, 0, limit_m=0)),
        sandbox(L(1000, 0, limit_m=0)),
        upd("app", L(1000, 0, limit_m=0)),
    ]


def test_restart_policy_default() -> None:
    assert restart_policy(None, "cpu") == "NotRequired"
    assert restart_policy(restart_on("memory"), "cpu") == "NotRequired"
    assert restart_policy(restart_on("memory"), "memory") == "RestartContainer"


# --- execution against a runtime ---------------------------------------------------------------


async def make_pod(
    fake: FakeRuntime, pod_level: LinuxContainerResources, **containers: LinuxContainerResources
) -> tuple[str, dict[str, str]]:
    sandbox_id = await fake.run_pod_sandbox("uid", resources=pod_level)
    ids = {}
    for name, resources in containers.items():
        ids[name] = await fake.create_container(
            sandbox_id, name, ["sleep"], ContainerResources(linux=resources)
        )
        await fake.start_container(ids[name])
    fake.calls.clear()
    return sandbox_id, ids


def states(
    ids: dict[str, str], current: dict[str, LinuxContainerResources]
) -> list[ContainerRuntimeState]:
    return [ContainerRuntimeState(n, ids[n], True, current[n]) for n in ids]


def journal(result_fake: FakeRuntime) -> list[tuple[str, str, int, int, int]]:
    """(method, target, quota, shares, memory MiB) of every resize call, in order."""
    out = []
    for call in result_fake.journal(
        "set_pod_cgroup_resources",
        "update_container_resources",
        "update_pod_sandbox_resources",
        "stop_container",
        "start_container",
    ):
        v = call.values
        out.append(
            (
                call.method,
                call.target,
                int(v.get("cpu_quota", 0)),  # type: ignore[call-overload]
                int(v.get("cpu_shares", 0)),  # type: ignore[call-overload]
                int(v.get("memory_limit_in_bytes", 0)) // MI,  # type: ignore[call-overload]
            )
        )
    return out


async def test_execute_increase_exact_call_sequence_under_strict_hierarchy() -> None:
    # strict_hierarchy refuses a container limit above its pod's, as cgroup v1 does for CFS
    # quota: only the KEP order gets through.
    fake = FakeRuntime(strict_hierarchy=True)
    before = {"c1": L(1000, 512), "c2": L(1000, 512)}
    sb, ids = await make_pod(fake, L(2000, 1024), **before)
    after = {"c1": L(1500, 768), "c2": L(1500, 768)}
    plan = plan_resize(states(ids, before), after, {}, L(2000, 1024), L(3000, 1536), sandbox_id=sb)
    assert isinstance(plan, list)
    result = await execute(plan, fake)
    assert result.ok and result.error is None
    assert journal(fake) == [
        ("set_pod_cgroup_resources", sb, 200_000, 2048, 1536),
        ("set_pod_cgroup_resources", sb, 300_000, 2048, 1536),
        ("set_pod_cgroup_resources", sb, 300_000, 3072, 1536),
        ("update_pod_sandbox_resources", sb, 300_000, 3072, 1536),
        ("update_container_resources", ids["c1"], 150_000, 1536, 768),
        ("update_container_resources", ids["c2"], 150_000, 1536, 768),
    ]
    assert result.actual == after


async def test_execute_decrease_and_the_wrong_order_fails_under_strict_hierarchy() -> None:
    fake = FakeRuntime(strict_hierarchy=True)
    before = {"app": L(2000, 2048)}
    sb, ids = await make_pod(fake, L(2000, 2048), **before)
    after = {"app": L(1000, 1024)}
    plan = plan_resize(states(ids, before), after, {}, L(2000, 2048), L(1000, 1024), sandbox_id=sb)
    assert isinstance(plan, list)
    # Pod level first would put the container above its pod: refused, like the kernel.
    wrong = [s for s in plan if isinstance(s, SetPodCgroup)] + [
        s for s in plan if not isinstance(s, SetPodCgroup)
    ]
    failed = await execute(wrong, fake)
    assert not failed.ok and isinstance(failed.error, ResourceUpdateError)
    fake.calls.clear()
    result = await execute(plan, fake)
    assert result.ok
    assert journal(fake) == [
        ("update_container_resources", ids["app"], 100_000, 1024, 1024),
        ("set_pod_cgroup_resources", sb, 200_000, 2048, 1024),
        ("set_pod_cgroup_resources", sb, 200_000, 1024, 1024),
        ("set_pod_cgroup_resources", sb, 100_000, 1024, 1024),
        ("update_pod_sandbox_resources", sb, 100_000, 1024, 1024),
    ]
    assert result.actual == after


async def test_runtime_error_mid_plan_stops_and_leaves_the_rest() -> None:
    # Failure handling: "Kubelet does not attempt to update limits for containers that are
    # lined up for update after the failing container".
    fake = FakeRuntime()
    before = {"c1": L(1000, 256), "c2": L(1000, 256), "c3": L(1000, 256)}
    sb, ids = await make_pod(fake, L(3000, 768), **before)
    after = {"c1": L(1500, 256), "c2": L(1500, 256), "c3": L(1500, 256)}
    plan = plan_resize(states(ids, before), after, {}, L(3000, 768), L(4500, 768), sandbox_id=sb)
    assert isinstance(plan, list)
    fake.fail_when(
        lambda call: call.method == "update_container_resources" and call.target == ids["c2"]
    )
    result = await execute(plan, fake)
    assert not result.ok
    assert isinstance(result.error, RuntimeUnavailableError)
    assert result.failed == UpdateContainerResources("c2", ids["c2"], L(1500, 256))
    assert [type(s).__name__ for s in result.completed] == [
        "SetPodCgroup", "SetPodCgroup", "UpdatePodSandboxResources", "UpdateContainerResources",
    ]  # fmt: skip
    assert [c.target for c in fake.journal("update_container_resources")] == [ids["c1"], ids["c2"]]
    # The read-back shows what is really applied: c1 new, c2 and c3 still old.
    assert result.actual == {"c1": after["c1"], "c2": before["c2"], "c3": before["c3"]}
    # Retrying: a new plan from the actual state finishes the job.
    fake.clear_failures()
    current = {n: r for n, r in result.actual.items() if r is not None}
    pod_now = (await fake.pod_sandbox_status(sb)).resources
    retry = plan_resize(states(ids, current), after, {}, pod_now, L(4500, 768), sandbox_id=sb)
    assert isinstance(retry, list)
    assert retry == [
        UpdateContainerResources("c2", ids["c2"], after["c2"]),
        UpdateContainerResources("c3", ids["c3"], after["c3"]),
    ]
    assert (await execute(retry, fake, read_back=ids)).actual == after


async def test_sandbox_update_is_best_effort() -> None:
    fake = FakeRuntime()
    before = {"app": L(1000, 512)}
    sb, ids = await make_pod(fake, L(1000, 512), **before)
    plan = plan_resize(
        states(ids, before), {"app": L(2000, 512)}, {}, L(1000, 512), L(2000, 512), sandbox_id=sb
    )
    assert isinstance(plan, list)
    fake.fail_next("update_pod_sandbox_resources")
    result = await execute(plan, fake)
    assert result.ok
    assert [type(step) for step, _ in result.best_effort_errors] == [UpdatePodSandboxResources]
    assert result.actual == {"app": L(2000, 512)}


async def test_hung_runtime_times_out_instead_of_blocking() -> None:
    fake = FakeRuntime()
    before = {"app": L(1000, 512)}
    _sb, ids = await make_pod(fake, L(1000, 512), **before)
    fake.hang("update_container_resources")
    plan: list[Step] = [UpdateContainerResources("app", ids["app"], L(2000, 512))]
    result = await execute(plan, fake, step_timeout=0.05)
    assert isinstance(result.error, RuntimeTimeoutError)
    assert result.failed == plan[0]
    fake.release()


async def test_execute_restart_is_stop_update_start_and_changes_only_that_pid() -> None:
    fake = FakeRuntime()
    before = {"app": L(1000, 512), "sidecar": L(200, 128)}
    sb, ids = await make_pod(fake, L(1200, 640), **before)
    pids = {n: (await fake.container_status(i)).pid for n, i in ids.items()}
    after = {"app": L(1000, 1024), "sidecar": L(300, 128)}
    plan = plan_resize(
        states(ids, before), after, {"app": restart_on("memory")}, L(1200, 640), L(1300, 1152),
        sandbox_id=sb,
    )  # fmt: skip
    assert isinstance(plan, list)
    fake.calls.clear()
    result: ActuationResult = await execute(plan, fake)
    assert result.ok
    assert [(c.method, c.target) for c in fake.journal(
        "stop_container", "start_container", "update_container_resources"
    )] == [
        ("stop_container", ids["app"]),
        ("update_container_resources", ids["app"]),
        ("start_container", ids["app"]),
        ("update_container_resources", ids["sidecar"]),
    ]  # fmt: skip
    assert result.statuses["app"].restart_count == 1
    assert result.statuses["app"].pid != pids["app"]
    assert result.statuses["sidecar"].restart_count == 0
    assert result.statuses["sidecar"].pid == pids["sidecar"]
    assert result.actual == after


async def test_read_back_includes_untouched_containers_on_request() -> None:
    fake = FakeRuntime()
    _sb, ids = await make_pod(fake, L(1000, 512), app=L(1000, 512))
    result = await execute([], fake, read_back=ids)
    assert result.ok and result.actual == {"app": L(1000, 512)}
    assert fake.calls == [Call("container_status", ids["app"], {})]
    assert resource_values(L(1000, 512))["cpu_shares"] == 1024


def test_retry_delay_doubles_and_caps() -> None:
    assert [retry_delay(n) for n in range(0, 6)] == [0.0, 1.0, 2.0, 4.0, 8.0, 16.0]
    assert retry_delay(100) == 300.0
    assert retry_delay(3, initial=0.5, maximum=1.0) == 1.0


async def test_the_fake_runtime_holds_one_object_per_distinct_resources() -> None:
    fake = FakeRuntime()
    sb, ids = await make_pod(fake, L(2000, 1024), a=L(1000, 512), b=L(1000, 512), c=L(500, 512))
    held = {n: (await fake.container_status(cid)).resources for n, cid in ids.items()}
    linux = {n: r.linux if r is not None else None for n, r in held.items()}
    assert linux["a"] is linux["b"] and linux["a"] == L(1000, 512)
    assert linux["c"] is not linux["a"] and linux["c"] == L(500, 512)
    # An update to values held already takes the held object; the others keep theirs.
    await fake.update_container_resources(ids["c"], ContainerResources(linux=L(1000, 512)))
    after = (await fake.container_status(ids["c"])).resources
    assert after is not None and after.linux is linux["a"]
    assert (await fake.pod_sandbox_status(sb)).resources == L(2000, 1024)
