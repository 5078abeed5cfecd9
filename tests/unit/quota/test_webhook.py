"""The quota webhook's reply over HTTP (POST /admit): a denial carries kube-apiserver's words in
`status` and the same facts as data in `refusal` (schemas.admission), which the apiserver reads
back with the same model."""

from __future__ import annotations

from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.routing import Route

from inplace.core.readmodel import ReadModel
from inplace.core.settings import Settings
from schemas import events as ev
from schemas.admission import AdmissionRequest, AdmissionReview, GroupVersionKind
from schemas.envelope import Envelope
from schemas.k8s import LimitRange, ResourceQuota
from services.quota.service import INPUT_TOPICS, ROLE
from services.quota.webhook import QuotaWebhook
from tests import factories

QUOTA_NS, RANGE_NS = "team-q", "team-l"


async def _webhook() -> QuotaWebhook:
    """A webhook whose log has: team-q, a 1-CPU quota and web at 600m; team-l, a LimitRange
    capping a container at 1 CPU and web at 500m."""
    quota = ResourceQuota.from_k8s(
        {"metadata": {"name": "compute", "namespace": QUOTA_NS}, "spec": {"hard": {"cpu": "1"}}}
    )
    limits = LimitRange.from_k8s(
        {
            "metadata": {"name": "limits", "namespace": RANGE_NS},
            "spec": {"limits": [{"type": "Container", "max": {"cpu": "1"}}]},
        }
    )
    payloads: list[ev.EventPayload] = [
        ev.ResourceQuotaCreated(namespace=QUOTA_NS, quota=quota),
        ev.LimitRangeCreated(namespace=RANGE_NS, limit_range=limits),
        ev.PodCreated(
            namespace=QUOTA_NS, name="web", uid="u1", pod=factories.pod(QUOTA_NS, "web", "600m")
        ),
        ev.PodCreated(
            namespace=RANGE_NS, name="web", uid="u2", pod=factories.pod(RANGE_NS, "web", "500m")
        ),
    ]
    model = ReadModel(Settings(), role=ROLE, topics=INPUT_TOPICS, window=0)
    webhook = QuotaWebhook(model)
    model.ready.set()
    async for _ in factories.feed(model, [Envelope.wrap(p, producer="test") for p in payloads]):
        pass
    return webhook


async def _ask_resize(webhook: QuotaWebhook, namespace: str, cpu: str) -> dict[str, Any]:
    """POST /admit a resize of `namespace`/web to `cpu`; the reply's JSON."""
    old = factories.pod(namespace, "web", "600m" if namespace == QUOTA_NS else "500m").to_k8s()
    new = factories.pod(namespace, "web", cpu).to_k8s()
    review = AdmissionReview(
        request=AdmissionRequest(
            uid="r1",
            kind=GroupVersionKind(kind="Pod"),
            operation="UPDATE",
            sub_resource="resize",
            name="web",
            namespace=namespace,
            object=new,
            old_object=old,
        )
    )
    app = Starlette(routes=[Route("/admit", webhook.handle, methods=["POST"])])
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://quota") as http:
        reply = await http.post("/admit", json=review.to_k8s())
    assert reply.status_code == 200
    body: dict[str, Any] = reply.json()
    return body


async def test_a_quota_denial_carries_the_quota_as_data() -> None:
    body = await _ask_resize(await _webhook(), QUOTA_NS, "1200m")
    response = body["response"]
    assert response["allowed"] is False
    assert response["status"]["message"] == (
        'pods "web" is forbidden: exceeded quota: compute, requested: cpu=600m, '
        "used: cpu=600m, limited: cpu=1"
    )
    assert response["refusal"] == {
        "quota": {
            "name": "compute",
            "requested": {"cpu": "600m"},
            "used": {"cpu": "600m"},
            "hard": {"cpu": "1"},
        }
    }
    # The apiserver's side of the boundary reads it back as the same typed facts.
    refusal = AdmissionReview.model_validate(body).response.refusal  # type: ignore[union-attr]
    assert refusal is not None and refusal.quota is not None
    assert (refusal.quota.name, str(refusal.quota.used["cpu"])) == ("compute", "600m")


async def test_a_limit_range_denial_carries_the_bounds_as_data() -> None:
    response = (await _ask_resize(await _webhook(), RANGE_NS, "2"))["response"]
    assert response["status"]["message"] == (
        'pods "web" is forbidden: maximum cpu usage per Container is 1, but limit is 2'
    )
    assert response["refusal"] == {
        "limitRange": [
            {
                "resource": "cpu",
                "per": "Container",
                "bound": "maximum",
                "enforced": "1",
                "field": "limit",
                "actual": "2",
            }
        ]
    }


async def test_an_admitted_request_carries_no_refusal() -> None:
    response = (await _ask_resize(await _webhook(), QUOTA_NS, "700m"))["response"]
    assert response["allowed"] is True and "refusal" not in response
