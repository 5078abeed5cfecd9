"""The apiserver's routes, and errors turned into Kubernetes `Status` bodies."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from services.apiserver import discovery, errors, openapiproto
from services.apiserver.discovery import POLICY_RESOURCES
from services.apiserver.dryrun import DryRun
from services.apiserver.emptykinds import empty_kind_routes
from services.apiserver.http import WarningHeaders, group_routes
from services.apiserver.objects import KINDS, ObjectHandlers
from services.apiserver.openapi import JSON, OpenAPIDocuments, v2_media_type
from services.apiserver.pods import PodHandlers
from services.apiserver.workloads import CloneSetHandlers, workload_routes

log = logging.getLogger(__name__)
Handler = Callable[[Request], Awaitable[Response]]

CLUSTER_SCOPED = ("nodes", "namespaces")
NAMESPACED = ("resourcequotas", "limitranges", "events")
# Served under their group's path (/apis/<group>/<version>), by the same handlers.
GROUPED = {"poddisruptionbudgets": "/apis/policy/v1"}


def _only(resources: tuple[str, ...], handler: Handler) -> Handler:
    async def guarded(request: Request) -> Response:
        if request.path_params["resource"] not in resources:
            raise errors.path_not_found(request.url.path)
        return await handler(request)

    return guarded


def build_app(
    pods: PodHandlers,
    objects: ObjectHandlers,
    server_address: str,
    clonesets: CloneSetHandlers | None = None,
    extra_routes: list[Route] | None = None,
) -> Starlette:
    async def version(request: Request) -> Response:
        return JSONResponse(discovery.version())

    async def api(request: Request) -> Response:
        return JSONResponse(discovery.api_versions(server_address))

    async def api_v1(request: Request) -> Response:
        return JSONResponse(discovery.api_v1())

    async def apis(request: Request) -> Response:
        return JSONResponse(discovery.apis())

    openapi = OpenAPIDocuments()

    async def openapi_v2(request: Request) -> Response:
        media_type = v2_media_type(request.headers.get("accept"))
        if media_type is None:
            raise errors.not_acceptable(
                f"/openapi/v2 is served as {JSON} or {openapiproto.MEDIA_TYPE}"
            )
        body, etag = openapi.v2(media_type)
        return _document(request, body, etag, media_type)

    async def openapi_v3(request: Request) -> Response:
        return Response(openapi.v3_root(), media_type="application/json")

    async def openapi_v3_group(request: Request) -> Response:
        found = openapi.v3(request.path_params["path"])
        if found is None:
            raise errors.path_not_found(request.url.path)
        return _document(request, *found)

    ns_pods = "/api/v1/namespaces/{namespace}/pods"
    routes = [
        Route("/openapi/v2", openapi_v2),
        Route("/openapi/v3", openapi_v3),
        Route("/openapi/v3/{path:path}", openapi_v3_group),
        Route("/version", version),
        Route("/api", api),
        Route("/api/v1", api_v1),
        Route("/apis", apis),
        Route("/api/v1/pods", pods.list),
        Route(ns_pods, pods.list, methods=["GET"]),
        Route(ns_pods, pods.create, methods=["POST"]),
        Route(ns_pods + "/{name}", pods.get, methods=["GET"]),
        Route(ns_pods + "/{name}", pods.update, methods=["PUT", "PATCH"]),
        Route(ns_pods + "/{name}", pods.delete, methods=["DELETE"]),
        Route(ns_pods + "/{name}/status", pods.status, methods=["GET"]),
        Route(ns_pods + "/{name}/log", pods.log, methods=["GET"]),
        Route(ns_pods + "/{name}/resize", pods.resize, methods=["GET", "PUT", "PATCH"]),
        Route(ns_pods + "/{name}/eviction", pods.evict, methods=["POST"]),
        *(
            Route(f"{ns_pods}/{{name}}/{what}", pods.connect, methods=["GET", "POST"])
            for what in ("exec", "attach", "portforward")
        ),
        Route("/api/v1/nodes/{name}/status", _of("nodes", objects.get), methods=["GET"]),
        Route(
            "/api/v1/namespaces/{namespace}/resourcequotas/{name}/status",
            _of("resourcequotas", objects.get),
            methods=["GET"],
        ),
        *empty_kind_routes(),  # before /api/v1/{resource}, which would take services
        Route(
            "/api/v1/{resource}", _only(CLUSTER_SCOPED + NAMESPACED, objects.list), methods=["GET"]
        ),
        Route("/api/v1/{resource}", _only(CLUSTER_SCOPED, objects.create), methods=["POST"]),
        Route("/api/v1/{resource}/{name}", _only(CLUSTER_SCOPED, objects.get), methods=["GET"]),
        Route(
            "/api/v1/{resource}/{name}",
            _only(CLUSTER_SCOPED, objects.update),
            methods=["PUT", "PATCH"],
        ),
        Route(
            "/api/v1/{resource}/{name}", _only(CLUSTER_SCOPED, objects.delete), methods=["DELETE"]
        ),
        Route(
            "/api/v1/namespaces/{namespace}/{resource}",
            _only(NAMESPACED, objects.list),
            methods=["GET"],
        ),
        Route(
            "/api/v1/namespaces/{namespace}/{resource}",
            _only(NAMESPACED, objects.create),
            methods=["POST"],
        ),
        Route(
            "/api/v1/namespaces/{namespace}/{resource}/{name}",
            _only(NAMESPACED, objects.get),
            methods=["GET"],
        ),
        Route(
            "/api/v1/namespaces/{namespace}/{resource}/{name}",
            _only(NAMESPACED, objects.update),
            methods=["PUT", "PATCH"],
        ),
        Route(
            "/api/v1/namespaces/{namespace}/{resource}/{name}",
            _only(NAMESPACED, objects.delete),
            methods=["DELETE"],
        ),
    ]
    routes += grouped_routes(objects)
    routes += group_routes(discovery.POLICY_GROUP, discovery.POLICY_VERSION, POLICY_RESOURCES)
    if clonesets is not None:
        routes += workload_routes(clonesets)
    routes += extra_routes or []
    return Starlette(
        routes=routes,
        middleware=[Middleware(DryRun), Middleware(WarningHeaders)],
        exception_handlers={
            errors.ApiError: _api_error,
            HTTPException: _http_error,
            Exception: _unexpected,
        },
    )


def _document(request: Request, body: bytes, digest: str, media_type: str = JSON) -> Response:
    """An OpenAPI document with kube-apiserver's caching: an ETag always, and immutable
    when the client asked for it by hash (the hash changes when the document does)."""
    etag = f'"{digest}"'
    headers = {"ETag": etag, "Vary": "Accept"}
    if request.query_params.get("hash") == digest:
        headers["Cache-Control"] = "public, immutable"
    else:
        headers["Cache-Control"] = "no-cache, private"
    if request.headers.get("if-none-match") == etag:
        return Response(status_code=304, headers=headers)
    return Response(body, media_type=media_type, headers=headers)


def grouped_routes(objects: ObjectHandlers) -> list[Route]:
    """Each grouped kind's list (all namespaces or one), object and status routes."""
    routes = []
    for resource, prefix in GROUPED.items():
        every = f"{prefix}/{resource}"
        some = f"{prefix}/namespaces/{{namespace}}/{resource}"
        one = some + "/{name}"
        routes += [
            Route(every, _of(resource, objects.list), methods=["GET"]),
            Route(some, _of(resource, objects.list), methods=["GET"]),
            Route(some, _of(resource, objects.create), methods=["POST"]),
            Route(one, _of(resource, objects.get), methods=["GET"]),
            Route(one, _of(resource, objects.update), methods=["PUT", "PATCH"]),
            Route(one, _of(resource, objects.delete), methods=["DELETE"]),
            Route(one + "/status", _of(resource, objects.get), methods=["GET"]),
        ]
    return routes


def _of(resource: str, handler: Handler) -> Handler:
    """`handler` for `resource`, on a path that names it literally."""

    async def handle(request: Request) -> Response:
        request.path_params["resource"] = resource
        return await handler(request)

    return handle


def _respond(error: errors.ApiError) -> Response:
    return JSONResponse(error.status.to_k8s(), status_code=error.code)


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, errors.ApiError)
    return _respond(exc)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        return _respond(errors.path_not_found(request.url.path))
    if exc.status_code == 405:
        return _respond(errors.method_not_allowed())
    return _respond(errors.bad_request(str(exc.detail)))


async def _unexpected(request: Request, exc: Exception) -> Response:
    # Never a stack trace to the client; the log keeps it for the operator.
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return _respond(errors.internal("an unexpected error; see the apiserver log"))


assert set(KINDS) == {*CLUSTER_SCOPED, *NAMESPACED, *GROUPED}
