"""kubectl (the real binary) against the apiserver with validation on: create, apply (client-
and server-side field validation), explain, edit-free updates, and its errors."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.integration.conftest import RoleProcess, kubectl

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


async def test_apply_a_cloneset(apiserver: RoleProcess) -> None:
    cloneset = {
        "apiVersion": "apps.inplace.dev/v1alpha1",
        "kind": "CloneSet",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": "nginx:1.27",
                            "resources": {"requests": {"cpu": "100m"}, "limits": {"cpu": "100m"}},
                        }
                    ]
                },
            },
        },
    }
    done = await kubectl(apiserver, "apply", "-f", "-", stdin=json.dumps(cloneset))
    assert done.stdout.strip() == "cloneset.apps.inplace.dev/web created"
    got = json.loads((await kubectl(apiserver, "get", "clonesets", "web", "-o", "json")).stdout)
    assert got["spec"]["replicas"] == 2


async def test_server_dry_run_is_refused_not_written(apiserver: RoleProcess) -> None:
    done = await kubectl(
        apiserver, "create", "--dry-run=server", "-f", str(MANIFESTS / "01-nginx-docs.yaml"),
        check=False,
    )  # fmt: skip
    assert done.returncode != 0 and "dryRun" in done.stderr
    missing = await kubectl(apiserver, "get", "pod", "nginx", check=False)
    assert missing.returncode != 0 and "NotFound" in missing.stderr
