"""kubectl (the real binary) against the apiserver with validation on: create, apply (client-
and server-side field validation), explain, edit-free updates, and its errors."""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path

import httpx
import yaml

from inplace.core.bus.producer import EventProducer
from inplace.core.settings import Settings
from schemas import events as ev
from schemas.envelope import Envelope
from schemas.events import K8S_EVENTS, NODES, PODS, POLICY, WORKLOADS
from tests.factories import node_manifest
from tests.integration.conftest import RoleProcess, kubectl, read_log, until
from tests.integration.workload.conftest import clone_set

MANIFESTS = Path(__file__).parent / "manifests"


async def test_apply_and_create_with_validation_on(apiserver: RoleProcess) -> None:
    done = await kubectl(apiserver, "apply", "-f", str(MANIFESTS / "02-helm-web.yaml"))
    assert done.stdout.strip() == "pod/release-web created"
    done = await kubectl(apiserver, "create", "-f", str(MANIFESTS / "12-lifecycle-hooks.yaml"))
    assert done.stdout.strip() == "pod/lifecycle-demo created"
    pod = json.loads((await kubectl(apiserver, "get", "pod", "release-web", "-o", "json")).stdout)
    applied = json.loads(
        pod["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
    )
    assert applied["metadata"]["name"] == "release-web"
    assert pod["spec"]["containers"][0]["livenessProbe"]["httpGet"]["port"] == "http"


async def test_client_side_apply_changes_labels(apiserver: RoleProcess) -> None:
    manifest = yaml.safe_load((MANIFESTS / "01-nginx-docs.yaml").read_text())
    await kubectl(apiserver, "apply", "-f", "-", stdin=yaml.safe_dump(manifest))
    manifest["metadata"]["labels"] = {"env": "prod", "team": "web"}  # none before
    manifest["metadata"]["annotations"] = {"owner": "alice"}
    done = await kubectl(apiserver, "apply", "-f", "-", stdin=yaml.safe_dump(manifest))
    assert done.stdout.strip() == "pod/nginx configured"
    pod = json.loads((await kubectl(apiserver, "get", "pod", "nginx", "-o", "json")).stdout)
    assert pod["metadata"]["labels"] == {"env": "prod", "team": "web"}
    assert pod["metadata"]["annotations"]["owner"] == "alice"
    last = pod["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
    assert json.loads(last)["metadata"]["labels"] == {"env": "prod", "team": "web"}
    again = await kubectl(apiserver, "apply", "-f", "-", stdin=yaml.safe_dump(manifest))
    assert again.stdout.strip() == "pod/nginx unchanged"


async def test_unknown_fields_under_kubectl_validation_modes(apiserver: RoleProcess) -> None:
    manifest = yaml.safe_load((MANIFESTS / "01-nginx-docs.yaml").read_text())
    manifest["spec"]["containers"][0]["imagePullPolicyy"] = "Always"  # a typo
    text = yaml.safe_dump(manifest)
    strict = await kubectl(apiserver, "apply", "-f", "-", stdin=text, check=False)
    assert strict.returncode != 0
    assert 'strict decoding error: unknown field "spec.containers[0].imagePullPolicyy"' in (
        strict.stderr
    )
    warned = await kubectl(apiserver, "apply", "--validate=warn", "-f", "-", stdin=text)
    assert 'Warning: unknown field "spec.containers[0].imagePullPolicyy"' in warned.stderr
    assert warned.stdout.strip() == "pod/nginx created"


async def test_explain_reads_kubernetes_docs(apiserver: RoleProcess) -> None:
    done = await kubectl(apiserver, "explain", "pods.spec.containers.resizePolicy")
    assert "KIND:       Pod" in done.stdout
    assert "restartPolicy" in done.stdout and "resourceName" in done.stdout
    done = await kubectl(apiserver, "explain", "clonesets.spec.updateStrategy")
    assert "KIND:       CloneSet" in done.stdout and "maxConcurrentResizes" in done.stdout
    done = await kubectl(apiserver, "explain", "pods.spec.nope", check=False)
    assert done.returncode != 0 and 'field "nope" does not exist' in done.stderr


async def test_apply_of_kinds_not_held_says_so(apiserver: RoleProcess) -> None:
    """kubectl validates a kind /openapi/v3 lacks against /openapi/v2 in protobuf (it failed
    with "proto: cannot parse invalid wire-format data" on the JSON form) after asking whether
    it is a custom resource (the CRD list, empty here): the kinds this server has are created,
    the others refused as on any cluster that lacks them; Services are listed (none) and not
    written, and `kubectl cluster-info`, which lists them, says where the apiserver is."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "mixed-web"},
           "spec": {"containers": [{"name": "app", "image": "nginx"}]}}  # fmt: skip
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "mixed-web"},
               "spec": {"ports": [{"port": 80}]}}  # fmt: skip
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                  "spec": {"selector": {"matchLabels": {"app": "web"}},
                           "template": {"metadata": {"labels": {"app": "web"}},
                                        "spec": pod["spec"]}}}  # fmt: skip
    manifest = yaml.safe_dump_all([pod, service, deployment])
    done = await kubectl(apiserver, "apply", "-f", "-", stdin=manifest, check=False)
    assert done.returncode == 1
    assert "proto:" not in done.stderr
    assert "this cluster runs no Service network" in done.stderr  # a 405 on its create
    assert 'no matches for kind "Deployment" in version "apps/v1"' in done.stderr
    assert done.stdout.strip() == "pod/mixed-web created"
    got = await kubectl(apiserver, "get", "pod", "mixed-web", "-o", "jsonpath={.metadata.name}")
    assert got.stdout == "mixed-web"
    crds = await kubectl(apiserver, "get", "crds")  # the list kubectl asked: none here
    assert crds.stderr.startswith("No resources found")
    info = await kubectl(apiserver, "cluster-info")  # lists kube-system's Services: none
    assert f"Kubernetes control plane is running at {apiserver.url}" in info.stdout
    async with httpx.AsyncClient(base_url=apiserver.url, timeout=10) as http:
        answer = await http.get("/openapi/v2", headers={"Accept": "application/xml"})
        crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        one = await http.get(f"{crds}/widgets.example.com")
        written = await http.post(crds, json={"kind": "CustomResourceDefinition"})
        watched = await http.get("/api/v1/namespaces/default/services", params={"watch": "1"})
    assert answer.status_code == 406
    assert answer.json()["reason"] == "NotAcceptable"
    assert one.status_code == 404
    assert one.json()["message"] == (
        'customresourcedefinitions.apiextensions.k8s.io "widgets.example.com" not found'
    )
    assert (written.status_code, written.json()["reason"]) == (405, "MethodNotAllowed")
    assert watched.status_code == 405


async def test_apply_a_cloneset(apiserver: RoleProcess) -> None:
    cloneset = clone_set("web", 2, "100m")
    done = await kubectl(apiserver, "apply", "-f", "-", stdin=json.dumps(cloneset))
    assert done.stdout.strip() == "cloneset.apps.inplace.dev/web created"
    got = json.loads((await kubectl(apiserver, "get", "clonesets", "web", "-o", "json")).stdout)
    assert got["spec"]["replicas"] == 2
    # Applied again with a bigger template (a vertical scale): kubectl's patch merges the
    # containers by name, with $setElementOrder, as for a Pod (it was a 400 once).
    resized = clone_set("web", 2, "200m")
    done = await kubectl(apiserver, "apply", "-f", "-", stdin=json.dumps(resized))
    assert done.stdout.strip() == "cloneset.apps.inplace.dev/web configured"
    got = json.loads((await kubectl(apiserver, "get", "clonesets", "web", "-o", "json")).stdout)
    [app] = got["spec"]["template"]["spec"]["containers"]
    assert app["resources"]["requests"]["cpu"] == "200m" and app["image"] == "nginx:1.27"
    # Server-side: another CloneSet applied, then scaled by a second apply of its manager.
    cloneset["metadata"]["name"] = "api"
    done = await kubectl(apiserver, "apply", "--server-side", "-f", "-", stdin=json.dumps(cloneset))
    assert done.stdout.strip() == "cloneset.apps.inplace.dev/api serverside-applied"
    cloneset["spec"]["replicas"] = 5
    await kubectl(apiserver, "apply", "--server-side", "-f", "-", stdin=json.dumps(cloneset))
    got = json.loads(
        (
            await kubectl(
                apiserver, "get", "clonesets", "api", "-o", "json", "--show-managed-fields"
            )
        ).stdout
    )
    assert got["spec"]["replicas"] == 5
    assert got["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:replicas"] == {}


async def test_server_dry_run_answers_without_writing(
    apiserver: RoleProcess, settings: Settings
) -> None:
    """kubectl create / apply --dry-run=server and kubectl diff: checked and answered with
    the object the write would make, nothing on the log."""
    manifest = str(MANIFESTS / "01-nginx-docs.yaml")
    done = await kubectl(apiserver, "create", "--dry-run=server", "-f", manifest, "-o", "json")
    would_be = json.loads(done.stdout)
    assert would_be["metadata"]["uid"] and not would_be["metadata"].get("resourceVersion")
    assert would_be["spec"]["containers"][0]["terminationMessagePath"] == "/dev/termination-log"
    missing = await kubectl(apiserver, "get", "pod", "nginx", check=False)
    assert missing.returncode != 0 and "NotFound" in missing.stderr
    await kubectl(apiserver, "apply", "-f", manifest)
    before = [e.type for e in await read_log(settings, PODS)]
    pod = yaml.safe_load((MANIFESTS / "01-nginx-docs.yaml").read_text())
    pod["metadata"]["labels"] = {"tier": "web"}
    changed = yaml.safe_dump(pod)
    diff = await kubectl(apiserver, "diff", "-f", "-", stdin=changed, check=False)
    assert diff.returncode == 1, diff.stderr  # 1: there are differences
    assert "+    tier: web" in diff.stdout
    done = await kubectl(apiserver, "apply", "--dry-run=server", "-f", "-", stdin=changed)
    assert done.stdout.strip() == "pod/nginx configured (server dry run)"
    resized = await kubectl(
        apiserver, "patch", "pod", "nginx", "--subresource", "resize", "--dry-run=server",
        "-o", "json", "-p",
        '{"spec":{"containers":[{"name":"nginx","resources":{"requests":{"cpu":"150m"}}}]}}',
    )  # fmt: skip
    assert json.loads(resized.stdout)["spec"]["containers"][0]["resources"]["requests"] == {
        "cpu": "150m",
        "memory": "64Mi",
    }
    deleted = await kubectl(apiserver, "delete", "pod", "nginx", "--dry-run=server")
    assert deleted.stdout.strip() == 'pod "nginx" deleted (server dry run)'
    assert [e.type for e in await read_log(settings, PODS)] == before  # nothing written
    stored = json.loads((await kubectl(apiserver, "get", "pod", "nginx", "-o", "json")).stdout)
    assert "labels" not in stored["metadata"]
    assert stored["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "100m"
    team = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-x"}}
    done = await kubectl(apiserver, "apply", "--dry-run=server", "-f", "-", stdin=json.dumps(team))
    assert done.stdout.strip() == "namespace/team-x created (server dry run)"
    assert (await kubectl(apiserver, "get", "ns", "team-x", check=False)).returncode != 0
    async with apiserver.client() as client:
        r = await client.delete(f"{apiserver.url}/api/v1/namespaces/default/pods/nginx?dryRun=Al")
    assert r.status_code == 400 and r.json()["message"].startswith("Invalid dry run value")


def _rows(text: str) -> list[list[str]]:
    """kubectl's table output split on runs of 2+ spaces (cells may hold one space)."""
    return [re.split(r"\s{2,}", line.strip()) for line in text.strip().splitlines()]


async def test_get_prints_kube_apiserver_columns(apiserver: RoleProcess) -> None:
    await kubectl(apiserver, "apply", "-f", str(MANIFESTS / "11-resize-policy-docs.yaml"))
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "labels": {"node-role.kubernetes.io/worker": ""}},
        "status": {
            "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
            "addresses": [{"type": "InternalIP", "address": "10.0.0.7"}],
            "nodeInfo": {"kubeletVersion": "v1.35.0", "osImage": "Debian 12"},
        },
    }
    await kubectl(apiserver, "create", "-f", "-", stdin=json.dumps(node))
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "compute"},
        "spec": {"hard": {"requests.cpu": "2", "limits.memory": "4Gi"}},
    }
    await kubectl(apiserver, "create", "-f", "-", stdin=json.dumps(quota))

    pods = _rows((await kubectl(apiserver, "get", "pods")).stdout)
    assert pods[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert pods[1][:4] == ["resize-demo", "0/1", "Pending", "0"]
    wide = _rows((await kubectl(apiserver, "get", "pods", "-o", "wide")).stdout)
    assert wide[0] == [
        "NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED NODE",
        "READINESS GATES",
    ]  # fmt: skip
    assert wide[1][5:] == ["<none>", "<none>", "<none>", "<none>"]
    one = _rows((await kubectl(apiserver, "get", "pod", "resize-demo")).stdout)
    assert one[1][0] == "resize-demo"

    nodes = _rows((await kubectl(apiserver, "get", "nodes", "-o", "wide")).stdout)
    assert nodes[0][:6] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION", "INTERNAL-IP"]
    assert nodes[1][:3] == ["n1", "Ready", "worker"]
    assert nodes[1][4:7] == ["v1.35.0", "10.0.0.7", "<none>"]

    quotas = _rows((await kubectl(apiserver, "get", "resourcequotas")).stdout)
    assert quotas[0] == ["NAME", "AGE", "REQUEST", "LIMIT"]
    assert quotas[1][0] == "compute"
    # kubectl's typed generators send protobuf (Kubernetes' own messages, read as JSON).
    await kubectl(apiserver, "create", "quota", "q", "--hard=pods=1,cpu=2")
    quota = json.loads((await kubectl(apiserver, "get", "quota", "q", "-o", "json")).stdout)
    assert quota["spec"]["hard"] == {"pods": "1", "cpu": "2"}
    await kubectl(apiserver, "create", "namespace", "team-a")
    namespaces = _rows((await kubectl(apiserver, "get", "namespaces")).stdout)
    assert namespaces[0] == ["NAME", "STATUS", "AGE"]
    assert ["default", "Active"] == namespaces[1][:2]


async def test_kubectl_run_then_resize(apiserver: RoleProcess) -> None:
    """The pod `kubectl run` makes (its overrides merged), resized."""
    resources = {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "500m"}}
    overrides = {"spec": {"containers": [{"name": "web", "resources": resources}]}}
    await kubectl(
        apiserver, "run", "web", "--image=nginx", "--labels=app=web", "--port=80",
        f"--overrides={json.dumps(overrides)}", "--override-type=strategic", "--", "nginx",
        "-g", "daemon off;",
    )  # fmt: skip
    pod = json.loads((await kubectl(apiserver, "get", "pod", "web", "-o", "json")).stdout)
    assert pod["metadata"]["labels"] == {"app": "web"}
    (container,) = pod["spec"]["containers"]
    assert (container["name"], container["image"]) == ("web", "nginx")
    assert container["args"] == ["nginx", "-g", "daemon off;"]
    assert container["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert container["resources"] == resources
    # Defaulted as a JSON create is (an untagged image is pulled Always).
    assert (container["imagePullPolicy"], pod["spec"]["schedulerName"]) == (
        "Always",
        "default-scheduler",
    )
    resize = {"spec": {"containers": [{"name": "web", "resources": {"requests": {"cpu": "300m"}}}]}}
    await kubectl(
        apiserver, "patch", "pod", "web", "--subresource=resize", "-p", json.dumps(resize)
    )
    cpu = await kubectl(
        apiserver,
        "get",
        "pod",
        "web",
        "-o",
        "jsonpath={.spec.containers[0].resources.requests.cpu}",
    )
    assert cpu.stdout == "300m"


async def test_namespaces_nodes_and_quotas_are_applied_again_with_validation_on(
    apiserver: RoleProcess, settings: Settings
) -> None:
    """kubectl apply of a changed manifest is a strategic merge PATCH, validated server-side
    (kubectl finds the PATCH operation of each kind in the OpenAPI v3)."""
    team = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "compute", "namespace": "team-a"},
        "spec": {"hard": {"requests.cpu": "2"}},
    }
    applied = ((team, "namespace/team-a"), (node, "node/n1"), (quota, "resourcequota/compute"))
    for manifest, name in applied:
        done = await kubectl(apiserver, "apply", "-f", "-", stdin=json.dumps(manifest))
        assert done.stdout.strip() == f"{name} created"
    team["metadata"]["labels"] = {"tier": "gold"}
    node["metadata"]["labels"] = {"disk": "ssd"}
    node["spec"] = {"taints": [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]}
    quota["spec"]["hard"] = {"requests.cpu": "4", "pods": "10"}
    for manifest, name in applied:  # the same dicts, edited
        done = await kubectl(apiserver, "apply", "-f", "-", stdin=json.dumps(manifest))
        assert done.stdout.strip() == f"{name} configured"
        again = await kubectl(apiserver, "apply", "-f", "-", stdin=json.dumps(manifest))
        assert again.stdout.strip() == f"{name} unchanged"
    got = json.loads((await kubectl(apiserver, "get", "namespace", "team-a", "-o", "json")).stdout)
    assert got["metadata"]["labels"] == {"tier": "gold"}
    assert "kubectl.kubernetes.io/last-applied-configuration" in got["metadata"]["annotations"]
    got = json.loads((await kubectl(apiserver, "get", "node", "n1", "-o", "json")).stdout)
    assert got["metadata"]["labels"] == {"disk": "ssd"}
    assert got["spec"]["taints"] == node["spec"]["taints"]
    assert got["status"]["allocatable"]["cpu"] == "4"  # an update never writes status
    got = json.loads(
        (await kubectl(apiserver, "get", "quota", "compute", "-n", "team-a", "-o", "json")).stdout
    )
    assert got["spec"]["hard"] == {"requests.cpu": "4", "pods": "10"}
    types = [e.type for e in await read_log(settings, NODES, POLICY)]
    assert types.count("NodeUpdated") == 1 and types.count("NamespaceUpdated") == 1
    assert types.count("ResourceQuotaUpdated") == 1  # "unchanged" wrote nothing


