"""Kinds every Kubernetes cluster serves that this one holds none of: they are listed (empty),
a name is not found, a write is refused with why (405 MethodNotAllowed).

Clients ask for them before they do what a user asked: kubectl's field validation lists the
CustomResourceDefinitions before it applies a manifest with a kind the OpenAPI documents lack
(it stopped at "failed to list CRDs" on a 404), and `kubectl cluster-info` lists the Services
of kube-system to say where the control plane runs (it failed with "the server doesn't have a
resource type services"). Answered, a manifest's kinds this server has are applied and the
others refused, as any cluster without them refuses them, and cluster-info says where the
apiserver is.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from services.apiserver import discovery, errors
from services.apiserver.http import group_routes, ok, table_response, wants_table
from services.apiserver.tables import table

_WRITES = ["POST", "PUT", "PATCH", "DELETE"]
Endpoint = Callable[[Request], Awaitable[Response]]


@dataclass(frozen=True)
class EmptyKind:
    api_version: str  # "v1", "apiextensions.k8s.io/v1"
    resource: str
    kind: str
    namespaced: bool
    why: str  # the 405's message: why none can be written

    @property
    def prefix(self) -> str:
        return "/api/v1" if self.api_version == "v1" else f"/apis/{self.api_version}"


KINDS = (
    EmptyKind(
        f"{discovery.EXTENSIONS_GROUP}/{discovery.EXTENSIONS_VERSION}",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        False,
        "this server has no custom resources: CustomResourceDefinitions cannot be written",
    ),
    EmptyKind(
        "v1",
        "services",
        "Service",
        True,
        "this cluster runs no Service network (no kube-proxy, no cluster IPs): "
        "Services cannot be written",
    ),
)


def empty_kind_routes() -> list[Route]:
    routes = group_routes(
        discovery.EXTENSIONS_GROUP, discovery.EXTENSIONS_VERSION, discovery.EXTENSIONS_RESOURCES
    )
    for kind in KINDS:
        every = f"{kind.prefix}/{kind.resource}"
        some = (
            f"{kind.prefix}/namespaces/{{namespace}}/{kind.resource}" if kind.namespaced else every
        )
        routes += [
            Route(every, _lister(kind), methods=["GET"]),
            Route(some, _lister(kind), methods=["GET"]),
            Route(some, _refuser(kind), methods=_WRITES),
            Route(f"{some}/{{name}}", _getter(kind), methods=["GET"]),
            Route(f"{some}/{{name}}", _refuser(kind), methods=_WRITES),
        ]
    return routes


def _lister(kind: EmptyKind) -> Endpoint:
    async def empty_list(request: Request) -> Response:
        if request.query_params.get("watch") in ("true", "1"):  # not among their verbs
            raise errors.method_not_allowed(f"{kind.resource} are never held here: no watch")
        asked = wants_table(request)
        if asked is not None:  # kubectl get: the columns, no rows
            return table_response(table(kind.kind, [], asked, datetime.now(UTC)), asked)
        return ok({"kind": f"{kind.kind}List", "apiVersion": kind.api_version,
                   "metadata": {}, "items": []})  # fmt: skip

    return empty_list


def _getter(kind: EmptyKind) -> Endpoint:
    async def not_found(request: Request) -> Response:
        raise errors.not_found(kind.kind, request.path_params["name"])

    return not_found


def _refuser(kind: EmptyKind) -> Endpoint:
    async def refused(request: Request) -> Response:
        raise errors.method_not_allowed(kind.why)

    return refused
