"""The CloneSet API through the official client: discovery, CRUD, 422 on bad input, 409 on a
stale resourceVersion, the status and scale subresources, list and watch."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from tests.integration.conftest import RoleProcess
from tests.integration.workload.conftest import GROUP, NS, PLURAL, VERSION, clone_set


def api(apiserver: RoleProcess) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(client.ApiClient(client.Configuration(host=apiserver.url)))


async def call(fn: Any, *args: Any, **kwargs: Any) -> Any:
    return await asyncio.to_thread(fn, *args, **kwargs)


async def test_discovery(apiserver: RoleProcess) -> None:
    async with httpx.AsyncClient(base_url=apiserver.url) as http:
        groups = (await http.get("/apis")).json()
        group = (await http.get(f"/apis/{GROUP}")).json()
        resources = (await http.get(f"/apis/{GROUP}/{VERSION}")).json()
    # Ours, the self-review groups `kubectl auth can-i` / `whoami` need, then the metrics
    # API (`kubectl top`), the node Leases (`kubectl describe node`), disruption budgets and
    # the (empty) CRD list kubectl's validation asks.
    assert [g["name"] for g in groups["groups"]] == [
        GROUP,
        "authorization.k8s.io",
        "authentication.k8s.io",
        "metrics.k8s.io",
        "coordination.k8s.io",
        "policy",
        "apiextensions.k8s.io",
    ]
    assert group["preferredVersion"]["groupVersion"] == f"{GROUP}/{VERSION}"
    names = {r["name"] for r in resources["resources"]}
    assert names == {"clonesets", "clonesets/status", "clonesets/scale"}


async def test_crud_status_scale_and_watch(apiserver: RoleProcess) -> None:
    custom = api(apiserver)
    created = await call(
        custom.create_namespaced_custom_object, GROUP, VERSION, NS, PLURAL, clone_set("web", 2)
    )
    assert created["metadata"]["generation"] == 1 and created["metadata"]["uid"]

    scale = await call(
        custom.patch_namespaced_custom_object_scale,
        GROUP,
        VERSION,
        NS,
        PLURAL,
        "web",
        {"spec": {"replicas": 5}},
    )
    assert scale["kind"] == "Scale" and scale["spec"]["replicas"] == 5
    assert scale["status"]["selector"] == "app=web"

    current = await call(custom.get_namespaced_custom_object, GROUP, VERSION, NS, PLURAL, "web")
    assert current["spec"]["replicas"] == 5 and current["metadata"]["generation"] == 2

    current["status"] = {"replicas": 3, "observedGeneration": 2}
    status = await call(
        custom.replace_namespaced_custom_object_status, GROUP, VERSION, NS, PLURAL, "web", current
    )
    assert status["status"]["replicas"] == 3 and status["metadata"]["generation"] == 2

    with pytest.raises(ApiException) as stale:
        await call(
            custom.replace_namespaced_custom_object, GROUP, VERSION, NS, PLURAL, "web", current
        )
    assert stale.value.status == 409

    listed = await call(custom.list_namespaced_custom_object, GROUP, VERSION, NS, PLURAL)
    assert [o["metadata"]["name"] for o in listed["items"]] == ["web"]
    stream = watch.Watch().stream(
        custom.list_namespaced_custom_object,
        GROUP,
        VERSION,
        NS,
        PLURAL,
        resource_version="0",
        timeout_seconds=2,
    )
    seen = await call(lambda: [(e["type"], e["object"]["metadata"]["name"]) for e in stream])
    assert ("ADDED", "web") in seen

    await call(custom.delete_namespaced_custom_object, GROUP, VERSION, NS, PLURAL, "web")
    with pytest.raises(ApiException) as gone:
        await call(custom.get_namespaced_custom_object, GROUP, VERSION, NS, PLURAL, "web")
    assert gone.value.status == 404


@pytest.mark.parametrize(
    ("strategy", "field"),
    [
        ({"maxConcurrentResizes": 0}, "spec.updateStrategy.maxConcurrentResizes"),
        ({"partition": -1}, "spec.updateStrategy.partition"),
        ({"onInfeasible": "Panic"}, "spec.updateStrategy.onInfeasible"),
    ],
)
async def test_invalid_clone_set_is_422(
    apiserver: RoleProcess, strategy: dict[str, Any], field: str
) -> None:
    with pytest.raises(ApiException) as exc:
        await call(
            api(apiserver).create_namespaced_custom_object,
            GROUP,
            VERSION,
            NS,
            PLURAL,
            clone_set("bad", 1, **strategy),
        )
    body = json.loads(exc.value.body)
    assert exc.value.status == 422 and body["reason"] == "Invalid"
    assert field in body["message"]
