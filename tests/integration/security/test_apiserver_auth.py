"""The apiserver with TLS, authentication and authorization on, as `inplace up` runs it:
kubeconfig clients (official client, kubectl), tokens, certificates, 401/403, NodeRestriction,
the audit log, who-asked in the event log, and the overload limits."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from inplace.core.projection.replay import pod_history
from inplace.core.security.credentials import Credentials
from inplace.core.settings import Settings
from tests import factories
from tests.integration.conftest import RoleProcess, call, inplace, until
from tests.integration.security.conftest import as_user, start_secure_apiserver, token_of

pytestmark = pytest.mark.integration
RESIZE = {
    "spec": {
        "containers": [
            {"name": "app", "resources": {"requests": {"cpu": "200m"}, "limits": {"cpu": "200m"}}}
        ]
    }
}


def _pod_body(name: str, node: str = "") -> dict[str, Any]:
    body = factories.pod("default", name).to_k8s()
    body["metadata"].pop("uid", None)
    if node:
        body["spec"]["nodeName"] = node
    return body


def _audit(tmp_path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (tmp_path / "audit.log").read_text().splitlines()]


async def test_official_client_does_the_tour_with_the_written_kubeconfig(
    secure_apiserver: RoleProcess, credentials: Credentials, settings: Settings
) -> None:
    from kubernetes import client, config

    api_client = await call(
        config.new_client_from_config, config_file=str(credentials.admin_kubeconfig)
    )
    core = client.CoreV1Api(api_client)
    await call(core.create_namespaced_pod, "default", _pod_body("web-0"))
    await call(core.patch_namespaced_pod_resize, "web-0", "default", RESIZE)
    pod = await call(core.read_namespaced_pod, "web-0", "default")
    assert pod.spec.containers[0].resources.requests["cpu"] == "200m"
    review = await call(
        client.AuthenticationV1Api(api_client).create_self_subject_review,
        client.V1SelfSubjectReview(),
    )
    assert review.status.user_info.username == "inplace-admin"
    assert "system:masters" in review.status.user_info.groups
    # Who asked, in the log: the resize's event carries the authenticated user.
    history = await pod_history(settings.kafka_bootstrap, "default", "web-0", settings.topic_prefix)
    asked = {e.record.envelope.type: e.record.envelope.user for e in history}
    assert asked["ResizeProposed"] is not None
    assert asked["ResizeProposed"].username == "inplace-admin"
    assert asked["PodCreated"] is not None
    # ... and `inplace replay history` shows it, in its `user` column.
    shown = await call(inplace, settings, "replay", "history", "default/web-0", "-o", "json")
    assert shown.returncode == 0, shown.stderr
    rows = [json.loads(line) for line in shown.stdout.splitlines()]
    users = {row["event"]: row["user"] for row in rows}
    assert users["ResizeProposed"] == "inplace-admin", rows
    assert users["PodCreated"] == "inplace-admin", rows


async def test_no_credentials_or_a_wrong_token_is_401_and_health_stays_open(
    secure_apiserver: RoleProcess, credentials: Credentials, tmp_path: Path
) -> None:
    async with secure_apiserver.client(base_url=secure_apiserver.url) as anonymous:
        for path in ("/healthz", "/livez", "/readyz", "/version"):
            assert (await anonymous.get(path)).status_code == 200, path
        r = await anonymous.get("/api/v1/namespaces/default/pods")
        assert r.status_code == 401
        assert r.json() == {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "Unauthorized",
            "reason": "Unauthorized",
            "code": 401,
        }
        wrong = await anonymous.get("/api/v1/pods", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        token = token_of(credentials, "system:inplace:workload-controller")
        right = await anonymous.get("/api/v1/pods", headers={"Authorization": f"Bearer {token}"})
        assert right.status_code == 200, right.text
        assert right.json()["kind"] == "PodList"
    audited = _audit(tmp_path)
    refused = [e for e in audited if e["responseStatus"]["code"] == 401]
    assert refused and all(e["user"]["username"] == "system:anonymous" for e in refused)
    served = [e for e in audited if e["requestURI"] == "/api/v1/pods" and e["verb"] == "list"]
    assert any(e["user"]["username"] == "system:inplace:workload-controller" for e in served)


async def test_kubelet_may_write_only_its_own_pods_and_node_and_workload_no_nodes(
    secure_apiserver: RoleProcess, credentials: Credentials, tmp_path: Path
) -> None:
    credentials.issue_user("node-a", "system:node:node-a", ["system:nodes"])
    async with as_user(secure_apiserver, credentials, "admin") as admin:
        r = await admin.post("/api/v1/namespaces/default/pods", json=_pod_body("on-b", "node-b"))
        assert r.status_code == 201, r.text
    async with as_user(secure_apiserver, credentials, "node-a") as kubelet:
        assert (await kubelet.get("/api/v1/namespaces/default/pods/on-b")).status_code == 200
        r = await kubelet.patch(
            "/api/v1/namespaces/default/pods/on-b/status",
            json={"status": {"phase": "Running"}},
            headers={"Content-Type": "application/merge-patch+json"},
        )
        assert r.status_code == 403
        assert r.json()["reason"] == "Forbidden"
        assert r.json()["message"] == (
            'pods "on-b" is forbidden: User "system:node:node-a" cannot patch resource '
            '"pods/status" in API group "" in the namespace "default": '
            'node "node-a" can only update the status of pods bound to it'
        )
        other_node = factories.node("node-b").to_k8s()
        r = await kubelet.post("/api/v1/nodes", json=other_node)
        assert r.status_code == 403, r.text
        own = factories.node("node-a").to_k8s()
        own["metadata"]["labels"] = {"node-restriction.kubernetes.io/pool": "db"}
        async with as_user(secure_apiserver, credentials, "admin") as admin:
            assert (await admin.post("/api/v1/nodes", json=own)).status_code == 201
        merge = {"Content-Type": "application/merge-patch+json"}
        r = await kubelet.patch(
            "/api/v1/nodes/node-a", json={"metadata": {"labels": {"zone": "a"}}}, headers=merge
        )
        assert r.status_code == 200, r.text
        assert r.json()["metadata"]["labels"]["zone"] == "a"
        for patch, refusal in (
            (
                {"metadata": {"labels": {"node-restriction.kubernetes.io/pool": "web"}}},
                "is not allowed to modify labels: node-restriction.kubernetes.io/pool",
            ),
            (
                {"spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}},
                'node "node-a" is not allowed to modify taints',
            ),
        ):
            r = await kubelet.patch("/api/v1/nodes/node-a", json=patch, headers=merge)
            assert r.status_code == 403, r.text
            assert r.json()["message"] == f'nodes "node-a" is forbidden: {refusal}'
        r = await kubelet.patch(
            "/api/v1/nodes/node-b", json={"metadata": {"labels": {"a": "b"}}}, headers=merge
        )
        assert r.status_code == 403 and "is not allowed to modify node" in r.json()["message"]
    async with as_user(secure_apiserver, credentials, "workload") as workload:
        r = await workload.post("/api/v1/nodes", json=factories.node("n9").to_k8s())
        assert r.status_code == 403
        assert r.json()["message"] == (
            'nodes is forbidden: User "system:inplace:workload-controller" cannot create '
            'resource "nodes" in API group "" at the cluster scope'
        )
        assert (await workload.get("/api/v1/namespaces/default/pods")).status_code == 200
    forbids = [
        e for e in _audit(tmp_path) if e["annotations"]["authorization.k8s.io/decision"] == "forbid"
    ]
    assert {(e["user"]["username"], e["objectRef"]["resource"]) for e in forbids} >= {
        ("system:node:node-a", "pods"),
        ("system:inplace:workload-controller", "nodes"),
    }


async def _kubectl(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cache = kubeconfig.parent / "kubectl-cache"
    return await call(
        subprocess.run,
        ["kubectl", "--cache-dir", str(cache), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "KUBECONFIG": str(kubeconfig)},
    )


async def test_kubectl_through_the_kubeconfig(
    secure_apiserver: RoleProcess, credentials: Credentials
) -> None:
    admin = credentials.admin_kubeconfig
    manifest = json.dumps(_pod_body("web-1"))
    created = await call(
        subprocess.run,
        ["kubectl", "--cache-dir", str(admin.parent / "kc"), "create", "-f", "-"],
        input=manifest,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "KUBECONFIG": str(admin)},
    )
    assert created.returncode == 0, created.stderr
    got = await _kubectl(admin, "get", "pods")
    assert got.returncode == 0, got.stderr
    assert "web-1" in got.stdout
    patched = await _kubectl(
        admin, "patch", "pod", "web-1", "--subresource", "resize", "-p", json.dumps(RESIZE)
    )
    assert patched.returncode == 0, patched.stderr
    cpu = await _kubectl(
        admin, "get", "pod", "web-1", "-o", "jsonpath={.spec.containers[0].resources.requests.cpu}"
    )
    assert cpu.stdout == "200m"
    who = await _kubectl(admin, "auth", "whoami", "-o", "json")
    assert json.loads(who.stdout)["status"]["userInfo"]["username"] == "inplace-admin"
    yes = await _kubectl(admin, "auth", "can-i", "create", "nodes")
    assert (yes.returncode, yes.stdout.strip()) == (0, "yes")
    workload = credentials.user_kubeconfig("workload")
    no = await _kubectl(workload, "auth", "can-i", "create", "nodes")
    assert (no.returncode, no.stdout.strip()) == (1, "no")
    resize = await _kubectl(workload, "auth", "can-i", "patch", "pods", "--subresource=resize")
    assert (resize.returncode, resize.stdout.strip()) == (0, "yes")
    refused = await _kubectl(workload, "delete", "node", "node-x")
    assert refused.returncode != 0
    assert 'User "system:inplace:workload-controller" cannot delete resource "nodes"' in (
        refused.stderr
    )


async def test_kubectl_can_i_list_and_as(
    secure_apiserver: RoleProcess, credentials: Credentials, settings: Settings, tmp_path: Path
) -> None:
    admin = credentials.admin_kubeconfig
    workload = credentials.user_kubeconfig("workload")
    everything = await _kubectl(admin, "auth", "can-i", "--list", "-n", "default")
    assert everything.returncode == 0, everything.stderr
    rows = [line.split() for line in everything.stdout.splitlines()]
    assert ["*.*", "[]", "[]", "[*]"] in rows
    assert ["selfsubjectrulesreviews.authorization.k8s.io", "[]", "[]", "[create]"] in rows
    listed = await _kubectl(workload, "auth", "can-i", "--list")
    assert listed.returncode == 0, listed.stderr
    verbs = {r[0]: r[-7:] for r in (line.split() for line in listed.stdout.splitlines())}
    assert verbs["pods/resize"] == ["[get", "list", "watch", "create", "delete", "patch", "update]"]
    assert "nodes" not in verbs
    # An admin checks another identity's rights with --as / --as-group ...
    as_workload = [
        "--as=system:inplace:workload-controller",
        "--as-group=system:inplace:controllers",
    ]
    no = await _kubectl(admin, *as_workload, "auth", "can-i", "create", "nodes")
    assert (no.returncode, no.stdout.strip()) == (1, "no")
    yes = await _kubectl(admin, *as_workload, "auth", "can-i", "patch", "pods/resize")
    assert (yes.returncode, yes.stdout.strip()) == (0, "yes")
    async with as_user(secure_apiserver, credentials, "admin") as http:
        created = await http.post("/api/v1/namespaces/default/pods", json=_pod_body("web-as"))
        assert created.status_code == 201, created.text
    resized = await _kubectl(
        admin,
        *as_workload,
        "patch",
        "pod",
        "web-as",
        "--subresource=resize",
        "-p",
        json.dumps(RESIZE),
    )
    assert resized.returncode == 0, resized.stderr
    history = await pod_history(
        settings.kafka_bootstrap, "default", "web-as", settings.topic_prefix
    )
    asked = {e.record.envelope.type: e.record.envelope.user for e in history}
    assert asked["PodCreated"] is not None and asked["ResizeProposed"] is not None
    assert asked["PodCreated"].username == "inplace-admin"
    assert asked["ResizeProposed"].username == "system:inplace:workload-controller"
    as_bob = await _kubectl(admin, "--as=bob", "get", "pods")
    assert as_bob.returncode == 1
    assert (
        'pods is forbidden: User "bob" cannot list resource "pods" in API group "" in the '
        'namespace "default"'
    ) in as_bob.stderr
    # ... which a user not allowed to impersonate cannot: kubectl's discovery fails first and
    # it prints "Forbidden: unknown", as against kube-apiserver; the body says why.
    refused = await _kubectl(workload, "--as=inplace-admin", "get", "nodes")
    assert (refused.returncode, refused.stderr.splitlines()[-1]) == (
        1,
        "Error from server (Forbidden): unknown",
    )
    async with as_user(secure_apiserver, credentials, "workload") as http:
        answer = await http.get("/api/v1/nodes", headers={"Impersonate-User": "inplace-admin"})
        groups_only = await http.get("/api/v1/nodes", headers={"Impersonate-Group": "x"})
    assert answer.status_code == 403
    assert answer.json()["message"] == (
        'users "inplace-admin" is forbidden: User "system:inplace:workload-controller" cannot '
        'impersonate resource "users" in API group "" at the cluster scope'
    )
    assert groups_only.status_code == 500
    assert "without impersonating a user" in groups_only.json()["message"]
    audited = [e for e in _audit(tmp_path) if "impersonatedUser" in e]
    assert audited, "no impersonated request in the audit log"
    assert {e["user"]["username"] for e in audited} == {"inplace-admin"}
    assert {e["impersonatedUser"]["username"] for e in audited} == {
        "system:inplace:workload-controller",
        "bob",
    }


async def _watch_cap_and_slow_body(admin: httpx.AsyncClient) -> None:
    watch = "/api/v1/namespaces/default/pods?watch=true"
    async with admin.stream("GET", watch) as first, admin.stream("GET", watch) as second:
        assert (first.status_code, second.status_code) == (200, 200)
        third = await admin.get(watch)
        assert third.status_code == 429
        assert third.json()["message"] == "too many open watches from 127.0.0.1 (limit 2)"

    head, tail = b'{"metadata":', b'{"name":"slow"}}'

    async def slow() -> AsyncIterator[bytes]:
        yield head
        await asyncio.sleep(3)  # past the server's 1 s body deadline
        yield tail

    r = await admin.post(
        "/api/v1/namespaces/default/pods",
        content=slow(),
        headers={"Content-Type": "application/json", "Content-Length": str(len(head + tail))},
    )
    assert r.status_code == 408
    assert r.json()["message"] == "the request body did not arrive within 1s"


async def test_a_body_over_3_mib_is_413_and_a_burst_over_the_limit_is_429(
    settings: Settings, credentials: Credentials, tmp_path: Path
) -> None:
    proc = await start_secure_apiserver(
        settings,
        credentials,
        tmp_path / "apiserver.log",
        INPLACE_APISERVER_MAX_MUTATING_REQUESTS_INFLIGHT="2",
        INPLACE_APISERVER_MAX_WATCHES_PER_CLIENT="2",
        INPLACE_APISERVER_REQUEST_BODY_TIMEOUT="1",
    )
    try:
        async with as_user(proc, credentials, "admin") as admin:
            huge = b'{"metadata":{"name":"x"},"pad":"' + b"a" * (4 * 1024 * 1024) + b'"}'
            r = await admin.post(
                "/api/v1/namespaces/default/pods",
                content=huge,
                headers={"Content-Type": "application/json"},
            )
            assert r.status_code == 413
            assert r.json()["message"] == "Request entity too large: limit is 3145728"
            # httpx opens up to 100 connections: the 60 writes are in flight together.
            answers = await asyncio.gather(
                *(
                    admin.post("/api/v1/namespaces/default/pods", json=_pod_body(f"b-{i}"))
                    for i in range(60)
                )
            )
            codes = [a.status_code for a in answers]
            assert set(codes) <= {201, 429}, codes
            assert 429 in codes and 201 in codes
            throttled = next(a for a in answers if a.status_code == 429)
            assert throttled.headers["Retry-After"] == "1"
            assert throttled.json()["reason"] == "TooManyRequests"
            created = codes.count(201)
            listed = await admin.get("/api/v1/namespaces/default/pods")
            assert listed.status_code == 200
            assert len(listed.json()["items"]) == created
            await _watch_cap_and_slow_body(admin)
        assert proc.alive() and await proc.healthz() == 200
        # Refusals are audited too, with the user they refused.
        refused = await until(
            lambda: [
                e
                for e in _audit(tmp_path)
                if e["verb"] == "create" and e["responseStatus"]["code"] in (413, 429)
            ],
            lambda events: len(events) == 1 + codes.count(429),
            "the 413 and the 429s in the audit log",
        )
        assert [e["responseStatus"]["code"] for e in refused].count(413) == 1
        assert {e["user"]["username"] for e in refused} == {"inplace-admin"}
        assert {e["objectRef"]["resource"] for e in refused} == {"pods"}
    finally:
        proc.stop()
