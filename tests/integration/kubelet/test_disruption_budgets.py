"""PodDisruptionBudgets (policy/v1) as kubectl and `kubectl drain` use them: created and listed
with kubectl's columns, counted by the disruption controller as the kubelet makes pods Ready,
and honoured by the eviction API (429 once the budget allows no more, `kubectl drain` waiting
on it), against the apiserver and kubelet as real processes."""

from __future__ import annotations

import asyncio
import json
from functools import partial
from typing import Any

from tests.integration.conftest import RoleProcess, kubectl, until

PDBS = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"


def web_pod(name: str) -> dict[str, Any]:
    rl = {"cpu": "100m", "memory": "64Mi"}
    container = {"name": "app", "image": "nginx", "resources": {"requests": rl, "limits": rl}}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": "web"}},
            "spec": {"nodeName": "node-0", "containers": [container]}}  # fmt: skip


def eviction(name: str) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "Eviction",
            "metadata": {"name": name, "namespace": "default"}}  # fmt: skip


async def status_of(apiserver: RoleProcess, name: str) -> dict[str, Any]:
    async with apiserver.client() as client:
        found: dict[str, Any] = (await client.get(f"{apiserver.url}{PDBS}/{name}")).json()
        return found.get("status", {})


async def test_budget_counts_ready_pods_and_stops_evictions(
    apiserver: RoleProcess, kubelet_process: RoleProcess
) -> None:
    for name in ("web-0", "web-1", "web-2"):
        await kubectl(apiserver, "create", "-f", "-", stdin=json.dumps(web_pod(name)))
    created = await kubectl(
        apiserver, "create", "pdb", "web", "--selector=app=web", "--min-available=2"
    )
    assert created.stdout.strip() == "poddisruptionbudget.policy/web created"
    # The controller counts the three pods once the kubelet has them Ready.
    status = await until(
        partial(status_of, apiserver, "web"),
        lambda s: s.get("currentHealthy") == 3,
        "three healthy pods counted",
    )
    assert (status["expectedPods"], status["desiredHealthy"], status["disruptionsAllowed"]) == (
        3, 2, 1,
    )  # fmt: skip
    condition = status["conditions"][0]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "DisruptionAllowed", "True", "SufficientPods",
    )  # fmt: skip
    listed = await kubectl(apiserver, "get", "pdb")
    assert listed.stdout.split("\n")[0].split() == [
        "NAME", "MIN", "AVAILABLE", "MAX", "UNAVAILABLE", "ALLOWED", "DISRUPTIONS", "AGE",
    ]  # fmt: skip
    assert listed.stdout.split("\n")[1].split()[:4] == ["web", "2", "N/A", "1"]

    base = f"{apiserver.url}/api/v1/namespaces/default/pods"
    async with apiserver.client() as client:
        first = await client.post(f"{base}/web-0/eviction", json=eviction("web-0"))
        assert first.status_code == 201, first.text
        # The disruption is spent at once: the next eviction is refused before the controller
        # has even seen web-0 go.
        second = await client.post(f"{base}/web-1/eviction", json=eviction("web-1"))
        assert second.status_code == 429, second.text
        refused = second.json()
        assert refused["reason"] == "TooManyRequests"
        assert refused["message"] == (
            "Cannot evict pod as it would violate the pod's disruption budget."
        )
        # The count it names is the controller's, which has not seen web-0 go yet (as
        # kube-apiserver words it: the eviction spent the disruption, not the count).
        assert refused["details"]["causes"] == [
            {
                "reason": "DisruptionBudget",
                "message": "The disruption budget web needs 2 healthy pods and has 3 currently",
            }
        ]
        assert (await client.get(f"{base}/web-1")).status_code == 200
    spent = await status_of(apiserver, "web")
    assert spent["disruptionsAllowed"] == 0 and "web-0" in spent.get("disruptedPods", {})
    # The controller sees web-0 gone, and the budget stays spent with two healthy pods.
    settled = await until(
        partial(status_of, apiserver, "web"),
        lambda s: s.get("expectedPods") == 2 and not s.get("disruptedPods"),
        "web-0 gone from the budget",
    )
    assert (settled["currentHealthy"], settled["disruptionsAllowed"]) == (2, 0)

    # kubectl drain evicts nothing the budget protects: it retries until its timeout.
    drained = await kubectl(apiserver, "drain", "node-0", "--force", "--timeout", "3s", check=False)
    assert drained.returncode != 0
    assert "Cannot evict pod as it would violate the pod's disruption budget." in (drained.stderr)
    left = await kubectl(apiserver, "get", "pods", "-o", "name")
    assert left.stdout.split() == ["pod/web-1", "pod/web-2"]

    # A looser budget lets drain finish.
    await kubectl(
        apiserver, "patch", "pdb", "web", "--type=merge", "-p", '{"spec":{"minAvailable":0}}'
    )
    await until(
        partial(status_of, apiserver, "web"),
        lambda s: s.get("disruptionsAllowed") == 2 and s.get("observedGeneration") == 2,
        "the new spec counted",
    )
    drained = await kubectl(apiserver, "drain", "node-0", "--force", "--timeout", "30s")
    assert drained.stdout.strip().endswith("node/node-0 drained")


