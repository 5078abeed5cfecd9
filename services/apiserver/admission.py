"""Calls the quota service synchronously, like a validating/mutating admission webhook.

failurePolicy is Fail: when the quota service cannot be reached the write is refused with
Kubernetes' "failed calling webhook" InternalError, never silently admitted.
"""

from __future__ import annotations

import base64
import json
import logging
import ssl
import uuid
from collections.abc import Callable
from typing import Any, Literal

import httpx
import jsonpatch
from pydantic import ValidationError

from inplace.core.readmodel import APPLIED_HEADER
from schemas.admission import AdmissionRequest, AdmissionReview, GroupVersionKind, RefusalFacts
from schemas.k8s import Pod, Status
from services.apiserver import dryrun, errors

log = logging.getLogger(__name__)
WEBHOOK = "quota.inplace.io"


class AdmissionDenied(errors.ApiError):
    """The webhook said no: its Status for the client, and the facts it gave as data
    (`refusal`) for the ResizeRefused event."""

    def __init__(self, status: Status, refusal: RefusalFacts | None) -> None:
        super().__init__(status)
        self.refusal = refusal


class AdmissionClient:
    """`applies(namespace)` is the webhook's namespace selector: the quota webhook only
    matters where a ResourceQuota or LimitRange exists, so elsewhere it is not called (as
    kube-apiserver's in-process ResourceQuota/LimitRanger plugins are no-ops there)."""

    def __init__(
        self,
        url: str | None,
        timeout_s: float = 10.0,
        applies: Callable[[str], bool] = lambda namespace: True,
        tls: ssl.SSLContext | bool = True,
        progress: Callable[[], str] = lambda: "",
    ) -> None:
        """`progress`: how far this apiserver has applied the policy log (`ReadModel.progress`),
        sent with each review so the webhook answers from a view no older than ours: a
        LimitRange or quota we showed a client is one the webhook applies."""
        self.url = url.rstrip("/") if url else None
        self.applies = applies
        self.progress = progress
        self._client = httpx.AsyncClient(timeout=timeout_s, verify=tls)
        if not self.url:
            log.warning("no quota admission URL: ResourceQuota/LimitRange are not enforced")

    async def close(self) -> None:
        await self._client.aclose()

    async def admit_pod(
        self,
        operation: Literal["CREATE", "UPDATE"],
        pod: Pod,
        old: Pod | None = None,
        sub_resource: str | None = None,
    ) -> Pod:
        """Allowed → the pod (with the webhook's JSON Patch applied); denied → ApiError."""
        if not self.url or not self.applies(pod.metadata.namespace or "default"):
            return pod
        obj = pod.to_k8s()
        review = AdmissionReview(
            request=AdmissionRequest(
                uid=str(uuid.uuid4()),
                kind=GroupVersionKind(kind="Pod"),
                resource={"group": "", "version": "v1", "resource": "pods"},
                sub_resource=sub_resource,
                name=pod.metadata.name,
                namespace=pod.metadata.namespace,
                operation=operation,
                object=obj,
                old_object=old.to_k8s() if old else None,
                dry_run=dryrun.active(),
            )
        )
        try:
            reply = await self._client.post(
                f"{self.url}/admit", json=review.to_k8s(), headers={APPLIED_HEADER: self.progress()}
            )
            reply.raise_for_status()
            answer = AdmissionReview.model_validate(reply.json()).response
        except (httpx.HTTPError, ValueError, ValidationError) as exc:
            raise errors.internal(f'failed calling webhook "{WEBHOOK}": {exc}') from None
        if answer is None:
            raise errors.internal(f'webhook "{WEBHOOK}" returned no response')
        if not answer.allowed:
            status = answer.status
            message = status.message if status and status.message else "denied"
            code = status.code if status and status.code else 403
            if code == 403:
                error = errors.forbidden(message, kind="pods", name=pod.metadata.name)
            else:
                error = errors.ApiError(status) if status else errors.forbidden(message)
            # A reply without `refusal` (a quota role from before it, any other webhook) is
            # still a denial: it is recorded with no facts. Reading them from the message
            # instead would tie the event to the wording of whichever webhook answered.
            raise AdmissionDenied(error.status, answer.refusal)
        if answer.patch:
            return Pod.model_validate(_apply(obj, answer.patch))
        return pod


def _apply(obj: dict[str, Any], patch_b64: str) -> dict[str, Any]:
    try:
        ops = json.loads(base64.b64decode(patch_b64))
        patched: dict[str, Any] = jsonpatch.apply_patch(obj, ops)
        return patched
    except (ValueError, jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
        raise errors.internal(f'webhook "{WEBHOOK}" returned an invalid patch: {exc}') from None
