"""SelfSubjectAccessReview (`kubectl auth can-i`), SelfSubjectRulesReview (`kubectl auth can-i
--list`) and SelfSubjectReview (`kubectl auth whoami`): a user asks what they may do and who
they are; answered by the same authorizer as requests."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from services.apiserver import discovery, errors
from services.apiserver.auth.authorizer import Authorizer, Rules
from services.apiserver.auth.identity import UNSECURED, current_user
from services.apiserver.auth.requestinfo import RequestInfo
from services.apiserver.http import group_routes, ok, read_object

AUTHZ = "authorization.k8s.io"
AUTHN = "authentication.k8s.io"


def _text(spec: dict[str, Any], key: str) -> str:
    value = spec.get(key, "")
    if not isinstance(value, str):
        raise errors.bad_request(f"spec.{key}: must be a string")
    return value


def review_request_info(spec: Any) -> RequestInfo:
    """The attributes a SelfSubjectAccessReview asks about, as a request would carry them."""
    if not isinstance(spec, dict):
        raise errors.bad_request("spec: must be an object")
    resource = spec.get("resourceAttributes")
    path = spec.get("nonResourceAttributes")
    if isinstance(resource, dict) and path is None:
        return RequestInfo(
            verb=_text(resource, "verb"),
            path="",
            is_resource=True,
            api_group=_text(resource, "group"),
            api_version=_text(resource, "version"),
            resource=_text(resource, "resource"),
            subresource=_text(resource, "subresource"),
            namespace=_text(resource, "namespace"),
            name=_text(resource, "name"),
        )
    if isinstance(path, dict) and resource is None:
        return RequestInfo(verb=_text(path, "verb"), path=_text(path, "path"))
    raise errors.bad_request(
        "spec: exactly one of resourceAttributes or nonResourceAttributes is required"
    )


def rules_status(rules: Rules) -> dict[str, Any]:
    """A SubjectRulesReviewStatus: each rule split into its resource and non-resource parts,
    empty lists left out, as kube-apiserver's RBAC resolver reports them."""
    resource: list[dict[str, Any]] = []
    non_resource: list[dict[str, Any]] = []
    for rule in rules.rules:
        if rule.resources:
            entry: dict[str, Any] = {"verbs": rule.verbs, "apiGroups": rule.api_groups}
            entry["resources"] = rule.resources
            if rule.resource_names:
                entry["resourceNames"] = rule.resource_names
            resource.append(entry)
        if rule.non_resource_urls:
            non_resource.append({"verbs": rule.verbs, "nonResourceURLs": rule.non_resource_urls})
    status: dict[str, Any] = {
        "resourceRules": resource,
        "nonResourceRules": non_resource,
        "incomplete": rules.incomplete,
    }
    if rules.evaluation_error:
        status["evaluationError"] = rules.evaluation_error
    return status


async def _review_body(request: Request, kind: str) -> dict[str, Any]:
    """A `kind` review, in JSON or in protobuf as `kubectl auth can-i` sends it."""
    body = await read_object(request)
    if not isinstance(body, dict) or body.get("kind", kind) != kind:
        raise errors.bad_request(f"the body must be a {kind} object")
    return body


def review_routes(authorizer: Authorizer) -> list[Route]:
    async def access_review(request: Request) -> Response:
        body = await _review_body(request, "SelfSubjectAccessReview")
        spec = body.get("spec")
        info = review_request_info(spec)
        user = current_user() or UNSECURED
        decision = authorizer.authorize(user, info)
        status: dict[str, Any] = {"allowed": decision.allowed}
        if decision.reason:
            status["reason"] = decision.reason
        return ok(
            {
                "kind": "SelfSubjectAccessReview",
                "apiVersion": f"{AUTHZ}/v1",
                "metadata": {"creationTimestamp": None},
                "spec": spec,
                "status": status,
            },
            201,
        )

    async def rules_review(request: Request) -> Response:
        body = await _review_body(request, "SelfSubjectRulesReview")
        spec = body.get("spec")
        namespace = spec.get("namespace") if isinstance(spec, dict) else None
        if not isinstance(namespace, str) or not namespace:
            raise errors.bad_request("no namespace on request")  # kube-apiserver's words
        user = current_user() or UNSECURED
        return ok(
            {
                "kind": "SelfSubjectRulesReview",
                "apiVersion": f"{AUTHZ}/v1",
                "metadata": {"creationTimestamp": None},
                "spec": {"namespace": namespace},
                "status": rules_status(authorizer.rules_for(user, namespace)),
            },
            201,
        )

    async def self_review(request: Request) -> Response:
        user = current_user() or UNSECURED
        return ok(
            {
                "kind": "SelfSubjectReview",
                "apiVersion": f"{AUTHN}/v1",
                "metadata": {"creationTimestamp": None},
                "status": {"userInfo": {"username": user.username, "groups": list(user.groups)}},
            },
            201,
        )

    routes = [
        Route(f"/apis/{AUTHZ}/v1/selfsubjectaccessreviews", access_review, methods=["POST"]),
        Route(f"/apis/{AUTHZ}/v1/selfsubjectrulesreviews", rules_review, methods=["POST"]),
        Route(f"/apis/{AUTHN}/v1/selfsubjectreviews", self_review, methods=["POST"]),
    ]
    for group, resources in discovery.REVIEW_GROUPS.items():
        routes += group_routes(group, "v1", resources)
    return routes
