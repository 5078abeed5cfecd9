"""The admission webhook the apiserver calls on pod create and resize (POST /admit).

Decisions are `admission.admit` over the namespace's pods, quotas and limit ranges as the log
has them, plus the requests admitted but not yet in the log: two concurrent resizes in one
namespace cannot both pass a quota that only fits one, because each admitted request is
reserved (under a per-namespace lock) until its event arrives or the reservation expires.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections import defaultdict
from dataclasses import dataclass

import jsonpatch
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from inplace.core.bus.consumer import Record
from inplace.core.readmodel import ReadModel
from schemas import events as ev
from schemas.admission import AdmissionRequest, AdmissionResponse, AdmissionReview
from schemas.k8s import Pod, Status
from services.quota.admission import Allowed, admit

RESERVATION_TTL = 30.0  # seconds an admitted request may take to reach the log


@dataclass
class Reservation:
    pod: Pod
    expires: float


class QuotaWebhook:
    def __init__(self, model: ReadModel, ttl: float = RESERVATION_TTL) -> None:
        self.model = model
        self.ttl = ttl
        self._locks: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._reserved: defaultdict[str, dict[str, Reservation]] = defaultdict(dict)
        # Pod names per namespace, so a decision reads its namespace, not the whole cluster.
        self._names: defaultdict[str, set[str]] = defaultdict(set)
        model.on_apply(self._release)
        model.on_snapshot(self._seed)

    def _seed(self) -> None:
        for namespace, name in self.model.objects("pods"):
            self._names[namespace].add(name)

    def _release(self, record: Record) -> None:
        """The admitted write reached the log: the log now counts it; drop the reservation."""
        payload = record.envelope.payload
        if isinstance(payload, ev.PodCreated | ev.ResizeProposed | ev.PodDeleted):
            self._reserved[payload.namespace].pop(payload.name, None)
        if isinstance(payload, ev.PodCreated):
            self._names[payload.namespace].add(payload.name)

    def _namespace_pods(self, namespace: str) -> list[Pod]:
        now = time.monotonic()
        reserved = self._reserved[namespace]
        for name in [n for n, r in reserved.items() if r.expires < now]:
            del reserved[name]
        pods: dict[str, Pod] = {}
        for name in list(self._names[namespace]):
            pod = self.model.get("pods", (namespace, name))
            if pod is None:  # deleted since
                self._names[namespace].discard(name)
            else:
                pods[name] = pod
        pods.update({name: r.pod for name, r in reserved.items()})
        return list(pods.values())

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
        response = await self.review(review.request)
        return JSONResponse(AdmissionReview(response=response).to_k8s())

    async def review(self, req: AdmissionRequest) -> AdmissionResponse:
        if req.kind.kind != "Pod" or req.object is None:
            return AdmissionResponse(uid=req.uid, allowed=True)
        operation = "CREATE" if req.operation == "CREATE" else "RESIZE"
        if operation == "RESIZE" and req.sub_resource != "resize":
            return AdmissionResponse(uid=req.uid, allowed=True)
        pod = Pod.model_validate(req.object)
        old = Pod.model_validate(req.old_object) if req.old_object else None
        namespace = pod.metadata.namespace or req.namespace or "default"
        async with self._locks[namespace]:
            quotas = [
                q
                for (ns, _), q in sorted(self.model.objects("resourcequotas").items())
                if ns == namespace
            ]
            ranges = [
                r
                for (ns, _), r in sorted(self.model.objects("limitranges").items())
                if ns == namespace
            ]
            pods: list[Pod] = []
            if quotas:  # only a quota counts the namespace's pods (LimitRange is per pod)
                pods = [
                    p
                    for p in self._namespace_pods(namespace)
                    if p.metadata.name != pod.metadata.name
                ]
                if old is not None:
                    pods.append(old)
            decision = admit(quotas, ranges, pods, operation, old, pod)  # type: ignore[arg-type]
            if not isinstance(decision, Allowed):
                # The facts ride beside the words (schemas.admission: `refusal`), so the
                # apiserver records them on ResizeRefused without parsing the message.
                return AdmissionResponse(
                    uid=req.uid,
                    allowed=False,
                    status=decision.to_status(),
                    refusal=decision.facts(),
                )
            self._reserved[namespace][pod.metadata.name or ""] = Reservation(
                decision.pod, time.monotonic() + self.ttl
            )
        ops = jsonpatch.make_patch(pod.to_k8s(), decision.pod.to_k8s()).patch
        if not ops:
            return AdmissionResponse(uid=req.uid, allowed=True)
        return AdmissionResponse(
            uid=req.uid,
            allowed=True,
            patch=base64.b64encode(json.dumps(ops).encode()).decode(),
            patch_type="JSONPatch",
        )
