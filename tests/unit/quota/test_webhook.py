"""The quota webhook's reply over HTTP (POST /admit): a denial carries kube-apiserver's words in
`status` and the same facts as data in `refusal` (schemas.admission), which the apiserver reads
back with the same model."""

from __future__ import annotations

from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.routing import Route

from inplace.core.bus.consumer import Record
from inplace.core.bus.producer import Position
from inplace.core.readmodel import ReadModel
from inplace.core.settings import Settings
from schemas import events as ev
from schemas.admission import AdmissionRequest, AdmissionReview, GroupVersionKind
from schemas.envelope import Envelope
from schemas.k8s import LimitRange, Pod, ResourceQuota
from services.quota.admission import Allowed, Denied, admit
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


def _create(namespace: str, name: str, cpu: str) -> AdmissionRequest:
    return AdmissionRequest(
        uid=f"c-{name}",
        kind=GroupVersionKind(kind="Pod"),
        operation="CREATE",
        name=name,
        namespace=namespace,
        object=factories.pod(namespace, name, cpu).to_k8s(),
    )


def _resize(old: Pod, cpu: str) -> AdmissionRequest:
    new = old.to_k8s()
    new["spec"]["containers"][0]["resources"] = factories.resources(cpu, "128Mi").to_k8s()
    return AdmissionRequest(
        uid=f"r-{old.metadata.name}",
        kind=GroupVersionKind(kind="Pod"),
        operation="UPDATE",
        sub_resource="resize",
        name=old.metadata.name,
        namespace=old.metadata.namespace,
        object=new,
        old_object=old.to_k8s(),
    )


async def test_an_admitted_request_counts_until_the_log_has_it_or_it_expires() -> None:
    """A quota of 1 CPU, web at 600m: web to 800m passes; a new 300m pod then does not (it
    would alone), neither once web's resize is on the log; with reservations that expire at
    once, it passes again."""
    webhook = await _webhook()
    web = webhook.model.get("pods", (QUOTA_NS, "web"))
    assert (await webhook.review(_resize(web, "800m"))).allowed
    refused = await webhook.review(_create(QUOTA_NS, "extra", "300m"))
    assert refused.status is not None and refused.status.message == (
        'pods "extra" is forbidden: exceeded quota: compute, requested: cpu=300m, '
        "used: cpu=800m, limited: cpu=1"
    )
    resized = ev.ResizeProposed(
        namespace=QUOTA_NS,
        name="web",
        uid=web.metadata.uid or "",
        containers=[
            ev.ContainerResources(name="app", resources=factories.resources("800m", "128Mi"))
        ],
    )
    # After the four records `_webhook` fed (offsets 0-3 of their topics).
    webhook.model._apply(Record(Position(ev.PODS, 0, 10), Envelope.wrap(resized, producer="t")))
    assert not webhook._reserved[QUOTA_NS]  # the log counts it now
    assert not (await webhook.review(_create(QUOTA_NS, "extra", "300m"))).allowed

    forgetful = await _webhook()
    forgetful.ttl = -1.0  # every reservation already expired when the next request comes
    assert (await forgetful.review(_resize(web, "800m"))).allowed
    assert (await forgetful.review(_create(QUOTA_NS, "extra", "300m"))).allowed


def _as_before(webhook: QuotaWebhook, req: AdmissionRequest) -> Allowed | Denied:
    """The decision as the webhook made it before running totals: `admit` over every pod of
    the namespace, each with a live reservation as reserved, the asked pod as `old_object`."""
    pod = Pod.model_validate(req.object)
    old = Pod.model_validate(req.old_object) if req.old_object else None
    namespace = pod.metadata.namespace or ""
    quotas = [
        q
        for (ns, _), q in sorted(webhook.model.objects("resourcequotas").items())
        if ns == namespace
    ]
    ranges = [
        r for (ns, _), r in sorted(webhook.model.objects("limitranges").items()) if ns == namespace
    ]
    pods = {n: p for (ns, n), p in webhook.model.objects("pods").items() if ns == namespace}
    pods.update({n: r.pod for n, r in webhook._reserved[namespace].items()})
    current = [p for n, p in pods.items() if n != pod.metadata.name]
    if old is not None:
        current.append(old)
    operation = "CREATE" if req.operation == "CREATE" else "RESIZE"
    return admit(quotas, ranges, current, operation, old, pod)


async def test_decisions_and_words_are_those_of_summing_every_pod() -> None:
    """On the every-type stream, pods grown one after the other and new pods created, nothing
    reaching the log meanwhile (reservations pile up until refusals come): each answer is
    the one the full sum over the namespace's pods gives."""
    model = ReadModel(Settings(), role=ROLE, topics=INPUT_TOPICS, window=0)
    webhook = QuotaWebhook(model)
    model.ready.set()
    async for _ in factories.feed(model, factories.every_type_stream()):
        pass
    asks: list[AdmissionRequest] = []
    for (ns, _), pod in sorted(model.objects("pods").items()):
        if ns in ("team-a", "team-b"):
            asks.append(_resize(pod, "3"))
    asks += [_create(ns, f"new-{i}", "900m") for i in range(12) for ns in ("team-a", "team-b")]
    answers = {True: 0, False: 0}
    for req in asks:
        expected = _as_before(webhook, req)
        got = await webhook.review(req)
        assert got.allowed == isinstance(expected, Allowed)
        if isinstance(expected, Denied):
            assert got.status == expected.to_status() and got.refusal == expected.facts()
        answers[got.allowed] += 1
    assert answers[True] > 3 and answers[False] > 3
