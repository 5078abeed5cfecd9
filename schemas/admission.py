"""admission.k8s.io/v1 AdmissionReview: how the apiserver asks the quota service, like a
validating + mutating admission webhook (LimitRange defaults come back as a JSON Patch).

One extension: a denial may carry `response.refusal`, the policy's facts as data beside
`status.message` (which stays kube-apiserver's words, shown to users as is). Kubernetes has no
field for them: `status.details.causes` holds strings only, and the Status is what the client
gets back, so the facts ride next to it. kube-apiserver ignores unknown response fields, and
a reply without `refusal` (an older quota role, any other webhook) is still a valid answer."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from schemas.base import K8sModel
from schemas.k8s import ResourceList, Status
from schemas.quantity import Quantity


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


class QuotaFacts(K8sModel):
    """The ResourceQuota that refused, with the exceeded resources' amounts (what the request
    adds, what is used, the hard limit); all empty for a "must specify" refusal."""

    name: str = Field(min_length=1)
    requested: ResourceList = Field(default_factory=dict)
    used: ResourceList = Field(default_factory=dict)
    hard: ResourceList = Field(default_factory=dict)


class LimitRangeFacts(K8sModel):
    """One LimitRange bound broken: "maximum cpu usage per Container is 1, but limit is 2" is
    resource cpu, per Container, bound maximum, enforced 1, field limit, actual 2."""

    resource: str = Field(min_length=1)
    per: str = Field(min_length=1)  # Container | Pod
    bound: Literal["minimum", "maximum", "maxLimitRequestRatio"]
    enforced: Quantity
    field: Literal["request", "limit", "ratio"] | None = None  # None: none specified
    actual: str | None = None  # a quantity, or the ratio as printed ("4.000000")


class RefusalFacts(K8sModel):
    """Why a denial denied, as data: the quota exceeded, or the LimitRange bounds broken."""

    quota: QuotaFacts | None = None
    limit_range: list[LimitRangeFacts] | None = None


class AdmissionResponse(K8sModel):
    uid: str
    allowed: bool
    status: Status | None = None
    refusal: RefusalFacts | None = None  # inplace extension: see the module docstring
    patch: str | None = None  # base64 of a JSON Patch (RFC 6902)
    patch_type: Literal["JSONPatch"] | None = None
    warnings: list[str] | None = None


class AdmissionReview(K8sModel):
    api_version: Literal["admission.k8s.io/v1"] = "admission.k8s.io/v1"
    kind: Literal["AdmissionReview"] = "AdmissionReview"
    request: AdmissionRequest | None = None
    response: AdmissionResponse | None = None
