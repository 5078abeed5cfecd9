"""Pure: the facts of a ResourceQuota or LimitRange refusal, read from its Kubernetes message.

Quota and LimitRange admission answer in kube-apiserver's fixed words (the quota role, or any
conformant webhook): "exceeded quota: NAME, requested: a=1,b=2, used: …, limited: …",
"failed quota: NAME: must specify …", "maximum cpu usage per Container is 1, but limit is 2".
The ResizeRefused event carries them as fields, so `inplace explain -o json` and scripts need
not parse prose."""

from __future__ import annotations

import re

from schemas import events as ev

__all__ = ["limit_range_violations", "quota_refusal"]

_EXCEEDED = re.compile(
    r"exceeded quota: (?P<quota>[^,\s]+), requested: (?P<requested>\S*), "
    r"used: (?P<used>\S*), limited: (?P<hard>\S*?)(?:$|[\s\]])"
)
_FAILED = re.compile(r"failed quota: (?P<quota>[^:\s]+): ")
_BOUND = re.compile(
    r"(?P<bound>minimum|maximum) (?P<resource>\S+) usage per (?P<per>\w+) is "
    r"(?P<enforced>[^,.\s]+(?:\.\d+)?)(?:, but (?P<field>request|limit) is (?P<actual>[^,\]\s]+)"
    r"|\.  No (?:request|limit) is specified)"
)
_RATIO = re.compile(
    r"(?P<resource>\S+) max limit to request ratio per (?P<per>\w+) is (?P<enforced>[^,\s]+), "
    r"but (?:provided ratio is (?P<actual>[0-9.]+)|no (?:request|limit) is specified)"
)


def _amounts(listed: str) -> dict[str, str]:
    """quota's prettyPrint, "limits.cpu=500m,requests.cpu=500m", as a mapping."""
    pairs = (item.split("=", 1) for item in listed.split(",") if "=" in item)
    return {name: value for name, value in pairs}


def quota_refusal(message: str) -> ev.QuotaRefusal | None:
    """The quota a refusal names, with the exceeded resources' requested/used/hard."""
    exceeded = _EXCEEDED.search(message)
    if exceeded is not None:
        return ev.QuotaRefusal(
            quota=exceeded["quota"],
            requested=_amounts(exceeded["requested"]),
            used=_amounts(exceeded["used"]),
            hard=_amounts(exceeded["hard"]),
        )
    failed = _FAILED.search(message)
    return ev.QuotaRefusal(quota=failed["quota"]) if failed is not None else None


def limit_range_violations(message: str) -> list[ev.LimitRangeViolation] | None:
    """Every LimitRange bound a refusal names (None: not a LimitRange refusal)."""
    found: list[tuple[int, ev.LimitRangeViolation]] = []
    for match in _BOUND.finditer(message):
        found.append(
            (
                match.start(),
                ev.LimitRangeViolation(
                    resource=match["resource"],
                    per=match["per"],
                    bound=match["bound"],  # type: ignore[arg-type]
                    enforced=match["enforced"],
                    field=match["field"],  # type: ignore[arg-type]
                    actual=match["actual"],
                ),
            )
        )
    for match in _RATIO.finditer(message):
        found.append(
            (
                match.start(),
                ev.LimitRangeViolation(
                    resource=match["resource"],
                    per=match["per"],
                    bound="maxLimitRequestRatio",
                    enforced=match["enforced"],
                    field="ratio" if match["actual"] else None,
                    actual=match["actual"],
                ),
            )
        )
    return [v for _, v in sorted(found, key=lambda f: f[0])] or None
