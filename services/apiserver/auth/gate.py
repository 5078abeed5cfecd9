"""ASGI middleware in front of the API: authenticate, authorize, record, then serve.

Anonymous requests reach only PUBLIC_PATHS (401 otherwise). A user may act as another with the
`Impersonate-*` headers when allowed to impersonate it (`impersonation.py`); the request is then
authorized and served as that user, and audited with both. A denied request is a 403 with
kube-apiserver's message. Every request, allowed or not, becomes one audit event; the user
is set for the handlers, so the events they write carry who asked.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from inplace.core.security.authn import Authenticator, Unauthorized
from inplace.core.security.tls import client_cert_der
from schemas.envelope import UserInfo
from services.apiserver import errors
from services.apiserver.auth import impersonation
from services.apiserver.auth.audit import AuditLog, audit_event
from services.apiserver.auth.authorizer import Authorizer, forbidden_message
from services.apiserver.auth.identity import ANONYMOUS, UNSECURED, set_current_user
from services.apiserver.auth.requestinfo import RequestInfo, request_info
from services.apiserver.metrics import observe_request, request_labels

PUBLIC_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version"})


class AuthGate:
    """`authenticator=None` is the plain-HTTP loopback mode: every request is served as
    `system:unsecured` (an admin), still audited."""

    def __init__(
        self,
        app: ASGIApp,
        authenticator: Authenticator | None,
        authorizer: Authorizer,
        audit: AuditLog | None = None,
    ) -> None:
        self.app = app
        self.authenticator = authenticator
        self.authorizer = authorizer
        self.audit = audit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        received = datetime.now(UTC)
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        info = request_info(scope["method"], scope["path"], query)
        raw = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in scope["headers"]]
        headers = dict(raw)
        user, impersonated, refusal, reason = self._admit(scope, headers, raw, info)
        code = [500]

        async def recording_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                code[0] = message["status"]
            await send(message)

        try:
            if refusal is not None:
                response = JSONResponse(refusal.status.to_k8s(), status_code=refusal.code)
                await response(scope, receive, recording_send)
            else:
                set_current_user(impersonated or user)
                await self.app(scope, receive, recording_send)
        finally:
            if self.audit is not None:
                self._record(
                    scope, headers, info, user, impersonated, code[0], received, refusal, reason
                )
            labels = request_labels(
                info, scope["method"], headers.get("content-type", ""), query.get("dryRun", "")
            )
            observe_request(labels, code[0], time.perf_counter() - started)

    def _admit(
        self,
        scope: Scope,
        headers: dict[str, str],
        raw: list[tuple[str, str]],
        info: RequestInfo,
    ) -> tuple[UserInfo, UserInfo | None, errors.ApiError | None, str]:
        """(user, whom it impersonates or None, the error to answer instead of serving, the
        authorizer's reason)."""
        if self.authenticator is None:
            return UNSECURED, None, None, ""
        try:
            user = self.authenticator.authenticate(
                headers.get("authorization"), client_cert_der(scope)
            )
        except Unauthorized:
            return ANONYMOUS, None, errors.unauthorized(), ""
        if user is None:
            if info.path in PUBLIC_PATHS:
                return ANONYMOUS, None, None, ""
            return ANONYMOUS, None, errors.unauthorized(), ""
        try:
            wanted = impersonation.requested(raw)
        except impersonation.ImpersonationError as exc:
            return user, None, errors.internal(str(exc)), ""  # kube-apiserver's answer too
        impersonated = None
        if wanted is not None:
            for check in impersonation.checks(wanted):
                decision = self.authorizer.authorize(user, check)
                if not decision.allowed:
                    return user, None, _forbidden(user, check, decision.reason), decision.reason
            impersonated = impersonation.impersonated_user(wanted)
        acting = impersonated or user
        decision = self.authorizer.authorize(acting, info)
        if decision.allowed:
            return user, impersonated, None, decision.reason
        return user, impersonated, _forbidden(acting, info, decision.reason), decision.reason

    def _record(
        self,
        scope: Scope,
        headers: dict[str, str],
        info: RequestInfo,
        user: UserInfo,
        impersonated: UserInfo | None,
        code: int,
        received: datetime,
        refusal: errors.ApiError | None,
        reason: str,
    ) -> None:
        query = scope.get("query_string", b"").decode("latin-1")
        client: Any = scope.get("client") or ("", 0)
        assert self.audit is not None
        self.audit.write(
            audit_event(
                info=info,
                user=user,
                impersonated=impersonated,
                method_uri=scope["path"] + (f"?{query}" if query else ""),
                source_ip=str(client[0]),
                user_agent=headers.get("user-agent", ""),
                code=code,
                received=received,
                decision="forbid" if refusal is not None and refusal.code == 403 else "allow",
                reason=reason,
            )
        )


def _forbidden(user: UserInfo, info: RequestInfo, reason: str) -> errors.ApiError:
    message = forbidden_message(user, info, reason)
    return errors.forbidden(message, kind=info.resource or None, name=info.name or None)