async def test_server_side_apply_of_namespaces_nodes_and_quotas(apiserver: RoleProcess) -> None:
    team = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "compute", "namespace": "team-a"},
        "spec": {"hard": {"pods": "10"}},
    }
    applied = ((team, "namespace/team-a"), (node, "node/n1"), (quota, "resourcequota/compute"))
    ssa = ("apply", "--server-side", "-f", "-")
    for manifest, name in applied:
        done = await kubectl(apiserver, *ssa, stdin=json.dumps(manifest))
        assert done.stdout.strip() == f"{name} serverside-applied"
    for manifest, _ in applied:
        manifest["metadata"]["labels"] = {"owner": "platform"}
        await kubectl(apiserver, *ssa, stdin=json.dumps(manifest))
    for what in (("namespace", "team-a"), ("node", "n1"), ("quota", "compute", "-n", "team-a")):
        got = json.loads(
            (await kubectl(apiserver, "get", *what, "-o", "json", "--show-managed-fields")).stdout
        )
        assert got["metadata"]["labels"] == {"owner": "platform"}, what
        [entry] = got["metadata"]["managedFields"]
        assert entry["manager"] == "kubectl" and entry["operation"] == "Apply", what
        assert "f:owner" in entry["fieldsV1"]["f:metadata"]["f:labels"], what
    # Another manager taking a field kubectl owns: a conflict, unless forced.
    team["metadata"]["labels"] = {"owner": "someone-else"}
    other = (*ssa, "--field-manager=other")
    refused = await kubectl(apiserver, *other, stdin=json.dumps(team), check=False)
    assert refused.returncode != 0 and "conflict" in refused.stderr.lower()
    await kubectl(apiserver, *other, "--force-conflicts", stdin=json.dumps(team))
    got = json.loads((await kubectl(apiserver, "get", "namespace", "team-a", "-o", "json")).stdout)
    assert got["metadata"]["labels"] == {"owner": "someone-else"}


