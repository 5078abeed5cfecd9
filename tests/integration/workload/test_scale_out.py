"""Several CloneSet controllers share the CloneSets through Kafka's consumer group on the
`workloads` topic (issue 16): two processes split the partitions, each resizes only the pods
of its own CloneSets; one is SIGKILLed mid-rollout, the survivor takes its partitions in the
rebalance and finishes every rollout, each pod resized exactly once per revision."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from inplace.core.bus.partitioning import partition_of
from schemas.events import PODS
from tests.integration.conftest import RoleProcess, read_log
from tests.integration.workload.conftest import (
    NS,
    Cluster,
    clone_set,
    cpu_of,
    cpu_patch,
    eventually,
    running,
)
from tests.integration.workload.logcheck import proposals_per_pod_and_target

OWNED = re.compile(r'^inplace_workload_partition_owned\{partition="(\d+)"\} 1\.0$', re.M)
RESIZING = re.compile(r"resizing (\S+) to ")
REPLICAS = 3
GROUP_ENV = {"INPLACE_WORKLOAD_GROUP_SESSION_TIMEOUT": "6"}


@pytest.fixture
def kubelet_env() -> dict[str, str]:
    # A slow runtime keeps resizes in flight long enough to kill a controller among them.
    return {"INPLACE_KUBELET_RUNTIME_LATENCY": "0.3"}


@pytest.fixture
def controller_env() -> dict[str, str]:
    return {**GROUP_ENV, "INPLACE_WORKLOAD_INSTANCE": "workload-1"}


async def _owned(controller: RoleProcess) -> set[int]:
    async with controller.client() as http:
        text = (await http.get(f"{controller.url}/metrics")).text
    return {int(p) for p in OWNED.findall(text)}


def _names(partitions: int) -> dict[str, int]:
    """Two CloneSet names per `workloads` partition: CloneSet name → its partition."""
    chosen: dict[str, int] = {}
    for i in range(100):
        name = f"web-{i}"
        partition = partition_of(f"{NS}/{name}", partitions)
        if sum(p == partition for p in chosen.values()) < 2:
            chosen[name] = partition
    assert sorted(chosen.values()) == sorted([*range(partitions)] * 2)
    return chosen


def _resized_by(log: Path) -> set[str]:
    """The CloneSets whose pods a controller process asked to resize (pods are `<cs>-<id>`)."""
    return {pod.rsplit("-", 1)[0] for pod in RESIZING.findall(log.read_text())}


async def test_two_controllers_split_the_clone_sets_and_one_takes_over_after_a_sigkill(
    cluster: Cluster, tmp_path: Path
) -> None:
    partitions = cluster.settings.workloads_partitions
    first = cluster.controller
    second = RoleProcess(
        "workload",
        cluster.settings,
        tmp_path / "workload-2.log",
        INPLACE_WORKLOAD_APISERVER_URL=cluster.apiserver.url,
        INPLACE_WORKLOAD_INSTANCE="workload-2",
        **GROUP_ENV,
    )
    second.start()
    try:
        await second.ready()

        async def split() -> tuple[set[int], set[int]] | None:
            a, b = await _owned(first), await _owned(second)
            whole = a | b == set(range(partitions)) and not a & b
            return (a, b) if whole and a and b else None

        mine_a, mine_b = await eventually(split)
        names = _names(partitions)
        for name in names:
            await cluster.create(clone_set(name, REPLICAS, "100m", maxConcurrentResizes=1))

        async def up() -> bool:
            for name in names:
                if not running(await cluster.pods(name), REPLICAS):
                    return False
            return True

        await eventually(up, within=180)
        before = {name: {p.metadata.uid for p in await cluster.pods(name)} for name in names}
        for name in names:
            await cluster.patch(name, cpu_patch("300m"))

        async def started() -> bool:  # every CloneSet has a pod resized: both are at work
            for name in names:
                if not any(cpu_of(p) == "300m" for p in await cluster.pods(name)):
                    return False
            return True

        await eventually(started)
        second.kill9()
        # Until the kill each process resized only the pods of its own partitions' CloneSets.
        assert _resized_by(second.log) == {n for n, p in names.items() if p in mine_b}
        assert {n for n, p in names.items() if p in mine_a} <= _resized_by(first.log)

        async def took_over() -> bool:
            return await _owned(first) == set(range(partitions))

        await eventually(took_over, within=60)

        async def converged() -> bool:
            for name in names:
                cs = await cluster.get(name)
                st = cs.get("status", {})
                if not (
                    st.get("updatedResizedReplicas") == REPLICAS
                    and st.get("currentRevision") == st.get("updateRevision")
                ):
                    return False
            return True

        await eventually(converged, within=180)
    finally:
        second.stop()
    for name in names:
        pods: list[Any] = await cluster.pods(name)
        assert {p.metadata.uid for p in pods} == before[name]  # resized in place
        assert all(cpu_of(p) == "300m" for p in pods)
    proposals = proposals_per_pod_and_target(await read_log(cluster.settings, PODS))
    assert len(proposals) == len(names) * REPLICAS
    twice = {key: n for key, n in proposals.items() if n > 1}
    assert not twice, f"pods resized more than once for one revision: {twice}"
