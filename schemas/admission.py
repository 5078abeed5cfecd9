"""admission.k8s.io/v1 AdmissionReview: how the apiserver asks the quota service, like a
validating + mutating admission webhook (LimitRange defaults come back as a JSON Patch)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from schemas.base import K8sModel
from schemas.k8s import Status


class GroupVersionKind(K8sModel):
    group: str = ""
    version: str = "v1"
    kind: str


class AdmissionRequest(K8sModel):
    uid: str
    kind: GroupVersionKind
    resource: dict[str, str] = Field(default_factory=dict)
    sub_resource: str | None = None
    name: str | None = None
    namespace: str | None = None
    operation: Literal["CREATE", "UPDATE", "DELETE", "CONNECT"]
    object: dict[str, Any] | None = None
    old_object: dict[str, Any] | None = None
    dry_run: bool = False


class AdmissionResponse(K8sModel):
    uid: str
    allowed: bool
    status: Status | None = None
    patch: str | None = None  # base64 of a JSON Patch (RFC 6902)
    patch_type: Literal["JSONPatch"] | None = None
    warnings: list[str] | None = None


class AdmissionReview(K8sModel):
    api_version: Literal["admission.k8s.io/v1"] = "admission.k8s.io/v1"
    kind: Literal["AdmissionReview"] = "AdmissionReview"
    request: AdmissionRequest | None = None
    response: AdmissionResponse | None = None
