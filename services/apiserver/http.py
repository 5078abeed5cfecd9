"""Request/response plumbing shared by every handler: bodies, decoding, lists and watches."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from inplace.core.readmodel import Collection, ReadModel, TooOld, WatchEvent, as_json
from schemas.kubeschema import gvk_definition
from services.apiserver import discovery, errors, fieldvalidation, paging, protobuf
from services.apiserver.apply import (
    ApplyConflict,
    ApplyResult,
    conflict_message,
    render_path,
    server_side_apply,
)
from services.apiserver.paging import Listing
from services.apiserver.patching import APPLY_PATCH, PatchError, apply_patch
from services.apiserver.selectors import field_matcher, label_matcher
from services.apiserver.tables import TableRequest, parse_accept, table

MAX_BODY = 3 * 1024 * 1024  # kube-apiserver's default request size limit
WATCH_COALESCE = 256  # at most this many queued watch events per write
M = TypeVar("M", bound=BaseModel)


def ok(body: dict[str, Any], code: int = 200) -> Response:
    return JSONResponse(body, status_code=code)


def group_routes(group: str, version: str, resources: list[dict[str, Any]]) -> list[Route]:
    """Discovery of an API group served here: /apis/<group> and /apis/<group>/<version>."""

    async def group_doc(request: Request) -> Response:
        return ok(discovery.api_group(group, version))

    async def resources_doc(request: Request) -> Response:
        return ok(discovery.api_resources(f"{group}/{version}", resources))

    return [
        Route(f"/apis/{group}", group_doc, methods=["GET"]),
        Route(f"/apis/{group}/{version}", resources_doc, methods=["GET"]),
    ]


def ok_model(obj: BaseModel, code: int = 200) -> Response:
    """A typed object as its Kubernetes JSON, written by pydantic in one pass, as the watch
    snapshots are: no intermediate dict for json.dumps (a third of the cost of answering)."""
    return Response(as_json(obj), status_code=code, media_type="application/json")


_JSON_BODIES = ("", "application/json", "*/*")


async def read_body(
    request: Request, limit: int = MAX_BODY, media_types: tuple[str, ...] = _JSON_BODIES
) -> bytes:
    if request.method in ("POST", "PUT"):
        media = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if media not in media_types:
            # kubectl's typed commands send protobuf (read_object takes it where a create
            # does); say what we take.
            raise errors.unsupported_media_type(
                f"the body of the request was in an unknown format ({media}) - accepted "
                "media types include: application/json"
            )
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise errors.too_large(limit)
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise errors.too_large(limit)
            chunks.append(chunk)
    except ClientDisconnect:
        raise errors.bad_request("the client closed the connection") from None
    return b"".join(chunks)


async def read_object(request: Request) -> Any:
    """A create's body: JSON, or the protobuf kubectl's typed commands send (`kubectl run`,
    `kubectl create namespace|quota`), read into the JSON it stands for."""
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media != protobuf.MEDIA_TYPE:
        return parse_json(await read_body(request))
    raw = await read_body(request, media_types=(protobuf.MEDIA_TYPE,))
    try:
        return protobuf.decode(raw)
    except protobuf.ProtobufError as exc:
        raise errors.bad_request(f"the protobuf body cannot be read: {exc}") from None


def parse_json(body: bytes) -> Any:
    if not body.strip():
        raise errors.bad_request("the request body is empty")
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise errors.bad_request(f"the request body is not valid JSON: {exc}") from None


def decode(model: type[M], data: Any, kind: str) -> M:
    """Strict decoding like kube-apiserver: unknown fields and wrong types are 400s."""
    if not isinstance(data, dict):
        raise errors.bad_request(
            f'{kind} in version "v1" cannot be handled as a {kind}: the body must be a JSON object'
        )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        if first["type"] == "extra_forbidden":
            detail = f'strict decoding error: unknown field "{where}"'
        else:
            detail = f"{where}: {first['msg']}" if where else first["msg"]
        raise errors.bad_request(
            f'{kind} in version "v1" cannot be handled as a {kind}: {detail}'
        ) from None


def decode_checked(
    request: Request,
    model: type[M],
    data: Any,
    kind: str,
    name: str = "",
    default: Callable[[dict[str, Any]], None] | None = None,
    api_version: str = "v1",
) -> M:
    """Decode an object (core/v1 unless `api_version` says otherwise) after checking it
    against Kubernetes' schema for `kind`: every Kubernetes field is kept, unknown ones
    handled as the request's `fieldValidation` says (Warn, the default, drops them with a
    `Warning` header; Strict refuses them). `default` fills in kube-apiserver's defaults of
    the untyped fields on the checked JSON."""
    group, _, version = api_version.rpartition("/")
    definition = gvk_definition(group, version, kind)
    if definition is not None:
        how = fieldvalidation.directive(request.query_params.get("fieldValidation"))
        checked = fieldvalidation.check(definition, kind, name, data, how)
        warn(request, checked.warnings)
        data = checked.data
    if default is not None and isinstance(data, dict):
        default(data)
    return decode(model, data, kind)


def warn(request: Request, texts: list[str]) -> None:
    """Queue `Warning` headers for this request's response (see `WarningHeaders`)."""
    if texts:
        request.state.warnings = [*getattr(request.state, "warnings", []), *texts]


