"""Overload limits in front of the API, as kube-apiserver's filters set them:

- a body larger than `max_request_bytes` is refused from its Content-Length (413) before it is
  read; the handlers stop reading at the same limit when no length was declared;
- at most `max_requests_inflight` read-only and `max_mutating_requests_inflight` mutating
  requests are served at once; one more is a 429 with Retry-After (watches are long-running
  and not counted, as in kube-apiserver);
- at most `max_watches_per_client` open watches per client address;
- a client that sends its body slower than `request_body_timeout` seconds gets a 408.

They run behind authentication (inside `AuthGate`), so every refusal is in the audit log with
the user it refused.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass
from urllib.parse import parse_qsl

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from services.apiserver import errors

READ_ONLY = frozenset({"GET", "HEAD", "OPTIONS"})


@dataclass(frozen=True)
class Limits:
    max_request_bytes: int = 3 * 1024 * 1024
    max_requests_inflight: int = 400
    max_mutating_requests_inflight: int = 200
    max_watches_per_client: int = 100
    request_body_timeout: float = 60.0


class LimitRequests:
    def __init__(self, app: ASGIApp, limits: Limits) -> None:
        self.app = app
        self.limits = limits
        self.inflight = {"read": 0, "mutating": 0}
        self.watches: Counter[str] = Counter()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.limits.max_request_bytes:
            await _refuse(scope, receive, send, errors.too_large(self.limits.max_request_bytes))
            return
        if _is_watch(scope):
            await self._watch(scope, receive, send)
            return
        kind = "read" if scope["method"] in READ_ONLY else "mutating"
        cap = (
            self.limits.max_requests_inflight
            if kind == "read"
            else self.limits.max_mutating_requests_inflight
        )
        if self.inflight[kind] >= cap:
            await _refuse(scope, receive, send, errors.too_many_requests())
            return
        self.inflight[kind] += 1
        try:
            await self.app(scope, self._timed(receive), send)
        finally:
            self.inflight[kind] -= 1

    async def _watch(self, scope: Scope, receive: Receive, send: Send) -> None:
        client = str((scope.get("client") or ("?", 0))[0])
        if self.watches[client] >= self.limits.max_watches_per_client:
            message = (
                f"too many open watches from {client} (limit {self.limits.max_watches_per_client})"
            )
            await _refuse(scope, receive, send, errors.too_many_requests(message))
            return
        self.watches[client] += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.watches[client] -= 1
            if not self.watches[client]:
                del self.watches[client]

    def _timed(self, receive: Receive) -> Receive:
        timeout = self.limits.request_body_timeout
        body_done = [False]

        async def receive_in_time() -> Message:
            if body_done[0]:  # afterwards only a disconnect can come: no deadline
                return await receive()
            try:
                # A deadline on this task, not a task per receive (asyncio.wait_for's).
                async with asyncio.timeout(timeout):
                    message = await receive()
            except TimeoutError:
                raise errors.request_timeout(
                    f"the request body did not arrive within {timeout:g}s"
                ) from None
            body_done[0] = not message.get("more_body", False)
            return message

        return receive_in_time


def _content_length(scope: Scope) -> int | None:
    for key, value in scope["headers"]:
        if key == b"content-length":
            return int(value) if value.isdigit() else None
    return None


def _is_watch(scope: Scope) -> bool:
    query = scope.get("query_string", b"")
    if b"watch" not in query and "/watch/" not in scope["path"]:
        return False
    return "/watch/" in scope["path"] or any(
        k == "watch" and v in ("true", "1") for k, v in parse_qsl(query.decode("latin-1"))
    )


async def _refuse(scope: Scope, receive: Receive, send: Send, error: errors.ApiError) -> None:
    headers = {"Retry-After": "1"} if error.code == 429 else None
    response = JSONResponse(error.status.to_k8s(), status_code=error.code, headers=headers)
    await response(scope, receive, send)