async def test_label_cordon_and_taint_a_node(apiserver: RoleProcess) -> None:
    await kubectl(apiserver, "create", "-f", "-", stdin=json.dumps(node_manifest("n1")))
    steps = [
        (("label", "node", "n1", "disk=ssd"), "node/n1 labeled"),
        (("cordon", "n1"), "node/n1 cordoned"),
        (("taint", "node", "n1", "dedicated=db:NoSchedule"), "node/n1 tainted"),
    ]
    for args, said in steps:
        assert (await kubectl(apiserver, *args)).stdout.strip() == said
    nodes = _rows((await kubectl(apiserver, "get", "nodes")).stdout)
    assert nodes[1][:2] == ["n1", "Ready,SchedulingDisabled"]
    got = json.loads((await kubectl(apiserver, "get", "node", "n1", "-o", "json")).stdout)
    assert got["metadata"]["labels"]["disk"] == "ssd"
    assert got["spec"]["unschedulable"] is True
    assert got["spec"]["taints"] == [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]
    for args, said in [
        (("uncordon", "n1"), "node/n1 uncordoned"),
        (("taint", "node", "n1", "dedicated-"), "node/n1 untainted"),
        (("label", "node", "n1", "disk-"), "node/n1 unlabeled"),
    ]:
        assert (await kubectl(apiserver, *args)).stdout.strip() == said
    got = json.loads((await kubectl(apiserver, "get", "node", "n1", "-o", "json")).stdout)
    assert "disk" not in (got["metadata"].get("labels") or {})
    assert not got["spec"].get("unschedulable") and not got["spec"].get("taints")
    stale = dict(got, metadata={**got["metadata"], "resourceVersion": "1024"})
    refused = await kubectl(apiserver, "replace", "-f", "-", stdin=json.dumps(stale), check=False)
    assert refused.returncode != 0 and "the object has been modified" in refused.stderr


