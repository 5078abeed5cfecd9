"""apps.inplace.dev/v1alpha1 CloneSets: list/watch, CRUD, and the `status` and `scale`
subresources, as kube-apiserver serves a custom resource with both subresources enabled.

The main resource never changes status and the status subresource never changes spec
(Kubernetes' rule), so the workload controller and users never overwrite each other.
"""

from __future__ import annotations

import uuid
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from inplace.core.readmodel import ReadModel
from schemas import events as ev
from schemas.workload import API_VERSION, KIND, CloneSet, CloneSetStatus
from services.apiserver import discovery, dryrun, errors
from services.apiserver.fielderrors import FieldError, invalid, invalid_status
from services.apiserver.http import (
    applied_new_object,
    apply_config,
    check_kind,
    decode,
    is_apply,
    list_or_watch,
    ok,
    ok_object,
    parse_json,
    read_body,
    requested,
    server_side_apply_request,
)
from services.apiserver.namespaces import admit_content
from services.apiserver.openapi import CLONESET_DEFINITION, all_definitions
from services.apiserver.workloadvalidation import validate_clone_set
from services.apiserver.writer import Writer

COLLECTION = "clonesets"
PREFIX = "/apis/apps.inplace.dev/v1alpha1"


def _check_api_version(data: Any) -> None:
    if isinstance(data, dict) and data.get("apiVersion") not in (None, API_VERSION):
        raise errors.bad_request(
            f"the API version in the data ({data.get('apiVersion')}) does not match the "
            f"expected API version ({API_VERSION})"
        )


def _decode(data: Any) -> CloneSet:
    if isinstance(data, dict):
        check_kind({k: v for k, v in data.items() if k != "apiVersion"}, KIND)
    _check_api_version(data)
    return decode(CloneSet, data, KIND)


class CloneSetHandlers:
    def __init__(self, model: ReadModel, writer: Writer) -> None:
        self.model = model
        self.writer = writer

    def _get(self, namespace: str, name: str) -> CloneSet:
        key = (namespace, name)
        obj = dryrun.result(COLLECTION, key, self.model.get(COLLECTION, key))
        if obj is None:
            raise errors.not_found(KIND, name)
        assert isinstance(obj, CloneSet)
        return obj

    def _current(self, namespace: str, name: str) -> Response:
        return ok(self._get(namespace, name).to_k8s())

    @staticmethod
    def _where(request: Request) -> tuple[str, str]:
        return request.path_params["namespace"], request.path_params["name"]

    def _incoming(self, request: Request, body: bytes, current: CloneSet) -> CloneSet:
        """PUT's body or the patched current object; a stale resourceVersion is a 409."""
        new = _decode(requested(request, body, current.to_k8s(), KIND))
        name = current.metadata.name or ""
        if new.metadata.name not in (None, name) or new.metadata.namespace not in (
            None,
            current.metadata.namespace,
        ):
            raise errors.bad_request(
                "the name or namespace of the object does not match the request"
            )
        rv = new.metadata.resource_version
        if request.method == "PUT" and not rv:
            raise errors.ApiError(
                invalid_status(
                    KIND,
                    name,
                    [invalid("metadata.resourceVersion", "", "must be specified for an update")],
                )
            )
        if rv and rv != current.metadata.resource_version:
            raise errors.stale(KIND, name)
        return new

    def _check(self, cs: CloneSet) -> None:
        problems = validate_clone_set(cs)
        if problems:
            raise errors.ApiError(invalid_status(KIND, cs.metadata.name or "", problems))

    # --- collection -------------------------------------------------------------------------

    async def list(self, request: Request) -> Response:
        namespace = request.path_params.get("namespace")
        items = self.model.objects(COLLECTION).items()  # ordered by the Listing
        objects = [o.to_k8s() for k, o in items if namespace is None or k[0] == namespace]
        return list_or_watch(
            request,
            self.model.collections[COLLECTION],
            objects,
            "CloneSetList",
            namespace,
            api_version=API_VERSION,
        )

    async def create(self, request: Request) -> Response:
        namespace = request.path_params["namespace"]
        return await self._create(namespace, _decode(parse_json(await read_body(request))))

    async def _create(self, namespace: str, cs: CloneSet) -> Response:
        meta = cs.metadata
        if meta.namespace not in (None, namespace):
            raise errors.bad_request(
                "the namespace of the provided object does not match "
                "the namespace sent on the request"
            )
        meta.namespace = namespace
        if not meta.name and meta.generate_name:
            meta.name = meta.generate_name + uuid.uuid4().hex[:5]
        if not meta.name:
            raise errors.ApiError(
                invalid_status(KIND, "", [FieldError("FieldValueRequired", "metadata.name")])
            )
        meta.uid = str(uuid.uuid4())
        meta.resource_version = None
        meta.generation = None
        cs.status = CloneSetStatus()
        self._check(cs)
        admit_content(self.model, self.writer, namespace, KIND, meta.name)
        async with self.writer.lock((COLLECTION, namespace, meta.name)):
            if self.model.get(COLLECTION, (namespace, meta.name)) is not None:
                raise errors.already_exists(KIND, meta.name)
            await self.writer.commit(
                ev.CloneSetCreated(namespace=namespace, name=meta.name, clone_set=cs)
            )
        return ok(self._get(namespace, meta.name).to_k8s(), 201)

    # --- one object -------------------------------------------------------------------------

    async def get(self, request: Request) -> Response:
        return ok_object(request, self._get(*self._where(request)).to_k8s())

    async def update(self, request: Request) -> Response:
        namespace, name = self._where(request)
        if is_apply(request):
            config = apply_config(await read_body(request), KIND)
            if self.model.get(COLLECTION, (namespace, name)) is None:
                # Server-side apply of a new CloneSet creates it, owned by its field manager.
                merged = _applied(request, {}, config)
                return await self._create(namespace, _decode(applied_new_object(config, merged)))
        body = b"" if is_apply(request) else await read_body(request)

        def decide() -> ev.CloneSetUpdated | None:
            current = self._get(namespace, name)
            if is_apply(request):
                new = _decode(_applied(request, current.to_k8s(), config))
            else:
                new = self._incoming(request, body, current)
            return self._spec_update(current, new)

        async with self.writer.lock((COLLECTION, namespace, name)):
            await self.writer.update(decide, KIND)
        return self._current(namespace, name)

    def _spec_update(self, current: CloneSet, new: CloneSet) -> ev.CloneSetUpdated | None:
        """The update to `new`'s spec and metadata, decided from `current` (None: a no-op)."""
        new.metadata.namespace = current.metadata.namespace
        new.metadata.name = current.metadata.name
        new.metadata.uid = current.metadata.uid
        new.status = current.status
        self._check(new)
        if new.spec == current.spec and new.metadata == current.metadata:
            return None
        return ev.CloneSetUpdated(
            namespace=current.metadata.namespace or "",
            name=current.metadata.name or "",
            clone_set=new,
            precondition=current.metadata.resource_version,
        )

    async def delete(self, request: Request) -> Response:
        namespace, name = self._where(request)
        async with self.writer.lock((COLLECTION, namespace, name)):
            final = self._get(namespace, name).to_k8s()
            await self.writer.commit(ev.CloneSetDeleted(namespace=namespace, name=name))
        return ok(final)

    # --- subresources -----------------------------------------------------------------------

    async def status(self, request: Request) -> Response:
        namespace, name = self._where(request)
        if request.method != "GET":
            body = await read_body(request)
            async with self.writer.lock((COLLECTION, namespace, name)):
                current = self._get(namespace, name)
                new = self._incoming(request, body, current)
                if new.status != current.status:
                    await self.writer.commit(
                        ev.CloneSetStatusChanged(namespace=namespace, name=name, status=new.status)
                    )
        return self._current(namespace, name)

    async def scale(self, request: Request) -> Response:
        """autoscaling/v1 Scale: spec.replicas in, the selector as a string out."""
        namespace, name = self._where(request)
        if request.method != "GET":
            body = await read_body(request)

            def decide() -> ev.CloneSetUpdated | None:
                current = self._get(namespace, name)
                data = requested(request, body, _scale(current), "Scale")
                replicas = data.get("spec", {}).get("replicas") if isinstance(data, dict) else None
                if not isinstance(replicas, int) or isinstance(replicas, bool):
                    raise errors.bad_request("Scale: spec.replicas must be an integer")
                rv = (data.get("metadata") or {}).get("resourceVersion")
                if rv and rv != current.metadata.resource_version:
                    raise errors.stale(KIND, name)
                new = current.model_copy(deep=True)
                new.spec.replicas = replicas
                return self._spec_update(current, new)

            async with self.writer.lock((COLLECTION, namespace, name)):
                await self.writer.update(decide, KIND)
        return ok(_scale(self._get(namespace, name)))