class WarningHeaders:
    """ASGI middleware: adds the warnings a handler queued as `Warning: 299 - "…"` headers, the
    form kube-apiserver uses and kubectl and client-go print."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_warnings(message: Any) -> None:
            if message["type"] == "http.response.start":
                state = scope.get("state") or {}
                texts = state.get("warnings") or []
                if texts:
                    extra = [(b"warning", _warning_value(t)) for t in texts]
                    message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, send_with_warnings)


def _warning_value(text: str) -> bytes:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    # A header value may hold no control characters (a field named "\r" must not end the
    # response); they are escaped as Go's %q writes them.
    escaped = "".join(c if c >= " " and c != "\x7f" else f"\\x{ord(c):02x}" for c in escaped)
    return f'299 - "{escaped}"'.encode("utf-8", "replace")


def requested(request: Request, body: bytes, current: dict[str, Any], kind: str) -> Any:
    """The object a write asks for: PUT's body, or the PATCH body applied to `current` (the
    stored object's JSON) as its content type says."""
    if request.method == "PUT":
        return parse_json(body)
    content_type = request.headers.get("content-type", "")
    try:
        return apply_patch(current, body, content_type, kind=kind)
    except PatchError as exc:
        raise errors.ApiError(exc.status()) from None


def is_apply(request: Request) -> bool:
    """A server-side apply request (`PATCH` with `application/apply-patch+yaml`)."""
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    return request.method == "PATCH" and media == APPLY_PATCH


def apply_config(body: bytes, kind: str) -> dict[str, Any]:
    """An apply configuration: YAML (JSON is YAML too), one object of `kind`."""
    try:
        config = yaml.safe_load(body)
    except yaml.YAMLError as exc:
        raise errors.bad_request(f"error decoding YAML: {exc}") from None
    if not isinstance(config, dict):
        raise errors.bad_request("an apply configuration must be one object")
    check_kind({k: v for k, v in config.items() if k != "apiVersion"}, kind)
    return config


def server_side_apply_request(
    request: Request,
    live: dict[str, Any],
    config: dict[str, Any],
    *,
    definition: str,
    subresource: str | None = None,
    defs: Mapping[str, Any] | None = None,
    api_version: str = "v1",
) -> ApplyResult:
    """`apply.server_side_apply` with the request's fieldManager and force; a conflict is
    kube-apiserver's 409."""
    manager = request.query_params.get("fieldManager")
    if not manager:
        raise errors.bad_request("PATCH requests with apply must set the fieldManager parameter")
    try:
        return server_side_apply(
            live,
            config,
            definition=definition,
            manager=manager,
            force=request.query_params.get("force") in ("true", "1"),
            now=datetime.now(UTC),
            api_version=api_version,
            subresource=subresource,
            defs=defs,
        )
    except ApplyConflict as conflict:
        fields = [(f'conflict with "{m}"', render_path(p)) for m, p in conflict.conflicts]
        message = conflict_message(conflict.conflicts, api_version)
        raise errors.apply_conflict(message, fields) from None


