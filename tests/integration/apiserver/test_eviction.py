"""The Eviction subresource: `kubectl drain` cordons a node and evicts its pods (protobuf, as
kubectl's typed client sends), and the HTTP answers of an eviction and of a DELETE with
preconditions are kube-apiserver's."""

from __future__ import annotations

import json
from typing import Any

from tests.factories import node_manifest
from tests.integration.conftest import RoleProcess, kubectl


def pod_on(name: str, node: str = "n1") -> dict[str, Any]:
    container = {"name": "c", "image": "app"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": node, "containers": [container]}}  # fmt: skip


def eviction(name: str, **options: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": "policy/v1", "kind": "Eviction",
                            "metadata": {"name": name, "namespace": "default"}}  # fmt: skip
    if options:
        body["deleteOptions"] = options
    return body


async def test_kubectl_drain_evicts_the_nodes_pods(apiserver: RoleProcess) -> None:
    await kubectl(apiserver, "create", "-f", "-", stdin=json.dumps(node_manifest("n1")))
    for name, node in (("a", "n1"), ("b", "n1"), ("elsewhere", "n2")):
        await kubectl(apiserver, "create", "-f", "-", stdin=json.dumps(pod_on(name, node)))
    # Pods no controller manages are evicted only with --force, as kubectl says.
    refused = await kubectl(apiserver, "drain", "n1", check=False)
    assert refused.returncode != 0
    assert "cannot delete Pods that declare no controller (use --force to override)" in (
        refused.stderr
    )
    # The refused drain cordoned the node already (kubectl cordons first); a server dry run
    # evicts nothing.
    rehearsed = await kubectl(apiserver, "drain", "n1", "--force", "--dry-run=server")
    assert "evicting pod default/a (server dry run)" in rehearsed.stdout
    assert rehearsed.stdout.strip().endswith("node/n1 drained (server dry run)")
    assert (await kubectl(apiserver, "get", "pods", "-o", "name")).stdout.split() == [
        "pod/a", "pod/b", "pod/elsewhere",
    ]  # fmt: skip
    drained = await kubectl(apiserver, "drain", "n1", "--force", "--timeout", "60s")
    assert "evicting pod default/a" in drained.stderr + drained.stdout
    assert "pod/a evicted" in drained.stdout and "pod/b evicted" in drained.stdout
    assert drained.stdout.strip().endswith("node/n1 drained")
    left = await kubectl(apiserver, "get", "pods", "-o", "name")
    assert left.stdout.split() == ["pod/elsewhere"]
    node = json.loads((await kubectl(apiserver, "get", "node", "n1", "-o", "json")).stdout)
    assert node["spec"]["unschedulable"] is True


async def test_eviction_answers_as_kube_apiserver(apiserver: RoleProcess) -> None:
    await kubectl(apiserver, "create", "-f", "-", stdin=json.dumps(pod_on("web")))
    base = f"{apiserver.url}/api/v1/namespaces/default/pods"
    async with apiserver.client() as client:
        missing = await client.post(f"{base}/nope/eviction", json=eviction("nope"))
        assert (missing.status_code, missing.json()["reason"]) == (404, "NotFound")
        mismatched = await client.post(f"{base}/web/eviction", json=eviction("other"))
        assert mismatched.status_code == 400
        assert mismatched.json()["message"] == "name in URL does not match name in Eviction object"
        wrong_uid = eviction("web", preconditions={"uid": "not-its-uid"})
        stale = await client.post(f"{base}/web/eviction", json=wrong_uid)
        assert stale.status_code == 409
        assert "Precondition failed: UID in precondition: not-its-uid" in stale.json()["message"]
        dry = await client.post(f"{base}/web/eviction", json=eviction("web", dryRun=["All"]))
        assert dry.status_code == 201
        assert (await client.get(f"{base}/web")).status_code == 200  # still there
        uid = (await client.get(f"{base}/web")).json()["metadata"]["uid"]
        done = await client.post(f"{base}/web/eviction",
                                 json=eviction("web", preconditions={"uid": uid}))  # fmt: skip
        assert done.status_code == 201
        assert done.json() == {"kind": "Status", "apiVersion": "v1", "metadata": {},
                               "status": "Success", "code": 201}  # fmt: skip
        assert (await client.get(f"{base}/web")).status_code == 404


async def test_a_delete_honours_its_preconditions(apiserver: RoleProcess) -> None:
    await kubectl(apiserver, "create", "-f", "-", stdin=json.dumps(pod_on("web")))
    url = f"{apiserver.url}/api/v1/namespaces/default/pods/web"
    async with apiserver.client() as client:
        held = (await client.get(url)).json()["metadata"]
        stale = await client.request("DELETE", url, content=json.dumps(
            {"kind": "DeleteOptions", "apiVersion": "v1",
             "preconditions": {"resourceVersion": "1"}}))  # fmt: skip
        assert stale.status_code == 409
        assert stale.json()["message"] == (
            'Operation cannot be fulfilled on pods "web": Precondition failed: ResourceVersion '
            f"in precondition: 1, ResourceVersion in object meta: {held['resourceVersion']}"
        )
        options = {
            "preconditions": {"uid": held["uid"], "resourceVersion": held["resourceVersion"]}
        }
        deleted = await client.request("DELETE", url, content=json.dumps(options))
        assert deleted.status_code == 200
        assert (await client.get(url)).status_code == 404
