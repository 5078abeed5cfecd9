"""Refuse API requests with 503 until the read model has caught up with the log.

After a restart the read model folds the log from the start; answering before it has caught
up would serve 404s for objects that exist and let writes skip preconditions. kube-apiserver
likewise answers 503 until its caches have synced. Clients (and `inplace load`) retry.
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from services.apiserver import errors

GATED_PREFIXES = ("/api", "/apis")


class ReadinessGate:
    def __init__(self, app: ASGIApp, ready: Callable[[], bool]) -> None:
        self.app = app
        self.ready = ready

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self.ready() and _gated(scope["path"]):
            error = errors.unavailable("the apiserver is starting: its caches are not synced yet")
            response = JSONResponse(
                error.status.to_k8s(), status_code=error.code, headers={"Retry-After": "1"}
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _gated(path: str) -> bool:
    return any(path == p or path.startswith(p + "/") for p in GATED_PREFIXES)