async def test_budget_api_answers_as_kube_apiserver(apiserver: RoleProcess) -> None:
    """Validation, not-found and conflicts name the resource as `poddisruptionbudgets.policy`;
    the list is a PodDisruptionBudgetList; discovery lists the group."""
    both = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "both"},
            "spec": {"minAvailable": 1, "maxUnavailable": 1, "selector": {}}}  # fmt: skip
    async with apiserver.client() as client:
        url = f"{apiserver.url}{PDBS}"
        invalid = await client.post(url, json=both)
        assert invalid.status_code == 422
        body = invalid.json()
        assert body["message"].startswith('PodDisruptionBudget.policy "both" is invalid: spec: ')
        assert body["message"].endswith("minAvailable and maxUnavailable cannot be both set")
        assert body["details"]["group"] == "policy"
        missing = await client.get(f"{url}/nope")
        assert missing.status_code == 404
        assert missing.json()["message"] == 'poddisruptionbudgets.policy "nope" not found'
        good = {**both, "metadata": {"name": "good"}, "spec": {"maxUnavailable": "50%"}}
        assert (await client.post(url, json=good)).status_code == 201
        both_now = await client.patch(
            f"{url}/good",
            json={"spec": {"minAvailable": 1}},
            headers={"content-type": "application/merge-patch+json"},
        )
        assert both_now.status_code == 422  # an update is validated too
        assert both_now.json()["message"].endswith(
            "minAvailable and maxUnavailable cannot be both set"
        )
        again = await client.post(url, json=good)
        assert again.status_code == 409
        assert again.json()["message"] == 'poddisruptionbudgets.policy "good" already exists'
        listed = (await client.get(f"{apiserver.url}/apis/policy/v1/poddisruptionbudgets")).json()
        assert (listed["kind"], listed["apiVersion"]) == ("PodDisruptionBudgetList", "policy/v1")
        assert [item["metadata"]["name"] for item in listed["items"]] == ["good"]
        assert listed["items"][0]["metadata"]["generation"] == 1

    # The controller tells on the budget that its selector picks nothing (no pods here).
    async def described() -> str:
        return (await kubectl(apiserver, "describe", "pdb", "good")).stdout

    told = await until(described, lambda out: "NoPods" in out, "NoPods told")
    assert "No matching pods found" in told.split("Events:")[-1]
    resources = await kubectl(apiserver, "api-resources", "--api-group=policy")
    assert "poddisruptionbudgets   pdb          policy/v1" in resources.stdout
    explained = await kubectl(apiserver, "explain", "pdb.spec.maxUnavailable")
    assert "maxUnavailable" in explained.stdout
    deleted = await kubectl(apiserver, "delete", "pdb", "good")
    assert deleted.stdout.strip() == 'poddisruptionbudget.policy "good" deleted'


async def test_two_replicas_never_spend_one_disruption_twice(
    apiserver: RoleProcess, kubelet_process: RoleProcess, replica_b: RoleProcess
) -> None:
    """Two evictions of one budget's last disruption, one through each apiserver replica at
    the same instant: each decides from the budget it reads, and the status each writes holds
    only if nothing was written to the budget in between (its precondition), so one pod goes
    and the other eviction is refused, as kube-apiserver's conflict on the budget refuses it."""
    for name in ("web-0", "web-1", "web-2"):
        await kubectl(apiserver, "create", "-f", "-", stdin=json.dumps(web_pod(name)))
    await kubectl(apiserver, "create", "pdb", "web", "--selector=app=web", "--min-available=2")
    for replica in (apiserver, replica_b):
        await until(
            partial(status_of, replica, "web"),
            lambda s: s.get("currentHealthy") == 3 and s.get("disruptionsAllowed") == 1,
            "one disruption allowed, seen by both replicas",
        )
    base = "api/v1/namespaces/default/pods"
    async with apiserver.client() as a, replica_b.client() as b:
        answers = await asyncio.gather(
            a.post(f"{apiserver.url}/{base}/web-0/eviction", json=eviction("web-0")),
            b.post(f"{replica_b.url}/{base}/web-1/eviction", json=eviction("web-1")),
        )
    assert sorted(r.status_code for r in answers) == [201, 429], [r.text for r in answers]
    refused = next(r for r in answers if r.status_code == 429).json()
    assert refused["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
    left = (await kubectl(apiserver, "get", "pods", "-o", "name")).stdout.split()
    assert len(left) == 2 and "pod/web-2" in left
    spent = await status_of(replica_b, "web")
    assert spent["disruptionsAllowed"] == 0