async def test_get_watch_prints_new_rows(apiserver: RoleProcess) -> None:
    """`kubectl get pods -w` prints the header and a row per change, as it arrives."""
    await kubectl(apiserver, "apply", "-f", str(MANIFESTS / "01-nginx-docs.yaml"))
    proc = await asyncio.create_subprocess_exec(
        "kubectl", "--server", apiserver.url, "--cache-dir", str(apiserver.log.parent / "kc"),
        "get", "pods", "-w", "--request-timeout=0",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "KUBECONFIG": "/dev/null"},
    )  # fmt: skip
    assert proc.stdout is not None
    try:
        lines = [await asyncio.wait_for(proc.stdout.readline(), 30) for _ in range(2)]
        await kubectl(apiserver, "apply", "-f", str(MANIFESTS / "09-init-containers.yaml"))
        lines.append(await asyncio.wait_for(proc.stdout.readline(), 30))
    finally:
        proc.kill()
        await proc.wait()
    rows = _rows(b"".join(lines).decode())
    assert rows[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert rows[1][:3] == ["nginx", "0/1", "Pending"]
    assert rows[2][:3] == ["myapp-pod", "0/1", "Pending"]


async def test_server_side_apply_owns_fields_and_reports_conflicts(apiserver: RoleProcess) -> None:
    manifest = yaml.safe_load((MANIFESTS / "11-resize-policy-docs.yaml").read_text())
    done = await kubectl(
        apiserver, "apply", "--server-side", "-f", "-", stdin=yaml.safe_dump(manifest)
    )
    assert done.stdout.strip() == "pod/resize-demo serverside-applied"
    manifest["metadata"]["labels"] = {"app": "demo"}
    await kubectl(apiserver, "apply", "--server-side", "-f", "-", stdin=yaml.safe_dump(manifest))
    pod = json.loads(
        (
            await kubectl(
                apiserver, "get", "pod", "resize-demo", "-o", "json", "--show-managed-fields"
            )
        ).stdout
    )
    assert pod["metadata"]["labels"] == {"app": "demo"}
    (entry,) = pod["metadata"]["managedFields"]
    assert entry["manager"] == "kubectl" and entry["operation"] == "Apply"
    assert "f:app" in entry["fieldsV1"]["f:metadata"]["f:labels"]
    assert 'k:{"name":"pause"}' in entry["fieldsV1"]["f:spec"]["f:containers"]

    # Another manager setting a field kubectl owns to another value: 409, unless forced.
    other = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "resize-demo", "labels": {"app": "other"}},
    }
    clash = await kubectl(
        apiserver, "apply", "--server-side", "--field-manager=deployer", "-f", "-",
        stdin=json.dumps(other), check=False,
    )  # fmt: skip
    assert clash.returncode != 0
    assert (
        'Apply failed with 1 conflict: conflict with "kubectl" using v1: .metadata.labels.app'
        in clash.stderr
    )
    forced = await kubectl(
        apiserver, "apply", "--server-side", "--field-manager=deployer", "--force-conflicts",
        "-f", "-", stdin=json.dumps(other),
    )  # fmt: skip
    assert forced.stdout.strip() == "pod/resize-demo serverside-applied"
    pod = json.loads(
        (
            await kubectl(
                apiserver, "get", "pod", "resize-demo", "-o", "json", "--show-managed-fields"
            )
        ).stdout
    )
    assert pod["metadata"]["labels"] == {"app": "other"}
    managers = {e["manager"]: e for e in pod["metadata"]["managedFields"]}
    assert "f:labels" not in managers["kubectl"]["fieldsV1"].get("f:metadata", {})
    assert "f:app" in managers["deployer"]["fieldsV1"]["f:metadata"]["f:labels"]