def applied_new_object(config: dict[str, Any], merged: dict[str, Any]) -> dict[str, Any]:
    """The object a server-side apply creates: the configuration as written, with the fields
    the apply result sets (metadata.managedFields: owned by its field manager)."""
    metadata = {**(config.get("metadata") or {}), **merged["metadata"]}
    return {**config, **merged, "metadata": metadata}


def check_kind(data: Any, kind: str, api_version: str = "v1") -> None:
    if isinstance(data, dict):
        version = api_version.rpartition("/")[2]
        if data.get("kind") not in (None, kind):
            raise errors.bad_request(
                f'{kind} in version "{version}" cannot be handled as a {kind}: '
                f"kind {data.get('kind')!r} does not match"
            )
        if data.get("apiVersion") not in (None, api_version):
            raise errors.bad_request(
                f"the API version in the data ({data.get('apiVersion')}) does not match the "
                f"expected API version ({api_version})"
            )


def query_int(request: Request, name: str) -> int | None:
    value = request.query_params.get(name)
    if value in (None, ""):
        return None
    try:
        return int(value)
    except ValueError:
        raise errors.bad_request(f"{name} must be an integer, not {value!r}") from None


async def not_older_than(request: Request, model: ReadModel, collection: str) -> None:
    """A get or list with `resourceVersion` (not 0, not a watch) is served no older than it,
    as kube-apiserver serves it: a replica waits until it has applied what another wrote
    (read-your-writes across replicas), at most 3 s, then 504 "Too large resource version"."""
    rv_text = request.query_params.get("resourceVersion")
    if rv_text in (None, "", "0") or request.query_params.get("watch") in ("true", "1"):
        return
    try:
        rv = int(rv_text)
    except ValueError:
        raise errors.bad_request(f"invalid resourceVersion {rv_text!r}") from None
    try:
        await model.not_older_than(collection, rv)
    except TimeoutError:
        current = model.collections[collection].last
        raise errors.timeout(f"Too large resource version: {rv}, current: {current}") from None


def matcher(request: Request, namespace: str | None, kind: str) -> Callable[[dict[str, Any]], bool]:
    labels = label_matcher(request.query_params.get("labelSelector"))
    fields = field_matcher(request.query_params.get("fieldSelector"), kind)

    def match(obj: dict[str, Any]) -> bool:
        if namespace is not None and obj.get("metadata", {}).get("namespace") != namespace:
            return False
        return labels(obj) and fields(obj)

    return match


TABLE_CONTENT_TYPE = "application/json;as=Table;v={};g=meta.k8s.io"


def table_response(body: dict[str, Any], asked: TableRequest) -> Response:
    """A Table (tables.table) as the media type kubectl asked it in."""
    return JSONResponse(body, media_type=TABLE_CONTENT_TYPE.format(asked.version))


def wants_table(request: Request) -> TableRequest | None:
    """The Table kubectl asks for in Accept (`as=Table;v=v1;g=meta.k8s.io`), if any."""
    accept = request.headers.get("accept")
    if not accept or "as=Table" not in accept:  # the hot path: plain JSON clients
        return None
    return parse_accept(accept, request.query_params.get("includeObject"))


def ok_object(request: Request, obj: dict[str, Any]) -> Response:
    """One object, as JSON or as the one-row Table kubectl asks for (`kubectl get pod x`)."""
    asked = wants_table(request)
    if asked is None:
        return ok(obj)
    rv = obj.get("metadata", {}).get("resourceVersion")
    body = table(str(obj.get("kind", "")), [obj], asked, datetime.now(UTC), rv)
    return table_response(body, asked)


