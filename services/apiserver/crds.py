"""apiextensions.k8s.io/v1, as a cluster with no custom resources has it: CustomResourceDefinitions
are listed (there are none), not created.

kube-apiserver always serves the group, and clients ask it whether a kind they do not find in
the OpenAPI documents is a custom resource: kubectl's field validation lists the CRDs before it
applies a manifest with such a kind (a Deployment, a Service), and stops at "failed to list
CRDs" when the list is a 404. Answered here, the manifest's kinds this server has are applied
and the others refused as any cluster without them refuses them ("no matches for kind"). A CRD
cannot be written: this server serves the kinds it was built with (405 MethodNotAllowed).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from services.apiserver import errors
from services.apiserver.discovery import EXTENSIONS_GROUP, EXTENSIONS_RESOURCES, EXTENSIONS_VERSION
from services.apiserver.http import group_routes, ok

KIND = "CustomResourceDefinition"
API_VERSION = f"{EXTENSIONS_GROUP}/{EXTENSIONS_VERSION}"
_WRITES = ["POST", "PUT", "PATCH", "DELETE"]


def crd_routes() -> list[Route]:
    base = f"/apis/{API_VERSION}/customresourcedefinitions"

    async def list_crds(request: Request) -> Response:
        return ok({"kind": f"{KIND}List", "apiVersion": API_VERSION, "metadata": {}, "items": []})

    async def get_crd(request: Request) -> Response:
        raise errors.not_found(KIND, request.path_params["name"])

    async def write_crd(request: Request) -> Response:
        raise errors.method_not_allowed(
            "this server has no custom resources: CustomResourceDefinitions cannot be written"
        )

    return [
        *group_routes(EXTENSIONS_GROUP, EXTENSIONS_VERSION, EXTENSIONS_RESOURCES),
        Route(base, list_crds, methods=["GET"]),
        Route(base, write_crd, methods=_WRITES),
        Route(f"{base}/{{name}}", get_crd, methods=["GET"]),
        Route(f"{base}/{{name}}", write_crd, methods=_WRITES),
    ]