async def test_a_controller_applies_resources_through_resize(apiserver: RoleProcess) -> None:
    """A VPA-like controller owns the resources it sets, through pods/<name>/resize."""
    await kubectl(apiserver, "apply", "-f", str(MANIFESTS / "11-resize-policy-docs.yaml"))
    config = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "resize-demo"},
        "spec": {
            "containers": [
                {
                    "name": "pause",
                    "resources": {
                        "requests": {"cpu": "800m", "memory": "200Mi"},
                        "limits": {"cpu": "800m", "memory": "200Mi"},
                    },
                }
            ]
        },
    }
    async with httpx.AsyncClient(base_url=apiserver.url, timeout=10) as http:
        url = "/api/v1/namespaces/default/pods/resize-demo/resize"
        headers = {"content-type": "application/apply-patch+yaml"}
        r = await http.patch(
            url, params={"fieldManager": "vpa"}, content=yaml.safe_dump(config), headers=headers
        )
        assert r.status_code == 200, r.text
        pod = r.json()
        assert pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "800m"
        assert pod["status"]["resize"] == "Proposed"
        vpa = next(e for e in pod["metadata"]["managedFields"] if e["manager"] == "vpa")
        assert vpa["subresource"] == "resize" and vpa["operation"] == "Apply"
        missing = await http.patch(url, content=yaml.safe_dump(config), headers=headers)
        assert missing.status_code == 400 and "fieldManager" in missing.json()["message"]


