"""The admission webhook the apiserver calls on pod create and resize (POST /admit).

Decisions are `admission.admit` over the namespace's pods, quotas and limit ranges as the log
has them, plus the requests admitted but not yet in the log: two concurrent resizes in one
namespace cannot both pass a quota that only fits one, because each admitted request is
reserved until its event arrives or the reservation expires.

The apiserver says how far it has applied the policy log (`APPLIED_HEADER`): the decision
waits until this view is as far (at most CATCH_UP_S), so a LimitRange or quota the apiserver
already showed a client is applied here too (a pod created right after its namespace's
LimitRange gets the defaults; the apiserver called us because it saw the LimitRange).

A quota's usage is the namespace's running totals (`totals.UsageTotals`) with the pods that have
a request in flight counted as that request, and the admitted pod as it is now: O(containers
of those pods) per decision, where summing every pod of the namespace was O(pods). Right after
a namespace's first quota its pods are still being read (namespaces.py): a decision waits for
them (at most HELD_WITHIN_S), else it is kube-apiserver's "status unknown for quota".
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
from collections import defaultdict
from dataclasses import dataclass, field

import jsonpatch
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from inplace.core.bus.consumer import Record
from inplace.core.readmodel import APPLIED_HEADER, ReadModel
from schemas import events as ev
from schemas.admission import AdmissionRequest, AdmissionResponse, AdmissionReview
from schemas.k8s import Pod, ResourceList, ResourceQuota, Status
from services.quota.admission import Allowed, QuotaUsage, admit, usage_unknown
from services.quota.totals import Charge, UsageTotals, charge

RESERVATION_TTL = 30.0  # seconds an admitted request may take to reach the log
CATCH_UP_S = 3.0  # the longest wait for the policy log the apiserver has applied
# The longest wait for a namespace's pods to be taken over at its first quota, within the
# apiserver's 10 s for the whole call; then "status unknown for quota", as kube-apiserver says
# while a quota's usage is not counted yet.
HELD_WITHIN_S = 8.0
log = logging.getLogger(__name__)


@dataclass
class Reservation:
    pod: Pod
    expires: float
    charge: Charge = field(init=False)  # what `pod` charges, computed once

    def __post_init__(self) -> None:
        self.charge = charge(self.pod)


class QuotaWebhook:
    def __init__(
        self,
        model: ReadModel,
        ttl: float = RESERVATION_TTL,
        totals: UsageTotals | None = None,
        held_within: float = HELD_WITHIN_S,
    ) -> None:
        self.model = model
        self.ttl = ttl
        self.held_within = held_within
        # Shared with the status loop in the role (one index); built here when not given.
        self.totals = totals if totals is not None else UsageTotals(model)
        self._reserved: defaultdict[str, dict[str, Reservation]] = defaultdict(dict)
        model.on_apply(self._release)

    def _release(self, record: Record) -> None:
        """The admitted write reached the log: the log now counts it; drop the reservation."""
        payload = record.envelope.payload
        if isinstance(payload, ev.PodCreated | ev.ResizeProposed | ev.PodDeleted):
            reserved = self._reserved.get(payload.namespace)
            if reserved is not None:
                reserved.pop(payload.name, None)

    def _usage(self, namespace: str, name: str, old: Pod | None) -> QuotaUsage:
        """What a quota of `namespace` counts when `name` is admitted: every pod as the log has
        it, except that a pod with an unexpired reservation counts as its reserved request, and
        the admitted pod counts as `old` (nothing on create). As the pods were summed before."""
        now = time.monotonic()
        reserved = self._reserved[namespace]
        for expired in [n for n, r in reserved.items() if r.expires < now]:
            del reserved[expired]
        without: list[Charge] = []
        for replaced in {*reserved, name}:
            logged = self.totals.charge_of(namespace, replaced)
            if logged is not None:
                without.append(logged)
        plus = [r.charge for n, r in reserved.items() if n != name]
        if old is not None:
            plus.append(charge(old))

        def used(quota: ResourceQuota) -> ResourceList:
            return self.totals.used(namespace, quota, without=without, plus=plus)

        return used

    async def handle(self, request: Request) -> Response:
        try:
            review = AdmissionReview.model_validate(json.loads(await request.body()))
        except (ValueError, ValidationError) as exc:
            return JSONResponse(
                Status(
                    status="Failure",
                    code=400,
                    reason="BadRequest",
                    message=f"not an AdmissionReview: {exc}",
                ).to_k8s(),
                status_code=400,
            )
        if review.request is None:
            return JSONResponse({"message": "AdmissionReview has no request"}, status_code=400)
        self.model.hurry()  # the apiserver waits on this view: no held fetches for a while
        await self._catch_up(request.headers.get(APPLIED_HEADER, ""))
        response = await self.review(review.request)
        return JSONResponse(AdmissionReview(response=response).to_k8s())

    async def _catch_up(self, progress: str) -> None:
        """Apply the policy log as far as the calling apiserver has; decide anyway after
        CATCH_UP_S (saying so) or on a malformed header (only our apiserver sends it)."""
        try:
            await self.model.catch_up_to(
                self.model.settings.topic(ev.POLICY), progress, within=CATCH_UP_S
            )
        except TimeoutError:
            log.warning("deciding on a view of the policy log older than the apiserver's")
        except ValueError:
            log.warning("ignoring a malformed %s header: %r", APPLIED_HEADER, progress)

    async def review(self, req: AdmissionRequest) -> AdmissionResponse:
        if req.kind.kind != "Pod" or req.object is None:
            return AdmissionResponse(uid=req.uid, allowed=True)
        operation = "CREATE" if req.operation == "CREATE" else "RESIZE"
        if operation == "RESIZE" and req.sub_resource != "resize":
            return AdmissionResponse(uid=req.uid, allowed=True)
        pod = Pod.model_validate(req.object)
        old = Pod.model_validate(req.old_object) if req.old_object else None
        namespace = pod.metadata.namespace or req.namespace or "default"
        try:  # a quota just created: its pods are being taken over
            async with asyncio.timeout(self.held_within):
                await self.totals.until_held(namespace)
        except TimeoutError:
            log.warning("namespace %s: its pods are not all read yet", namespace)
        # No lock: from reading the usage to reserving the admitted request nothing below
        # awaits, so on the one event loop no other admission and no batch of the log can come
        # in between; concurrent requests are decided one after the other, each counting the
        # reservations of those before it. (Any await added here needs a per-namespace lock.)
        quotas = [
            q
            for (ns, _), q in sorted(self.model.objects("resourcequotas").items())
            if ns == namespace
        ]
        ranges = [
            r for (ns, _), r in sorted(self.model.objects("limitranges").items()) if ns == namespace
        ]
        if quotas and not self.totals.holds(namespace):
            unknown = usage_unknown(quotas, pod)
            if unknown is not None:
                return AdmissionResponse(uid=req.uid, allowed=False, status=unknown.to_status())
        name = pod.metadata.name or ""
        used = self._usage(namespace, name, old) if quotas else None
        decision = admit(quotas, ranges, (), operation, old, pod, used=used)  # type: ignore[arg-type]
        if not isinstance(decision, Allowed):
            # The facts ride beside the words (schemas.admission: `refusal`), so the
            # apiserver records them on ResizeRefused without parsing the message.
            return AdmissionResponse(
                uid=req.uid,
                allowed=False,
                status=decision.to_status(),
                refusal=decision.facts(),
            )
        if not req.dry_run:  # a dry run's write never comes to release it
            self._reserved[namespace][name] = Reservation(decision.pod, time.monotonic() + self.ttl)
        if decision.pod is pod:  # a resize is admitted unchanged: nothing to patch
            return AdmissionResponse(uid=req.uid, allowed=True)
        ops = jsonpatch.make_patch(pod.to_k8s(), decision.pod.to_k8s()).patch
        if not ops:
            return AdmissionResponse(uid=req.uid, allowed=True)
        return AdmissionResponse(
            uid=req.uid,
            allowed=True,
            patch=base64.b64encode(json.dumps(ops).encode()).decode(),
            patch_type="JSONPatch",
        )
