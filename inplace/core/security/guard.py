"""Who may call a role's own API (the quota webhook, the hotplug API): callers authenticate
with a client certificate from the cluster CA or a bearer token, and must be one of the
allowed users or groups. Health and metrics stay outside the guard."""

from __future__ import annotations

from collections.abc import Set

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from inplace.core.security.authn import Authenticator, Unauthorized
from inplace.core.security.tls import client_cert_der
from schemas.k8s import Status


class RequireCaller:
    def __init__(
        self, app: ASGIApp, authenticator: Authenticator, allowed: Set[str], role: str
    ) -> None:
        self.app = app
        self.authenticator = authenticator
        self.allowed = allowed
        self.role = role

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        header = next((v for k, v in scope["headers"] if k == b"authorization"), None)
        try:
            user = self.authenticator.authenticate(
                header.decode("latin-1") if header is not None else None, client_cert_der(scope)
            )
        except Unauthorized:
            user = None
        if user is None:
            await _refuse(scope, receive, send, 401, "Unauthorized", "Unauthorized")
        elif user.username in self.allowed or self.allowed.intersection(user.groups):
            await self.app(scope, receive, send)
        else:
            message = f'User "{user.username}" cannot call the {self.role} API'
            await _refuse(scope, receive, send, 403, "Forbidden", message)


async def _refuse(
    scope: Scope, receive: Receive, send: Send, code: int, reason: str, message: str
) -> None:
    status = Status(status="Failure", message=message, reason=reason, code=code)
    await JSONResponse(status.to_k8s(), status_code=code)(scope, receive, send)