async def test_deleting_a_namespace_deletes_what_is_in_it(
    apiserver: RoleProcess, settings: Settings
) -> None:
    """`kubectl delete namespace`: its CloneSets, then its pods, quotas, limit ranges and
    Events are deleted before it (the pods stayed behind, running, in no namespace)."""
    # kubectl's typed generator sends the Namespace as protobuf (a 415 once).
    done = await kubectl(apiserver, "create", "namespace", "team")
    assert done.stdout.strip() == "namespace/team created"
    pod = yaml.safe_load((MANIFESTS / "01-nginx-docs.yaml").read_text())
    await kubectl(apiserver, "apply", "-n", "team", "-f", "-", stdin=yaml.safe_dump(pod))
    cloneset = json.dumps(clone_set("web", 1))
    await kubectl(apiserver, "apply", "-n", "team", "-f", "-", stdin=cloneset)
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
             "spec": {"hard": {"pods": "10"}}}  # fmt: skip
    await kubectl(apiserver, "apply", "-n", "team", "-f", "-", stdin=json.dumps(quota))
    await kubectl(apiserver, "apply", "-f", str(MANIFESTS / "01-nginx-docs.yaml"))  # default
    for namespace in ("team", "default"):
        event = {"apiVersion": "v1", "kind": "Event",
                 "metadata": {"name": "nginx.1", "namespace": namespace},
                 "involvedObject": {"kind": "Pod", "name": "nginx", "namespace": namespace},
                 "reason": "Tested", "message": "m", "type": "Normal"}  # fmt: skip
        await kubectl(apiserver, "create", "-f", "-", stdin=json.dumps(event))
    done = await kubectl(apiserver, "delete", "namespace", "team")
    assert done.stdout.strip() == 'namespace "team" deleted'
    for kind in ("pods", "clonesets", "resourcequotas", "events"):
        left = await kubectl(apiserver, "get", kind, "-n", "team", "-o", "name")
        assert left.stdout == "", kind
    gone = await kubectl(apiserver, "get", "namespace", "team", check=False)
    assert gone.returncode != 0 and "NotFound" in gone.stderr
    still = await kubectl(apiserver, "get", "pods", "-n", "default", "-o", "name")
    assert still.stdout.strip() == "pod/nginx"  # another namespace's content stays
    deleted = [
        e.type
        for e in await read_log(settings, PODS, POLICY, WORKLOADS)
        if e.type.endswith("Deleted")
    ]
    assert sorted(deleted) == [
        "CloneSetDeleted", "NamespaceDeleted", "PodDeleted", "ResourceQuotaDeleted"
    ]  # fmt: skip
    events = [e.type for e in await read_log(settings, K8S_EVENTS) if e.type.endswith("Deleted")]
    assert events == ["KubeEventDeleted"]
    # An Event by itself, as `kubectl delete event` does.
    one = await kubectl(apiserver, "delete", "event", "nginx.1")
    assert one.stdout.strip() == 'event "nginx.1" deleted'
    left = await kubectl(apiserver, "get", "events", "-o", "name")
    assert "event/nginx.1" not in left.stdout.split()
    team = [e.type for e in await read_log(settings, POLICY) if e.key == "team"]
    team = [t for t in team if t.startswith("Namespace")]
    assert team[-2:] == ["NamespaceTerminating", "NamespaceDeleted"]  # Terminating first
    policy = [e.type for e in await read_log(settings, POLICY) if e.type.endswith("Deleted")]
    assert policy == ["ResourceQuotaDeleted", "NamespaceDeleted"]  # the namespace last
    again = await kubectl(
        apiserver, "apply", "-n", "team", "-f", "-", stdin=yaml.safe_dump(pod), check=False
    )
    assert again.returncode != 0 and 'namespaces "team" not found' in again.stderr


