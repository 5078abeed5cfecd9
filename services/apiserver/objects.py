"""Nodes, namespaces, resourcequotas, limitranges, events and poddisruptionbudgets: one generic
handler, a table of what each kind is (model, list kind, which event each write becomes)."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response

from inplace.core.projection.entries import list_key
from inplace.core.projection.eventstore import EventStore
from inplace.core.readmodel import ReadModel
from schemas import events as ev
from schemas.envelope import EventPayload
from schemas.k8s import Event, LimitRange, Node, ObjectMeta, ResourceQuota
from schemas.kubeschema import gvk_definition
from schemas.policy import GROUP as POLICY_GROUP
from schemas.policy import VERSION as POLICY_VERSION
from schemas.policy import PodDisruptionBudget
from services.apiserver import dryrun, errors
from services.apiserver.auth.identity import current_user
from services.apiserver.auth.nodeauthorizer import node_create_refusal, node_update_refusal
from services.apiserver.deletions import deletion
from services.apiserver.fielderrors import FieldError, invalid, invalid_status
from services.apiserver.http import (
    applied_new_object,
    apply_config,
    check_kind,
    decode_checked,
    is_apply,
    list_or_watch,
    not_older_than,
    ok,
    ok_object,
    read_body,
    read_object,
    requested,
    server_side_apply_request,
)
from services.apiserver.namespaces import admit_content, refuse_deletion, terminate
from services.apiserver.paging import JoinedKeys, Listing
from services.apiserver.pdbvalidation import validate_pdb, validate_pdb_update
from services.apiserver.selectors import field_equals
from services.apiserver.writer import Writer

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class NamespaceObject(BaseModel):
    """The few Namespace fields clients send (metadata only)."""

    model_config = {"extra": "ignore"}
    metadata: ObjectMeta


@dataclass(frozen=True)
class Kind:
    kind: str
    collection: str
    list_kind: str
    model: type[BaseModel]
    namespaced: bool
    created: Callable[[str, Any], EventPayload]
    updated: Callable[[str, Any], EventPayload] | None = None
    deletable: bool = False  # by the event deletions.deletion names
    # Fields an update keeps from the stored object besides identity and status.
    kept: tuple[str, ...] = ()
    api_version: str = "v1"  # group/version, or "v1" for the core group
    # kube-apiserver's validation (beyond the schema) of a created object, and of an updated
    # one given the stored one.
    validate: Callable[[Any], list[FieldError]] | None = None
    validate_update: Callable[[Any, Any], list[FieldError]] | None = None

    @property
    def group_version(self) -> tuple[str, str]:
        group, _, version = self.api_version.rpartition("/")
        return group, version


KINDS: dict[str, Kind] = {
    "nodes": Kind(
        "Node",
        "nodes",
        "NodeList",
        Node,
        False,
        created=lambda ns, o: ev.NodeRegistered(name=o.metadata.name, node=o),
        updated=lambda ns, o: ev.NodeUpdated(
            name=o.metadata.name, metadata=o.metadata, spec=o.spec
        ),
        deletable=True,
    ),
    "namespaces": Kind(
        "Namespace",
        "namespaces",
        "NamespaceList",
        NamespaceObject,
        False,
        created=lambda ns, o: ev.NamespaceCreated(
            namespace=o.metadata.name,
            labels=o.metadata.labels or {},
            annotations=o.metadata.annotations or {},
            managed_fields=o.metadata.managed_fields,
        ),
        updated=lambda ns, o: ev.NamespaceUpdated(
            namespace=o.metadata.name,
            labels=o.metadata.labels or {},
            annotations=o.metadata.annotations or {},
            managed_fields=o.metadata.managed_fields,
        ),
        deletable=True,
    ),
    "resourcequotas": Kind(
        "ResourceQuota",
        "resourcequotas",
        "ResourceQuotaList",
        ResourceQuota,
        True,
        created=lambda ns, o: ev.ResourceQuotaCreated(namespace=ns, quota=o),
        updated=lambda ns, o: ev.ResourceQuotaUpdated(namespace=ns, quota=o),
        deletable=True,
    ),
    "limitranges": Kind(
        "LimitRange",
        "limitranges",
        "LimitRangeList",
        LimitRange,
        True,
        created=lambda ns, o: ev.LimitRangeCreated(namespace=ns, limit_range=o),
        updated=lambda ns, o: ev.LimitRangeUpdated(namespace=ns, limit_range=o),
        deletable=True,
    ),
    "events": Kind(
        "Event",
        "events",
        "EventList",
        Event,
        True,
        created=lambda ns, o: ev.KubeEventRecorded(event=o),
        updated=lambda ns, o: ev.KubeEventUpdated(event=o),
        deletable=True,
        kept=("involved_object",),  # it orders the Event's partition
    ),
    "poddisruptionbudgets": Kind(
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        "PodDisruptionBudgetList",
        PodDisruptionBudget,
        True,
        created=lambda ns, o: ev.PodDisruptionBudgetCreated(namespace=ns, budget=o),
        updated=lambda ns, o: ev.PodDisruptionBudgetUpdated(namespace=ns, budget=o),
        deletable=True,
        api_version=f"{POLICY_GROUP}/{POLICY_VERSION}",
        validate=validate_pdb,
        validate_update=validate_pdb_update,
    ),
}


class ObjectHandlers:
    def __init__(self, model: ReadModel, writer: Writer) -> None:
        self.model = model
        self.writer = writer

    async def _kind(self, request: Request) -> Kind:
        """The kind a request is about, once this replica holds its objects: after a start
        from the projection the Events come a moment after the rest (ReadModel.events_ready),
        as a kube-apiserver's watch cache of each resource fills on its own."""
        kind = KINDS[request.path_params["resource"]]
        if kind.collection == "events":
            await self.model.events_ready.wait()
        return kind

    @staticmethod
    def _key(kind: Kind, namespace: str | None, name: str) -> Any:
        return (namespace, name) if kind.namespaced else name

    def _get(self, kind: Kind, namespace: str | None, name: str) -> dict[str, Any]:
        key = self._key(kind, namespace, name)
        obj = dryrun.result(kind.collection, key, self.model.get(kind.collection, key))
        if obj is None:
            raise errors.not_found(kind.kind, name)
        return obj if isinstance(obj, dict) else obj.to_k8s()

    async def list(self, request: Request) -> Response:
        kind = await self._kind(request)
        namespace = request.path_params.get("namespace")
        await not_older_than(request, self.model, kind.collection)
        held = self.model.objects(kind.collection)
        if isinstance(held, EventStore):
            return list_or_watch(
                request,
                self.model.collections[kind.collection],
                _event_listing(held, namespace, request.query_params.get("fieldSelector")),
                kind.list_kind,
                namespace,
                api_version=kind.api_version,
            )
        objects = [
            o if isinstance(o, dict) else o.to_k8s()
            for k, o in held.items()
            if namespace is None or (isinstance(k, tuple) and k[0] == namespace)
        ]
        return list_or_watch(
            request,
            self.model.collections[kind.collection],
            objects,
            kind.list_kind,
            namespace if kind.namespaced else None,
            api_version=kind.api_version,
        )

    async def get(self, request: Request) -> Response:
        kind = await self._kind(request)
        await not_older_than(request, self.model, kind.collection)
        found = self._get(kind, request.path_params.get("namespace"), request.path_params["name"])
        return ok_object(request, found)

    async def create(self, request: Request) -> Response:
        kind = await self._kind(request)
        namespace = request.path_params.get("namespace")
        return await self._create(request, kind, namespace, await read_object(request))

    async def _create(
        self, request: Request, kind: Kind, namespace: str | None, data: Any
    ) -> Response:
        check_kind(data, kind.kind, kind.api_version)
        obj = decode_checked(request, kind.model, data, kind.kind, api_version=kind.api_version)
        meta: ObjectMeta = obj.metadata  # type: ignore[attr-defined]
        if kind.namespaced:
            if meta.namespace not in (None, namespace):
                raise errors.bad_request(
                    "the namespace of the provided object does not match "
                    "the namespace sent on the request"
                )
            meta.namespace = namespace
        if not meta.name and meta.generate_name:
            meta.name = meta.generate_name + uuid.uuid4().hex[:5]
        name = meta.name or ""
        _validate_name(kind, name)
        if kind.validate is not None:
            _refuse_invalid(kind, name, kind.validate(obj))
        if kind.namespaced:
            admit_content(self.model, self.writer, namespace or "", kind.kind, name)
        refusal = node_create_refusal(current_user(), kind.collection, name)
        if refusal:
            raise errors.forbidden(
                f'nodes "{name}" is forbidden: {refusal}', kind="nodes", name=name
            )
        meta.uid = str(uuid.uuid4())
        meta.resource_version = None
        key = self._key(kind, namespace, name)
        async with self.writer.lock((kind.collection, key)):
            if self.model.get(kind.collection, key) is not None:
                raise errors.already_exists(kind.kind, name)
            await self.writer.commit(kind.created(namespace or "", obj))
        return ok(self._get(kind, namespace, name), 201)

    async def update(self, request: Request) -> Response:
        """PUT (resourceVersion required) or PATCH (json, merge or strategic merge; a
        resourceVersion in the result is a precondition) of the object's writable part."""
        kind = await self._kind(request)
        if kind.updated is None:
            raise errors.method_not_allowed()
        namespace, name = request.path_params.get("namespace"), request.path_params["name"]
        body = await read_body(request)
        key = self._key(kind, namespace, name)
        definition = gvk_definition(*kind.group_version, kind.kind) or ""
        version = kind.api_version
        if is_apply(request) and self.model.get(kind.collection, key) is None:
            # Server-side apply of a new object creates it, owned by its field manager.
            config = apply_config(body, kind.kind)
            merged = server_side_apply_request(
                request, {}, config, definition=definition, api_version=version
            ).merged
            return await self._create(request, kind, namespace, applied_new_object(config, merged))
        updated = kind.updated

        def decide() -> EventPayload | None:
            """The update of the object as this replica holds it now (None: a no-op)."""
            current = self._get(kind, namespace, name)
            if is_apply(request):
                config = apply_config(body, kind.kind)
                data: Any = server_side_apply_request(
                    request, current, config, definition=definition, api_version=version
                ).merged
            else:
                data = requested(request, body, current, kind.kind)
            check_kind(data, kind.kind, version)
            # The status is not the main resource's to write (reset below, as kube-apiserver's
            # update strategies do): not checked either, so a stored field newer than the
            # published schema (KEP-3953's initialCapacity) does not fail a strict update.
            if isinstance(data, dict):
                data = {k: v for k, v in data.items() if k != "status"}
            obj = decode_checked(request, kind.model, data, kind.kind, name, api_version=version)
            meta: ObjectMeta = obj.metadata  # type: ignore[attr-defined]
            if meta.name != name or meta.namespace not in (None, namespace):
                raise errors.bad_request(
                    "the name or namespace of the object does not match the request"
                )
            rv = meta.resource_version
            if request.method == "PUT" and not rv:
                raise errors.ApiError(
                    invalid_status(
                        kind.kind,
                        name,
                        [
                            invalid(
                                "metadata.resourceVersion", "", "must be specified for an update"
                            )
                        ],
                    )
                )
            if rv and rv != current["metadata"].get("resourceVersion"):
                raise errors.stale(kind.kind, name)
            old = kind.model.model_validate(current)
            _keep_system_fields(old, obj, kind.kept)
            if kind.validate_update is not None:
                _refuse_invalid(kind, name, kind.validate_update(obj, old))
            if isinstance(obj, Node):
                refusal = node_update_refusal(current_user(), old, obj)
                if refusal:
                    raise errors.forbidden(
                        f'nodes "{name}" is forbidden: {refusal}', kind="nodes", name=name
                    )
            if obj == old:  # kube-apiserver writes nothing (no new resourceVersion) for a no-op
                return None
            payload = updated(namespace or "", obj)
            if isinstance(payload, ev.Conditional):  # decided from the version read
                payload.precondition = current["metadata"].get("resourceVersion")
            return payload

        async with self.writer.lock((kind.collection, key)):
            await self.writer.update(decide, kind.kind)
        return ok(self._get(kind, namespace, name))

    async def delete(self, request: Request) -> Response:
        kind = await self._kind(request)
        if not kind.deletable:
            raise errors.method_not_allowed()
        namespace, name = request.path_params.get("namespace"), request.path_params["name"]
        key = self._key(kind, namespace, name)
        async with self.writer.lock((kind.collection, key)):
            final = self._get(kind, namespace, name)
            if kind.collection == "namespaces":
                refuse_deletion(name)
                if not dryrun.active():  # Terminating, its content, then itself
                    return ok(await terminate(self.model, self.writer, name))
            await self.writer.commit(deletion(kind.collection, key, final))
        return ok(final)


