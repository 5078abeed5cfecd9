"""Pure: a ResourceQuota or LimitRange refusal's facts, as the ResizeRefused event keeps them.

The quota webhook answers a denial with its facts as data beside the message
(`AdmissionResponse.refusal`, schemas/admission.py); this maps them onto the event's fields.
The event keeps amounts as the strings the message prints ("500m"), so explain and scripts
read them as users see them."""

from __future__ import annotations

from schemas import events as ev
from schemas.admission import RefusalFacts
from schemas.k8s import ResourceList

__all__ = ["refused_by"]


def _amounts(resources: ResourceList) -> dict[str, str]:
    return {name: str(quantity) for name, quantity in resources.items()}


def refused_by(
    refusal: RefusalFacts | None,
) -> tuple[ev.QuotaRefusal | None, list[ev.LimitRangeViolation] | None]:
    """The quota and the LimitRange bounds a webhook's reply names (None: it names none)."""
    if refusal is None:
        return None, None
    quota = None
    if refusal.quota is not None:
        quota = ev.QuotaRefusal(
            quota=refusal.quota.name,
            requested=_amounts(refusal.quota.requested),
            used=_amounts(refusal.quota.used),
            hard=_amounts(refusal.quota.hard),
        )
    bounds = [
        ev.LimitRangeViolation(
            resource=v.resource,
            per=v.per,
            bound=v.bound,
            enforced=str(v.enforced),
            field=v.field,
            actual=v.actual,
        )
        for v in refusal.limit_range or []
    ]
    return quota, bounds or None
