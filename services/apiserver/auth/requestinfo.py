"""What a request asks for, in the terms authorization speaks: verb, group, resource,
subresource, namespace, name (kube-apiserver's RequestInfo); or a non-resource path."""

from __future__ import annotations

from dataclasses import dataclass

_NAMESPACE_SUBRESOURCES = ("status", "finalize")
_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


@dataclass(frozen=True)
class RequestInfo:
    verb: str
    path: str
    is_resource: bool = False
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""

    @property
    def full_resource(self) -> str:
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


def request_info(method: str, path: str, query: dict[str, str]) -> RequestInfo:
    parts = [p for p in path.split("/") if p]
    read = method in ("GET", "HEAD")
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        rest = []
    if not rest:  # discovery, OpenAPI, /version, health: non-resource URLs
        return RequestInfo(verb=method.lower() if not read else "get", path=path)
    watch = query.get("watch") in ("true", "1")
    if rest[0] == "watch":  # the deprecated /watch/ prefix
        rest, watch = rest[1:], True
    namespace = ""
    if rest[0] == "namespaces" and len(rest) >= 2:
        # /namespaces/{ns}/{resource}/… is namespaced; /namespaces/{ns}[/status|/finalize] is
        # the namespace itself, scoped to itself (as kube-apiserver's RequestInfo does).
        namespace = rest[1]
        if len(rest) >= 3 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) >= 2 else ""
    subresource = rest[2] if len(rest) >= 3 else ""
    if read:
        verb = "watch" if watch else ("get" if name else "list")
    else:
        verb = _VERBS.get(method, method.lower())
        if verb == "delete" and not name:
            verb = "deletecollection"
    return RequestInfo(
        verb=verb,
        path=path,
        is_resource=True,
        api_group=group,
        api_version=version,
        resource=resource,
        subresource=subresource,
        namespace=namespace,
        name=name,
    )
