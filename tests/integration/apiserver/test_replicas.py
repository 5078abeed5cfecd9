"""Two apiserver replicas in front of one log (issue 16): each is stateless before the log, so a
write through replica A is readable from replica B as soon as B has applied it; a read with
`resourceVersion` (NotOlderThan, as kube-apiserver serves it) waits for exactly that, so a
client that moves between replicas still reads its own writes."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest

from tests.factories import node_manifest
from tests.integration.conftest import RoleProcess

BODY = {
    "metadata": {"name": "web"},
    "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]},
}


async def test_a_write_through_one_replica_is_read_from_the_other(
    apiserver: RoleProcess, replica_b: RoleProcess
) -> None:
    a = f"{apiserver.url}/api/v1/namespaces/default/pods"
    b = f"{replica_b.url}/api/v1/namespaces/default/pods"
    async with httpx.AsyncClient(timeout=10) as http:
        created = await http.post(a, json=BODY)
        assert created.status_code == 201, created.text
        rv = created.json()["metadata"]["resourceVersion"]

        # Read-your-writes on B: a get with A's resourceVersion waits until B applied it.
        got = await http.get(f"{b}/web", params={"resourceVersion": rv})
        assert got.status_code == 200, got.text
        assert got.json()["metadata"]["uid"] == created.json()["metadata"]["uid"]
        listed = await http.get(b, params={"resourceVersion": rv})
        assert [p["metadata"]["name"] for p in listed.json()["items"]] == ["web"]

        # A resize through B is seen by A the same way.
        patch = {"metadata": {"labels": {"tier": "web"}}}
        labelled = await http.patch(
            f"{b}/web",
            json=patch,
            headers={"content-type": "application/strategic-merge-patch+json"},
        )
        assert labelled.status_code == 200, labelled.text
        rv2 = labelled.json()["metadata"]["resourceVersion"]
        seen = await http.get(f"{a}/web", params={"resourceVersion": rv2})
        assert seen.json()["metadata"]["labels"] == {"tier": "web"}

        # A version no replica has reached: kube-apiserver's 504 after a bounded wait.
        future = str(int(rv2) + 10**9 * 1024)
        late = await http.get(f"{b}/web", params={"resourceVersion": future})
        assert late.status_code == 504
        assert late.json()["reason"] == "Timeout"
        assert late.json()["message"].startswith(f"Too large resource version: {future}")


async def _leading(proc: RoleProcess) -> bool:
    async with proc.client(timeout=5) as http:
        metrics = (await http.get(f"{proc.url}/metrics")).text
    return "inplace_apiserver_controllers_leading 1.0" in metrics


async def _until(check: Callable[[], Awaitable[bool]], what: str, within: float = 60) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not await check():
        assert asyncio.get_running_loop().time() < deadline, f"never: {what}"
        await asyncio.sleep(0.2)


async def test_one_replica_runs_the_controllers_and_another_takes_them_over(
    apiserver: RoleProcess, replica_b: RoleProcess
) -> None:
    """kube-controller-manager's loops run in one replica (its group's leader partition):
    the other takes them over when it stops, and namespaces are finalized through it."""

    async def one_leads() -> bool:
        return [await _leading(apiserver), await _leading(replica_b)].count(True) == 1

    await _until(one_leads, "exactly one replica running the controllers")
    pair = (apiserver, replica_b)
    leader, survivor = pair if await _leading(apiserver) else pair[::-1]
    assert leader.stop() == 0
    await _until(lambda: _leading(survivor), "the survivor running the controllers")

    # The namespace controller's part works through the survivor: a namespace with a pod
    # in it is emptied and goes.
    async with survivor.client(timeout=10) as http:
        url = f"{survivor.url}/api/v1/namespaces"
        assert (await http.post(url, json={"metadata": {"name": "gone"}})).status_code == 201
        made = await http.post(f"{url}/gone/pods", json=BODY)
        assert made.status_code == 201, made.text
        assert (await http.delete(f"{url}/gone")).status_code == 200

        async def finalized() -> bool:
            return (await http.get(f"{url}/gone")).status_code == 404

        await _until(finalized, "the namespace finalized")


MERGE = {"content-type": "application/merge-patch+json"}


@pytest.mark.parametrize(
    "collection, body",
    [("namespaces/default/pods", BODY), ("nodes", node_manifest("n1"))],
    ids=["pod", "node"],
)
async def test_updates_through_two_replicas_at_once_lose_nothing(
    apiserver: RoleProcess, replica_b: RoleProcess, collection: str, body: dict[str, Any]
) -> None:
    """Each replica decides an update from the object as it holds it, and the log takes it
    only while the object still has that version (etcd's compare-and-swap, in the fold):
    two label patches at the same instant both land, as kube-apiserver applies the later
    one to the version the first made; two replaces from one resourceVersion are one 200
    and one 409 Conflict."""
    name = body["metadata"]["name"]
    a, b = f"{apiserver.url}/api/v1/{collection}", f"{replica_b.url}/api/v1/{collection}"
    async with httpx.AsyncClient(timeout=10) as http:
        created = await http.post(a, json=body)
        assert created.status_code == 201, created.text
        rv = created.json()["metadata"]["resourceVersion"]
        assert (await http.get(f"{b}/{name}", params={"resourceVersion": rv})).status_code == 200

        patched = await asyncio.gather(
            http.patch(f"{a}/{name}", json={"metadata": {"labels": {"a": "1"}}}, headers=MERGE),
            http.patch(f"{b}/{name}", json={"metadata": {"labels": {"b": "2"}}}, headers=MERGE),
        )
        assert [r.status_code for r in patched] == [200, 200], [r.text for r in patched]
        newest = max(int(r.json()["metadata"]["resourceVersion"]) for r in patched)
        got = (await http.get(f"{a}/{name}", params={"resourceVersion": str(newest)})).json()
        assert got["metadata"]["labels"] == {"a": "1", "b": "2"}

        # Two replaces decided from one version: the first on the log wins, the other is
        # told the object changed.
        base = {**got, "metadata": {**got["metadata"], "labels": {}}}
        replaced = await asyncio.gather(
            http.put(f"{a}/{name}", json={**base, "metadata": {**base["metadata"],
                                                               "labels": {"by": "a"}}}),
            http.put(f"{b}/{name}", json={**base, "metadata": {**base["metadata"],
                                                               "labels": {"by": "b"}}}),
        )  # fmt: skip
        codes = sorted(r.status_code for r in replaced)
        assert codes == [200, 409], [r.text for r in replaced]
        lost = next(r for r in replaced if r.status_code == 409).json()
        assert lost["reason"] == "Conflict"
        assert lost["message"].endswith(
            "the object has been modified; please apply your changes to the latest version "
            "and try again"
        )
