"""A quota webhook's denial as the apiserver takes it: the Status the client gets, and the facts
(`response.refusal`) the ResizeRefused event keeps; a reply without them still denies."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from schemas import events as ev
from schemas.admission import LimitRangeFacts, QuotaFacts, RefusalFacts
from schemas.quantity import Quantity
from services.apiserver import errors
from services.apiserver.admission import AdmissionClient, AdmissionDenied
from services.apiserver.refusals import refused_by
from tests import factories

MESSAGE = (
    'pods "web" is forbidden: exceeded quota: compute, requested: limits.cpu=500m, '
    "used: limits.cpu=600m, limited: limits.cpu=1"
)
QUOTA_REPLY = {
    "quota": {
        "name": "compute",
        "requested": {"limits.cpu": "500m"},
        "used": {"limits.cpu": "600m"},
        "hard": {"limits.cpu": "1"},
    }
}


def test_quota_facts_become_the_events_quota() -> None:
    quota, limit_range = refused_by(RefusalFacts.model_validate(QUOTA_REPLY))
    assert quota == ev.QuotaRefusal(
        quota="compute",
        requested={"limits.cpu": "500m"},
        used={"limits.cpu": "600m"},
        hard={"limits.cpu": "1"},
    )
    assert limit_range is None
    must_specify, _ = refused_by(RefusalFacts(quota=QuotaFacts(name="compute")))
    assert must_specify == ev.QuotaRefusal(quota="compute")


def test_limit_range_facts_become_the_events_bounds_in_order() -> None:
    refusal = RefusalFacts(
        limit_range=[
            LimitRangeFacts(
                resource="cpu",
                per="Container",
                bound="maximum",
                enforced=Quantity("1"),
                field="limit",
                actual="2",
            ),
            LimitRangeFacts(
                resource="cpu", per="Pod", bound="maxLimitRequestRatio", enforced=Quantity("2")
            ),
        ]
    )
    quota, limit_range = refused_by(refusal)
    assert quota is None
    assert limit_range == [
        factories.cpu_over_container_max(),
        ev.LimitRangeViolation(
            resource="cpu", per="Pod", bound="maxLimitRequestRatio", enforced="2"
        ),
    ]


def test_no_facts_map_to_none() -> None:
    assert refused_by(None) == (None, None)
    assert refused_by(RefusalFacts()) == (None, None)


def _client(response: dict[str, Any]) -> AdmissionClient:
    """An AdmissionClient whose webhook answers every review with `response`."""

    def answer(request: httpx.Request) -> httpx.Response:
        uid = json.loads(request.content)["request"]["uid"]
        review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}
        return httpx.Response(200, json={**review, "response": {"uid": uid, **response}})

    client = AdmissionClient("http://quota")
    client._client = httpx.AsyncClient(transport=httpx.MockTransport(answer))
    return client


DENIAL = {"allowed": False, "status": {"status": "Failure", "code": 403, "message": MESSAGE}}


@pytest.mark.parametrize(
    ("reply", "refusal"),
    [
        ({**DENIAL, "refusal": QUOTA_REPLY}, RefusalFacts.model_validate(QUOTA_REPLY)),
        # A webhook that predates `refusal`: still a denial, with no facts (never parsed out
        # of the message).
        (DENIAL, None),
    ],
    ids=["with-facts", "old-style"],
)
async def test_a_denial_carries_the_replys_facts_and_the_same_status(
    reply: dict[str, Any], refusal: RefusalFacts | None
) -> None:
    pod = factories.pod("team-a", "web")
    with pytest.raises(AdmissionDenied) as denied:
        await _client(reply).admit_pod("UPDATE", pod, pod, "resize")
    assert denied.value.refusal == refusal
    assert denied.value.status.to_k8s() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": MESSAGE,
        "reason": "Forbidden",
        "details": {"name": "web", "kind": "pods"},
        "code": 403,
    }


async def test_malformed_facts_are_a_failed_webhook_call() -> None:
    # Validated at the boundary like the rest of the reply: failurePolicy Fail, never a guess.
    bad = {**DENIAL, "refusal": {"quota": {"name": "compute", "used": {"cpu": "lots"}}}}
    pod = factories.pod("team-a", "web")
    with pytest.raises(errors.ApiError) as failed:
        await _client(bad).admit_pod("UPDATE", pod, pod, "resize")
    assert not isinstance(failed.value, AdmissionDenied) and failed.value.code == 500
    assert 'failed calling webhook "quota.inplace.io"' in str(failed.value)
