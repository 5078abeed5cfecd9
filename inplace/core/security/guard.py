"""Who may call a role's own API (the quota webhook, the hotplug API): callers authenticate
with a client certificate from the cluster CA or a bearer token, and must be one of the
allowed users or groups. Health stays open; /metrics answers any authenticated caller, and
anonymous ones only from loopback (`may_read_metrics`)."""

from __future__ import annotations

import ipaddress
from collections.abc import Set

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from inplace.core.security.authn import Authenticator, Unauthorized
from inplace.core.security.tls import client_cert_der
from schemas.envelope import UserInfo
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
        user, _ = caller_of(scope, self.authenticator)
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
    await _status_response(code, reason, message)(scope, receive, send)


def _status_response(code: int, reason: str, message: str) -> JSONResponse:
    status = Status(status="Failure", message=message, reason=reason, code=code)
    return JSONResponse(status.to_k8s(), status_code=code)


def loopback_peer(peer: str | None) -> bool:
    """Is the connection's peer address on this machine (127.0.0.0/8, ::1, or an IPv4-mapped
    loopback address on a dual-stack socket)? Names and unknown peers are not."""
    if not peer:
        return False
    try:
        address = ipaddress.ip_address(peer.strip("[]"))
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


def may_read_metrics(peer: str | None, caller: UserInfo | None, *, bad_credentials: bool) -> bool:
    """/metrics: any authenticated caller, from anywhere; an anonymous one only from loopback.
    Credentials that fail (a wrong token) are refused even on loopback: never anonymous."""
    if bad_credentials:
        return False
    return caller is not None or loopback_peer(peer)


def caller_of(scope: Scope, authenticator: Authenticator | None) -> tuple[UserInfo | None, bool]:
    """(the authenticated caller or None, whether the presented credentials failed)."""
    if authenticator is None:  # plain-HTTP mode: nothing to check, loopback only
        return None, False
    header = next((v for k, v in scope["headers"] if k == b"authorization"), None)
    try:
        user = authenticator.authenticate(
            header.decode("latin-1") if header is not None else None, client_cert_der(scope)
        )
    except Unauthorized:
        return None, True
    return user, False


def unauthorized() -> JSONResponse:
    """kube-apiserver's 401 Status."""
    return _status_response(401, "Unauthorized", "Unauthorized")
