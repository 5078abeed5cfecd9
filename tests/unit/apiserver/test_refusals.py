"""A ResourceQuota / LimitRange refusal's facts, read from kube-apiserver's words (the
messages are those the quota role's tests expect, tests/unit/quota)."""

from __future__ import annotations

import pytest

from schemas import events as ev
from services.apiserver.refusals import limit_range_violations, quota_refusal

EXCEEDED = (
    'pods "new" is forbidden: exceeded quota: compute, '
    "requested: limits.cpu=4,limits.memory=4Gi, "
    "used: limits.cpu=1,limits.memory=1Gi, "
    "limited: limits.cpu=4,limits.memory=4Gi"
)


def test_exceeded_quota_names_the_quota_with_requested_used_and_hard() -> None:
    assert quota_refusal(EXCEEDED) == ev.QuotaRefusal(
        quota="compute",
        requested={"limits.cpu": "4", "limits.memory": "4Gi"},
        used={"limits.cpu": "1", "limits.memory": "1Gi"},
        hard={"limits.cpu": "4", "limits.memory": "4Gi"},
    )
    objects = quota_refusal(
        'pods "new" is forbidden: exceeded quota: objects, requested: count/pods=1, '
        "used: count/pods=2, limited: count/pods=2"
    )
    assert objects is not None
    assert (objects.quota, objects.used, objects.hard) == (
        "objects",
        {"count/pods": "2"},
        {"count/pods": "2"},
    )
    assert limit_range_violations(EXCEEDED) is None


def test_must_specify_names_the_quota_only() -> None:
    refusal = quota_refusal(
        'pods "new" is forbidden: failed quota: compute: must specify limits.cpu for: app'
    )
    assert refusal == ev.QuotaRefusal(quota="compute")


@pytest.mark.parametrize(
    ("message", "violations"),
    [
        (
            'pods "web" is forbidden: maximum cpu usage per Container is 1, but limit is 2',
            [("cpu", "Container", "maximum", "1", "limit", "2")],
        ),
        (
            'pods "web" is forbidden: minimum cpu usage per Container is 50m, but request is 20m',
            [("cpu", "Container", "minimum", "50m", "request", "20m")],
        ),
        (
            'pods "web" is forbidden: [maximum cpu usage per Container is 1, but limit is 2, '
            "maximum memory usage per Container is 1Gi, but limit is 2Gi]",
            [
                ("cpu", "Container", "maximum", "1", "limit", "2"),
                ("memory", "Container", "maximum", "1Gi", "limit", "2Gi"),
            ],
        ),
        (
            "maximum memory usage per Pod is 1Gi.  No limit is specified",
            [("memory", "Pod", "maximum", "1Gi", None, None)],
        ),
        (
            "cpu max limit to request ratio per Container is 2, but provided ratio is 4.000000",
            [("cpu", "Container", "maxLimitRequestRatio", "2", "ratio", "4.000000")],
        ),
        (
            "cpu max limit to request ratio per Container is 2, but no request is specified or "
            "request is 0",
            [("cpu", "Container", "maxLimitRequestRatio", "2", None, None)],
        ),
    ],
)
def test_limit_range_violations(
    message: str, violations: list[tuple[str, str, str, str, str | None, str | None]]
) -> None:
    found = limit_range_violations(message)
    assert found is not None
    assert [(v.resource, v.per, v.bound, v.enforced, v.field, v.actual) for v in found] == (
        violations
    )
    assert quota_refusal(message) is None


def test_other_refusals_carry_nothing() -> None:
    message = 'pods "web" is forbidden: User "bob" cannot patch resource "pods/resize"'
    assert quota_refusal(message) is None and limit_range_violations(message) is None