def list_or_watch(
    request: Request,
    collection: Collection,
    objects: list[dict[str, Any]] | Listing,
    list_kind: str,
    namespace: str | None,
    *,
    api_version: str = "v1",
) -> Response:
    """A LIST (a page of it with `limit` / `continue`, paging.py) or a WATCH of `objects`
    (a Listing: decoded as a page looks at them)."""
    kind = list_kind.removesuffix("List")
    match = matcher(request, namespace, kind)
    asked = wants_table(request)
    listing = objects if isinstance(objects, Listing) else Listing.of(objects)
    if request.query_params.get("watch") in ("true", "1"):
        return watch(
            request, collection, listing.all(), match, (kind, asked) if asked else None, namespace
        )
    limit = query_int(request, "limit")
    token = request.query_params.get("continue")
    rv, after = str(collection.last), ""
    if token:
        if request.query_params.get("resourceVersion") not in (None, ""):
            raise errors.bad_request(
                "specifying resource version is not allowed when using continue"
            )
        rv, after = paging.parse_continue(token)
    found = paging.page(listing, match, limit if limit and limit > 0 else None, after)
    metadata: dict[str, Any] = {"resourceVersion": rv}
    if found.last is not None:
        metadata["continue"] = paging.continue_token(rv, found.last)
        params = request.query_params
        if not (params.get("labelSelector") or params.get("fieldSelector")):
            metadata["remainingItemCount"] = found.remaining
    if asked is not None:
        body = table(kind, found.items, asked, datetime.now(UTC), rv)
        body["metadata"] = metadata
        return table_response(body, asked)
    return ok({"kind": list_kind, "apiVersion": api_version, "metadata": metadata,
               "items": found.items})  # fmt: skip


def watch(
    request: Request,
    collection: Collection,
    current: list[dict[str, Any]],
    match: Callable[[dict[str, Any]], bool],
    as_table: tuple[str, TableRequest] | None = None,
    namespace: str | None = None,
) -> Response:
    """Newline-delimited watch events; resume from resourceVersion or start with ADDED for
    every current object (rv unset or "0"), like kube-apiserver. With `as_table`, each
    event's object is a one-row Table (`kubectl get -w`). `match` is `matcher(request,
    namespace)`: without a label or field selector, a live event is matched by the namespace
    it carries, unparsed."""
    rv_text = request.query_params.get("resourceVersion") or "0"
    try:
        rv = int(rv_text)
    except ValueError:
        raise errors.bad_request(f"invalid resourceVersion {rv_text!r}") from None
    timeout_s = query_int(request, "timeoutSeconds") or 1800
    params = request.query_params
    by_object = bool(params.get("labelSelector") or params.get("fieldSelector"))

    def wanted(event: WatchEvent) -> bool:
        if by_object:
            return match(event.object)
        # The event carries its object's namespace: no JSON parse per event and watcher (it
        # was most of a watch's cost, for a test the namespace alone decides).
        return namespace is None or event.namespace == namespace

    queue = collection.subscribe()  # before the snapshot: nothing slips in between
    try:
        backlog = (
            [WatchEvent.of("ADDED", 0, None, o) for o in current if match(o)]
            if rv == 0
            else [e for e in collection.since(rv) if wanted(e)]
        )
    except TooOld as exc:
        collection.unsubscribe(queue)
        raise errors.gone(str(exc)) from None

    def line(event: WatchEvent) -> bytes:
        if as_table is None:
            return _line(event)
        kind, asked = as_table
        obj = event.object
        rows = table(kind, [obj], asked, datetime.now(UTC), str(event.resource_version))
        return json.dumps({"type": event.type, "object": rows}).encode() + b"\n"

    async def stream() -> AsyncIterator[bytes]:
        try:
            for event in backlog:
                yield line(event)
            async with asyncio.timeout(timeout_s):
                while True:
                    # What is queued already goes out in one write: a read model batch
                    # publishes several changes at once, and each write is a TLS record and a
                    # system call (and a wake-up of the watcher).
                    events = [await queue.get()]
                    while not queue.empty() and len(events) < WATCH_COALESCE:
                        events.append(queue.get_nowait())
                    lines = [line(e) for e in events if e is not None and wanted(e)]
                    if lines:
                        yield b"".join(lines)
                    if None in events:  # the watcher fell behind: closed, it re-watches
                        return
        except TimeoutError:
            return
        finally:
            collection.unsubscribe(queue)

    return StreamingResponse(stream(), media_type="application/json")


def _line(event: WatchEvent) -> bytes:
    return b'{"type":"' + event.type.encode() + b'","object":' + event.raw + b"}\n"