async def test_a_namespace_left_terminating_is_finished(settings: Settings, tmp_path: Path) -> None:
    """An apiserver that died after writing NamespaceTerminating left the namespace and its
    content: any replica's sweep finishes it, as kube's namespace controller would."""
    first = RoleProcess("apiserver", settings, tmp_path / "first.log", INPLACE_QUOTA_URL="")
    first.start()
    await first.ready()
    await kubectl(first, "create", "namespace", "half")
    pod = yaml.safe_load((MANIFESTS / "01-nginx-docs.yaml").read_text())
    await kubectl(first, "apply", "-n", "half", "-f", "-", stdin=yaml.safe_dump(pod))
    first.stop()
    async with EventProducer(settings.kafka_bootstrap, topic_prefix=settings.topic_prefix) as log:
        await log.publish(Envelope.wrap(ev.NamespaceTerminating(namespace="half"), producer="t"))
    second = RoleProcess(
        "apiserver",
        settings,
        tmp_path / "second.log",
        INPLACE_QUOTA_URL="",
        INPLACE_APISERVER_NAMESPACE_SWEEP_S="0.5",
    )
    second.start()
    await second.ready()
    try:

        async def gone() -> bool:
            got = await kubectl(second, "get", "namespace", "half", check=False)
            return got.returncode != 0 and "NotFound" in got.stderr

        await until(gone, bool, "the terminating namespace finished", 60)
        left = await kubectl(second, "get", "pods", "-n", "half", "-o", "name")
        assert left.stdout == ""
    finally:
        second.stop()
    deleted = [e.type for e in await read_log(settings, PODS, POLICY) if "Delet" in e.type]
    assert sorted(deleted) == ["NamespaceDeleted", "PodDeleted"]  # each once (topics apart)
    assert "finished deleting namespaces left terminating: ['half']" in second.log.read_text()
