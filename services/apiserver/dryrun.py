"""Server-side dry run (`?dryRun=All`): a write goes through decoding, validation, defaulting
and admission, and is answered with the object it would have made, but nothing reaches the
log (kubectl `diff`, `apply --dry-run=server`, `create --dry-run=server`).

The event a write would commit is folded, by the same reducers the read models use, into a
copy of the stored object; the handlers' read after the write finds that result here instead
of the read model. Admission webhooks are told (`AdmissionRequest.dryRun`), so the quota role
reserves nothing.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any
from urllib.parse import parse_qsl

from pydantic import BaseModel
from starlette.responses import JSONResponse

from inplace.core.bus.consumer import Record
from inplace.core.bus.producer import Position
from inplace.core.projection import reducers
from inplace.core.projection.state import ClusterState
from schemas.envelope import Envelope, EventPayload, UserInfo
from services.apiserver import errors

_ACTIVE: ContextVar[bool] = ContextVar("inplace_dry_run", default=False)
_RESULTS: ContextVar[dict[tuple[str, Any], Any] | None] = ContextVar(
    "inplace_dry_run_results", default=None
)
_MISSING: Any = object()
_MAX_DELETE_OPTIONS = 64 * 1024
# Far past any real offset, so the fold never takes the stored pod for a newer version.
_SCRATCH_OFFSET = 2**50


def active() -> bool:
    """This request asked for a dry run."""
    return _ACTIVE.get()


def fold(payload: EventPayload, current: Any, user: UserInfo | None) -> Any:
    """What `payload` would make of `current` (the stored object, or None): the reducers'
    result on a copy, keeping the stored resourceVersion (none for a create), remembered for
    `result`. Returns it (None for a delete)."""
    collection, key = reducers.locate(payload)
    scratch = ClusterState(allocations=None)
    if current is not None:
        held = (
            current.model_copy(deep=True)
            if isinstance(current, BaseModel)
            else copy.deepcopy(current)
        )
        getattr(scratch, collection)[key] = held
    envelope = Envelope.wrap(payload, producer="apiserver", user=user)
    scratch.apply(Record(Position(payload.TOPIC, 0, _SCRATCH_OFFSET), envelope))
    after = getattr(scratch, collection).get(key)
    if after is not None:
        _keep_version(after, current)
    results = _RESULTS.get()
    if results is not None:  # set with the dry run itself, by `DryRun`
        results[(collection, key)] = after
    return after


def result(collection: str, key: Any, default: Any) -> Any:
    """The object a dry-run write left for (collection, key) in this request, else `default`."""
    results = _RESULTS.get()
    if results is None:
        return default
    found = results.get((collection, key), _MISSING)
    return default if found is _MISSING else found


def _keep_version(obj: Any, current: Any) -> None:
    if isinstance(current, BaseModel):
        rv = current.metadata.resource_version  # type: ignore[attr-defined]
    elif isinstance(current, Mapping):
        rv = current.get("metadata", {}).get("resourceVersion")
    else:
        rv = None
    if isinstance(obj, BaseModel):
        obj.metadata.resource_version = rv  # type: ignore[attr-defined]
    elif rv is None:
        obj.get("metadata", {}).pop("resourceVersion", None)
    else:
        obj["metadata"]["resourceVersion"] = rv


def invalid(values: list[str]) -> errors.ApiError | None:
    """kube-apiserver's 400 for a dryRun value other than All (query or DeleteOptions)."""
    bad = [v for v in values if v != "All"]
    if not bad:
        return None
    return errors.bad_request(f"Invalid dry run value: {bad[0]!r}: supported values are 'All'")


class DryRun:
    """ASGI middleware: `dryRun=All` in the query (or, for a DELETE, in its DeleteOptions body,
    where kubectl sends it) marks the request a dry run; any other value is kube-apiserver's
    400. Reads ignore the parameter."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        query = scope.get("query_string", b"")
        values = [v for k, v in parse_qsl(query.decode("latin-1")) if k == "dryRun"]
        if scope["method"] == "DELETE":
            body, receive = await _buffered(receive)
            values += _delete_options_dry_run(body)
        if not values:
            await self.app(scope, receive, send)
            return
        refusal = invalid(values)
        if refusal is not None:
            await JSONResponse(refusal.status.to_k8s(), status_code=400)(scope, receive, send)
            return
        token = _ACTIVE.set(True)
        results = _RESULTS.set({})
        try:
            await self.app(scope, receive, send)
        finally:
            _RESULTS.reset(results)
            _ACTIVE.reset(token)


async def _buffered(receive: Any) -> tuple[bytes, Any]:
    """A DELETE's body read whole (DeleteOptions: small; `read_body` still caps what a handler
    reads), and a `receive` that hands it to the app again."""
    chunks, more = [], True
    while more:
        message = await receive()
        if message["type"] != "http.request":
            return b"", receive
        chunks.append(message.get("body", b""))
        more = message.get("more_body", False)
        if sum(map(len, chunks)) > _MAX_DELETE_OPTIONS:
            break
    body, sent = b"".join(chunks), False

    async def replay() -> Any:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": more}
        return await receive()

    return body, replay


def _delete_options_dry_run(body: bytes) -> list[str]:
    try:
        options = json.loads(body) if body.strip() else None
    except ValueError:
        return []  # not JSON: not ours to judge here
    values = options.get("dryRun") if isinstance(options, dict) else None
    if isinstance(values, list):
        return [v if isinstance(v, str) else repr(v) for v in values]
    return [] if values is None else [repr(values)]
