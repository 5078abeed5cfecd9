"""LIST pages over HTTP and with kubectl's chunked lists (`--chunk-size`)."""

from __future__ import annotations

import json

from tests.integration.conftest import RoleProcess, kubectl


async def test_pages_with_limit_and_continue(apiserver: RoleProcess) -> None:
    for i in range(5):
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"web-{i}"},
               "spec": {"containers": [{"name": "c", "image": "app"}]}}  # fmt: skip
        await kubectl(apiserver, "create", "-f", "-", stdin=json.dumps(pod))
    chunked = await kubectl(apiserver, "get", "pods", "--chunk-size=2", "-o", "name")
    assert chunked.stdout.split() == [f"pod/web-{i}" for i in range(5)]
    url = f"{apiserver.url}/api/v1/namespaces/default/pods"
    async with apiserver.client() as client:
        names, token, rvs = [], "", set()
        for _ in range(3):
            params = {"limit": "2", **({"continue": token} if token else {})}
            listed = (await client.get(url, params=params)).json()
            names += [p["metadata"]["name"] for p in listed["items"]]
            rvs.add(listed["metadata"]["resourceVersion"])
            token = listed["metadata"].get("continue", "")
            if names == ["web-0", "web-1"]:
                assert listed["metadata"]["remainingItemCount"] == 3
        assert names == [f"web-{i}" for i in range(5)] and token == ""
        assert len(rvs) == 1  # every page names the first page's resourceVersion
        bad = await client.get(url, params={"continue": "not-a-token"})
        assert bad.status_code == 400 and "invalid continue token" in bad.json()["message"]
        first = (await client.get(url, params={"limit": "1"})).json()["metadata"]["continue"]
        both = await client.get(url, params={"continue": first, "resourceVersion": "1"})
        assert both.status_code == 400
        assert both.json()["message"] == (
            "specifying resource version is not allowed when using continue"
        )
