"""The workload controller decodes only the records of pods a CloneSet controls (the
`controller` header, issue 16): a plain pod's records are skipped unparsed, and the CloneSet
is served as before."""

from __future__ import annotations

from typing import Any

from tests.integration.conftest import metric
from tests.integration.workload.conftest import NS, Cluster, clone_set, eventually, running

SKIPPED = 'inplace_events_skipped_total{role="workload"}'


def plain_pod(name: str) -> dict[str, Any]:
    resources = {"cpu": "100m", "memory": "64Mi"}
    container: dict[str, Any] = {
        "name": "app",
        "image": "nginx:1.27",
        "resources": {"requests": resources, "limits": resources},
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [container]},
    }


async def test_the_controller_skips_pods_no_clone_set_controls(cluster: Cluster) -> None:
    await cluster.create(clone_set("web", 2))
    await cluster.call(cluster.core.create_namespaced_pod, NS, plain_pod("plain"))

    async def plain_running() -> Any:
        pod = await cluster.call(cluster.core.read_namespaced_pod, "plain", NS)
        return pod if pod.status.phase == "Running" else None

    async def clone_set_running() -> list[Any] | None:
        pods = await cluster.pods("web")
        return pods if running(pods, 2) else None

    await eventually(plain_running)
    pods = await eventually(clone_set_running)
    assert all(p.metadata.owner_references[0].kind == "CloneSet" for p in pods)
    # Created, bound, allocated, running: none of the plain pod's records was decoded.
    skipped = await eventually(lambda: _at_least(cluster, 3))
    assert skipped >= 3


async def _at_least(cluster: Cluster, n: int) -> float | None:
    value = await metric(cluster.controller, SKIPPED)
    return value if value >= n else None