def _keep_system_fields(old: Any, new: Any, kept: tuple[str, ...]) -> None:
    """What an update does not change: identity, creation, and the status (written by its
    own events: hotplug, the kubelet, quota), as kube-apiserver's update strategies reset."""
    for field in ("namespace", "uid", "creation_timestamp", "resource_version"):
        setattr(new.metadata, field, getattr(old.metadata, field))
    for field in (*kept, "status"):
        if field in type(new).model_fields:
            setattr(new, field, getattr(old, field))


def _refuse_invalid(kind: Kind, name: str, problems: list[FieldError]) -> None:
    if problems:
        raise errors.ApiError(
            invalid_status(kind.kind, name, problems, group=kind.group_version[0])
        )


def _validate_name(kind: Kind, name: str) -> None:
    problems = []
    if not name:
        problems.append(
            FieldError(
                type="FieldValueRequired",
                field="metadata.name",
                bad_value="",
                detail="name or generateName is required",
            )
        )
    elif len(name) > 253 or not _DNS_SUBDOMAIN.match(name):
        problems.append(
            FieldError(
                type="FieldValueInvalid",
                field="metadata.name",
                bad_value=name,
                detail="a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                "characters, '-' or '.', and must start and end with an alphanumeric "
                "character",
            )
        )
    if problems:
        raise errors.ApiError(invalid_status(kind.kind, name, problems))


def _event_listing(events: EventStore, namespace: str | None, selector: str | None) -> Listing:
    """A LIST's Events in key order, each parsed from its JSON only when a page looks at it
    (no model built); only those about the object a fieldSelector names, when it names one
    (kubectl describe's), are candidates at all."""
    about = field_equals(selector, "involvedObject.name")
    if about is None:
        keys = events.listed(namespace)
    else:
        keys = sorted(events.keys_of(namespace, involved=about), key=list_key)

    def fetch(i: int) -> dict[str, Any]:
        parsed: dict[str, Any] = json.loads(events.json(keys[i]))
        return parsed

    return Listing(JoinedKeys(keys), fetch)
