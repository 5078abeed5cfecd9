"""The controller SIGKILLed mid-rollout resumes from the log without resizing any pod twice
(must show 3): at most one ResizeProposed per pod per revision."""

from __future__ import annotations

from typing import Any

import pytest

from schemas.events import PODS
from tests.integration.conftest import RoleProcess, read_log, wait_caught_up
from tests.integration.workload.conftest import (
    Cluster,
    clone_set,
    cpu_of,
    cpu_patch,
    eventually,
    running,
)
from tests.integration.workload.logcheck import proposals_per_pod_and_target


@pytest.fixture
def kubelet_env() -> dict[str, str]:
    # A slow runtime keeps resizes in flight long enough to kill the controller among them.
    return {"INPLACE_KUBELET_RUNTIME_LATENCY": "0.3"}


async def test_sigkill_mid_rollout_resumes_without_double_resize(
    cluster: Cluster, projector: RoleProcess
) -> None:
    # With the projector running, a restarted controller starts from the projection and
    # reads the tail (issue 16): what was in flight must still be resized exactly once.
    projector.start()
    await cluster.create(clone_set("db", 8, "100m", maxConcurrentResizes=2))

    async def up() -> list[Any] | None:
        pods = await cluster.pods("db")
        return pods if running(pods, 8) else None

    before = await eventually(up)
    await cluster.patch("db", cpu_patch("300m"))

    for killed_after in (1, 4):  # twice: inside the first batches and further on

        async def progressed(n: int = killed_after) -> bool:
            pods = await cluster.pods("db")
            return sum(1 for p in pods if cpu_of(p) == "300m") >= n

        await eventually(progressed)
        await wait_caught_up(cluster.settings, projector)
        cluster.controller.kill9()
        cluster.controller.start()
        await cluster.controller.ready()
        async with cluster.controller.client() as http:
            metrics = (await http.get(f"{cluster.controller.url}/metrics")).text
        assert 'inplace_read_model_start_source{role="workload",source="snapshot"} 1.0' in metrics

    async def converged() -> dict[str, Any] | None:
        cs = await cluster.get("db")
        st = cs.get("status", {})
        done = st.get("updatedResizedReplicas") == 8 and st.get("currentRevision") == st.get(
            "updateRevision"
        )
        return cs if done else None

    await eventually(converged, within=180)
    pods = await cluster.pods("db")
    assert {p.metadata.uid for p in pods} == {p.metadata.uid for p in before}
    assert all(cpu_of(p) == "300m" for p in pods)

    proposals = proposals_per_pod_and_target(await read_log(cluster.settings, PODS))
    assert len(proposals) == 8
    twice = {key: n for key, n in proposals.items() if n > 1}
    assert not twice, f"pods resized more than once for one revision: {twice}"
