"""The roles' own APIs under credentials: the quota webhook answers only the apiserver (and
admins), the hotplug API only admins; health stays readable and /metrics too on loopback (a
wrong token is a 401 even there); the apiserver reaches the webhook with its client
certificate."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from inplace.core.security.credentials import Credentials
from inplace.core.settings import Settings
from tests import factories
from tests.integration.conftest import inplace
from tests.integration.security.conftest import as_user, start_secure, start_secure_apiserver

pytestmark = pytest.mark.integration


def _pod(name: str, cpu: str) -> dict[str, object]:
    body = factories.pod("default", name, cpu=cpu).to_k8s()
    body["metadata"].pop("uid", None)
    return body


async def test_quota_webhook_and_hotplug_api_take_only_their_callers(
    settings: Settings, credentials: Credentials, tmp_path: Path
) -> None:
    quota = await start_secure("quota", settings, credentials, tmp_path / "quota.log")
    hotplug = await start_secure("hotplug", settings, credentials, tmp_path / "hotplug.log")
    api = await start_secure_apiserver(
        settings, credentials, tmp_path / "apiserver.log", INPLACE_QUOTA_URL=quota.url
    )
    try:
        review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}
        async with quota.client(base_url=quota.url) as anonymous:
            assert (await anonymous.post("/admit", json=review)).status_code == 401
            assert (await anonymous.get("/metrics")).status_code == 200  # from loopback
            wrong = {"Authorization": "Bearer not-a-token"}
            assert (await anonymous.get("/metrics", headers=wrong)).status_code == 401
        async with as_user(quota, credentials, "workload") as workload:
            refused = await workload.post("/admit", json=review)
            assert refused.status_code == 403
            assert refused.json()["message"] == (
                'User "system:inplace:workload-controller" cannot call the quota API'
            )
            # Any authenticated caller may read /metrics (from off-host too: a unit test).
            assert "python_info" in (await workload.get("/metrics")).text
        async with as_user(hotplug, credentials, "workload") as workload:
            refused = await workload.post("/api/v1/nodes/n1/resize", json={"cpu": "16"})
            assert refused.status_code == 403

        async with as_user(api, credentials, "admin") as admin:
            created = await admin.post("/api/v1/nodes", json=factories.node("n1").to_k8s())
            assert created.status_code == 201, created.text
            quota_object = {"metadata": {"name": "compute"}, "spec": {"hard": {"cpu": "500m"}}}
            r = await admin.post("/api/v1/namespaces/default/resourcequotas", json=quota_object)
            assert r.status_code == 201, r.text
            # Admission goes through the webhook over TLS, as system:apiserver.
            assert (
                await admin.post("/api/v1/namespaces/default/pods", json=_pod("a", "300m"))
            ).status_code == 201
            denied = await admin.post("/api/v1/namespaces/default/pods", json=_pod("b", "300m"))
            assert denied.status_code == 403, denied.text
            assert "exceeded quota: compute" in denied.json()["message"]

        # `inplace node resize` with the admin's kubeconfig reaches the hotplug API.
        admin_config = str(credentials.admin_kubeconfig)
        resize = ("node", "resize", "n1", "--server", hotplug.url, "--cpu")
        for _ in range(100):  # hotplug learns of n1 from the log
            done = await asyncio.to_thread(
                inplace, settings, *resize, "16", KUBECONFIG=admin_config
            )
            if "not found" not in done.stderr.lower():
                break
            await asyncio.sleep(0.1)
        assert done.returncode == 0, done.stderr
        assert "node/n1 resized" in done.stdout
        refused_cli = await asyncio.to_thread(inplace, settings, *resize, "8", KUBECONFIG="")
        assert refused_cli.returncode == 1
        assert len(refused_cli.stderr.strip().splitlines()) == 1
    finally:
        for proc in (api, hotplug, quota):
            proc.stop()