def _applied(request: Request, live: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    result = server_side_apply_request(
        request,
        live,
        config,
        definition=CLONESET_DEFINITION,
        defs=all_definitions(),
        api_version=API_VERSION,
    )
    return result.merged


def _scale(cs: CloneSet) -> dict[str, Any]:
    labels = sorted((cs.spec.selector.match_labels or {}).items())
    selector = ",".join(f"{k}={v}" for k, v in labels)
    return {
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": {
            "name": cs.metadata.name,
            "namespace": cs.metadata.namespace,
            "uid": cs.metadata.uid,
            "resourceVersion": cs.metadata.resource_version,
        },
        "spec": {"replicas": cs.spec.replicas},
        "status": {"replicas": cs.status.replicas, "selector": selector},
    }


def workload_routes(handlers: CloneSetHandlers) -> list[Route]:
    async def group(request: Request) -> Response:
        return ok(discovery.workload_group())

    async def resources(request: Request) -> Response:
        return ok(discovery.workload_resources())

    one = f"{PREFIX}/namespaces/{{namespace}}/clonesets/{{name}}"
    return [
        Route("/apis/apps.inplace.dev", group, methods=["GET"]),
        Route(PREFIX, resources, methods=["GET"]),
        Route(f"{PREFIX}/clonesets", handlers.list, methods=["GET"]),
        Route(f"{PREFIX}/namespaces/{{namespace}}/clonesets", handlers.list, methods=["GET"]),
        Route(f"{PREFIX}/namespaces/{{namespace}}/clonesets", handlers.create, methods=["POST"]),
        Route(one, handlers.get, methods=["GET"]),
        Route(one, handlers.update, methods=["PUT", "PATCH"]),
        Route(one, handlers.delete, methods=["DELETE"]),
        Route(f"{one}/status", handlers.status, methods=["GET", "PUT", "PATCH"]),
        Route(f"{one}/scale", handlers.scale, methods=["GET", "PUT", "PATCH"]),
    ]
