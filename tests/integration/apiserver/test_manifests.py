"""Real-world Pod manifests (Kubernetes docs, Helm charts) through the apiserver, as people
send them: every field comes back as sent plus kube-apiserver's defaults, and the pods resize
through `kubectl patch --subresource resize` in all three patch types."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import httpx
import yaml
from kubernetes import client

from schemas.quantity import Quantity
from tests.integration.conftest import RoleProcess, call, kubectl

MANIFESTS = sorted((Path(__file__).parent / "manifests").glob("*.yaml"))


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(path.read_text())
    return data


def same_value(sent: Any, got: Any) -> bool:
    """Quantities are canonicalized by the server (`1024Mi` reads back `1Gi`), as Kubernetes
    does."""
    if sent == got:
        return True
    if isinstance(sent, str | int) and isinstance(got, str | int):
        try:
            return Quantity(str(sent)) == Quantity(str(got))
        except ValueError:
            return False
    return False


def missing(sent: Any, got: Any, path: str = "") -> list[str]:
    """Paths of `sent` that `got` does not hold as sent (lists pair up by position). An empty
    list or map sent may read back absent: Go omits empty slices and maps."""
    if isinstance(sent, dict):
        if not isinstance(got, dict):
            return [path]
        out: list[str] = []
        for key, value in sent.items():
            if key not in got:
                if value in ([], {}) and path.endswith(("sysctls", "labels")):
                    continue
                out.append(f"{path}.{key}")
            else:
                out += missing(value, got[key], f"{path}.{key}")
        return out
    if isinstance(sent, list):
        if not isinstance(got, list) or len(got) < len(sent):
            return [path]
        return [p for i, v in enumerate(sent) for p in missing(v, got[i], f"{path}[{i}]")]
    return [] if same_value(sent, got) else [f"{path}: sent {sent!r}, got {got!r}"]


async def test_manifests_round_trip_with_defaults(apiserver: RoleProcess) -> None:
    assert len(MANIFESTS) >= 15
    # What users do: kubectl apply with validation on (kubectl reads the OpenAPI, sends
    # fieldValidation=Strict and the last-applied annotation).
    done = await kubectl(apiserver, "apply", "-f", str(MANIFESTS[0].parent))
    assert done.stdout.count(" created") == len(MANIFESTS), done.stdout
    async with httpx.AsyncClient(base_url=apiserver.url, timeout=10) as http:
        for path in MANIFESTS:
            sent = load(path)
            name = sent["metadata"]["name"]
            got = (await http.get(f"/api/v1/namespaces/default/pods/{name}")).json()
            assert missing(sent, got) == [], path.name
            spec = got["spec"]
            assert spec["enableServiceLinks"] in (True, False)
            assert {t["key"] for t in spec["tolerations"] if "key" in t} >= {
                "node.kubernetes.io/not-ready",
                "node.kubernetes.io/unreachable",
            }, path.name
            for container in spec["containers"] + spec.get("initContainers", []):
                assert container["terminationMessagePath"] == "/dev/termination-log"
                assert container["imagePullPolicy"] in ("Always", "IfNotPresent")
                for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
                    if probe in container:
                        assert container[probe]["timeoutSeconds"] >= 1
            assert got["status"]["phase"] == "Pending"
            assert got["status"]["qosClass"] in ("Guaranteed", "Burstable", "BestEffort")


RESIZES = [
    ("strategic", '{"spec":{"containers":[{"name":"%s","resources":%s}]}}'),
    ("merge", '{"spec":{"containers":[{"name":"%s","resources":%s}]}}'),
    ("json", '[{"op":"replace","path":"/spec/containers/0/resources","value":%s}]'),
]


def resized(resources: dict[str, Any], step: int) -> dict[str, Any]:
    """New cpu/memory values that keep the QoS class: each request becomes 100+10·step units,
    each limit the same (where it equalled the request) or twice that; other resources kept."""
    out = copy.deepcopy(resources)
    requests, limits = out.get("requests", {}), out.get("limits", {})
    for name, unit in (("cpu", "m"), ("memory", "Mi")):
        if name not in requests:
            continue
        value = 100 + 10 * step
        if name in limits:
            same = Quantity(str(limits[name])) == Quantity(str(requests[name]))
            limits[name] = f"{value if same else 2 * value}{unit}"
        requests[name] = f"{value}{unit}"
    return out


async def test_kubectl_resizes_manifest_pods_in_every_patch_type(apiserver: RoleProcess) -> None:
    """Every manifest's pod resized with `kubectl patch --subresource resize` in strategic,
    merge and JSON patches; a merge patch carrying only the container's name and resources
    replaces the container list in the patched object, and the resize subresource still takes
    only the resources (everything else stays as it was)."""
    await kubectl(apiserver, "apply", "-f", str(MANIFESTS[0].parent))
    for path in MANIFESTS:
        name = load(path)["metadata"]["name"]
        before = json.loads((await kubectl(apiserver, "get", "pod", name, "-o", "json")).stdout)
        container = before["spec"]["containers"][0]
        for step, (patch_type, template) in enumerate(RESIZES, start=1):
            wanted = resized(container["resources"], step)
            if patch_type == "json":
                body = template % json.dumps(wanted)
            else:
                body = template % (container["name"], json.dumps(wanted))
            await kubectl(
                apiserver, "patch", "pod", name, "--subresource", "resize", "--type", patch_type,
                "-p", body,
            )  # fmt: skip
            now = json.loads((await kubectl(apiserver, "get", "pod", name, "-o", "json")).stdout)
            resources = now["spec"]["containers"][0]["resources"]
            assert resources == wanted, (path.name, patch_type)
            assert now["status"].get("resize") == "Proposed", (path.name, patch_type)
            assert now["status"]["qosClass"] == before["status"]["qosClass"]
            # Everything else as it was: probes, env, volumes, other containers.
            for key in ("volumes", "tolerations", "initContainers", "affinity"):
                assert now["spec"].get(key) == before["spec"].get(key), (path.name, key)
            rest = {k: v for k, v in now["spec"]["containers"][0].items() if k != "resources"}
            was = {k: v for k, v in container.items() if k != "resources"}
            assert rest == was, (path.name, patch_type)
        got = _rows_of((await kubectl(apiserver, "get", "pod", name)).stdout)
        assert got[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
        spec = before["spec"]
        sidecars = [c for c in spec.get("initContainers", []) if c.get("restartPolicy") == "Always"]
        assert got[1][:3] == [name, f"0/{len(spec['containers']) + len(sidecars)}", "Pending"]


def _rows_of(text: str) -> list[list[str]]:
    return [line.split() for line in text.strip().splitlines()]


async def test_official_client_creates_a_full_v1pod(apiserver: RoleProcess) -> None:
    """A V1Pod built by the official client from a manifest (its own serialization, every
    field typed) is accepted and read back with the same fields."""
    api = client.ApiClient(client.Configuration(host=apiserver.url))
    v1 = client.CoreV1Api(api)
    for manifest in ("13-bitnami-redis.yaml", "04-volumes.yaml", "12-lifecycle-hooks.yaml"):
        sent = load(Path(__file__).parent / "manifests" / manifest)
        pod = api._ApiClient__deserialize(sent, "V1Pod")  # the client's own model of the manifest
        created = await call(v1.create_namespaced_pod, "default", pod)
        assert created.metadata.uid
        back = await call(v1.read_namespaced_pod, sent["metadata"]["name"], "default")
        assert (
            missing(api.sanitize_for_serialization(pod), api.sanitize_for_serialization(back)) == []
        )
        resized = await call(
            v1.patch_namespaced_pod_resize,
            sent["metadata"]["name"],
            "default",
            {
                "spec": {
                    "containers": [
                        {
                            "name": sent["spec"]["containers"][0]["name"],
                            "resources": {"requests": {"cpu": "120m"}},
                        }
                    ]
                }
            },
        )
        assert resized.spec.containers[0].resources.requests["cpu"] == "120m"
        assert resized.spec.containers[0].readiness_probe == back.spec.containers[0].readiness_probe


async def test_field_validation_directives(apiserver: RoleProcess) -> None:
    body = load(Path(__file__).parent / "manifests" / "01-nginx-docs.yaml")
    body["spec"]["containers"][0]["readinesProbe"] = {"tcpSocket": {"port": 80}}  # a typo
    async with httpx.AsyncClient(base_url=apiserver.url, timeout=10) as http:
        url = "/api/v1/namespaces/default/pods"
        strict = await http.post(url, params={"fieldValidation": "Strict"}, json=body)
        assert strict.status_code == 400
        assert strict.json()["message"] == (
            'Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
            'unknown field "spec.containers[0].readinesProbe"'
        )
        warned = await http.post(url, json=body)  # Warn is the default
        assert warned.status_code == 201
        assert warned.headers["warning"] == (
            '299 - "unknown field \\"spec.containers[0].readinesProbe\\""'
        )
        assert "readinesProbe" not in warned.json()["spec"]["containers"][0]
        body["metadata"]["name"] = "nginx-2"
        ignored = await http.post(url, params={"fieldValidation": "Ignore"}, json=body)
        assert ignored.status_code == 201 and "warning" not in ignored.headers
        bad_type = json.loads(json.dumps(body))
        bad_type["metadata"]["name"] = "nginx-3"
        bad_type["spec"]["containers"][0]["ports"][0]["containerPort"] = "80"
        invalid = await http.post(url, json=bad_type)
        assert invalid.status_code == 422
        assert invalid.json()["message"] == (
            'Pod "nginx-3" is invalid: spec.containers[0].ports[0].containerPort: '
            'Invalid value: "80": must be of type integer'
        )
        bad = await http.post(url, params={"fieldValidation": "Loose"}, json=body)
        assert bad.status_code == 400
