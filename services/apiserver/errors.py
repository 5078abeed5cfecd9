"""Kubernetes `Status` error bodies, and the exception that carries one to the client."""

from __future__ import annotations

from schemas import policy
from schemas.k8s import Status, StatusCause, StatusDetails
from services.apiserver.discovery import EXTENSIONS_GROUP


class ApiError(Exception):
    """Raised anywhere in a request; the app turns it into its Status body and code."""

    def __init__(self, status: Status) -> None:
        super().__init__(status.message)
        self.status = status

    @property
    def code(self) -> int:
        return self.status.code or 500


def _status(
    code: int,
    reason: str,
    message: str,
    *,
    kind: str | None = None,
    name: str | None = None,
    group: str | None = None,
    causes: list[StatusCause] | None = None,
    retry_after: int | None = None,
) -> ApiError:
    details = None
    if kind or name or causes or retry_after:
        details = StatusDetails(
            name=name,
            kind=kind,
            group=group,
            causes=causes,
            retry_after_seconds=retry_after,
        )
    return ApiError(  # kube omits an empty reason
        Status(status="Failure", message=message, reason=reason or None, details=details, code=code)
    )


def resource_name(kind: str) -> str:
    """Kubernetes names the resource (plural, lowercase) in its messages: pods "web"."""
    plurals = {
        "Pod": "pods",
        "Node": "nodes",
        "Namespace": "namespaces",
        "Event": "events",
        "ResourceQuota": "resourcequotas",
        "LimitRange": "limitranges",
        "PodDisruptionBudget": "poddisruptionbudgets",
        "NodeMetrics": "nodemetrics.metrics.k8s.io",
        "PodMetrics": "podmetrics.metrics.k8s.io",
    }
    return plurals.get(kind, kind.lower() + "s")


# Kinds outside the core group: their messages name the resource as `plural.group`, and
# the Status details carry the group (kube-apiserver's qualified resource).
GROUPS = {"PodDisruptionBudget": policy.GROUP, "CustomResourceDefinition": EXTENSIONS_GROUP}


def _qualified(kind: str) -> tuple[str, str, str | None]:
    """(the resource as messages name it, as details name it, its group)."""
    plural, group = resource_name(kind), GROUPS.get(kind)
    return (f"{plural}.{group}" if group else plural), plural, group


def not_found(kind: str, name: str) -> ApiError:
    said, plural, group = _qualified(kind)
    return _status(
        404, "NotFound", f'{said} "{name}" not found', kind=plural, name=name, group=group
    )


def already_exists(kind: str, name: str) -> ApiError:
    said, plural, group = _qualified(kind)
    return _status(
        409,
        "AlreadyExists",
        f'{said} "{name}" already exists',
        kind=plural,
        name=name,
        group=group,
    )


def conflict(kind: str, name: str, why: str) -> ApiError:
    said, plural, group = _qualified(kind)
    return _status(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {said} "{name}": {why}',
        kind=plural,
        name=name,
        group=group,
    )


def apply_conflict(message: str, fields: list[tuple[str, str]]) -> ApiError:
    """409 for a server-side apply that would take fields other managers own (`force` wins):
    one FieldManagerConflict cause per field, as kube-apiserver answers."""
    causes = [
        StatusCause(reason="FieldManagerConflict", message=text, field=field)
        for text, field in fields
    ]
    return _status(409, "Conflict", message, causes=causes)


def stale(kind: str, name: str) -> ApiError:
    return conflict(
        kind,
        name,
        "the object has been modified; please apply your changes to the latest version "
        "and try again",
    )


def bad_request(message: str) -> ApiError:
    return _status(400, "BadRequest", message)


def forbidden(message: str, *, kind: str | None = None, name: str | None = None) -> ApiError:
    return _status(403, "Forbidden", message, kind=kind, name=name)


def gone(message: str) -> ApiError:
    return _status(410, "Expired", message)


def method_not_allowed(
    message: str = "the server does not allow this method on the requested resource",
) -> ApiError:
    return _status(405, "MethodNotAllowed", message)


def unsupported_media_type(message: str) -> ApiError:
    return _status(415, "UnsupportedMediaType", message)


def too_large(limit: int) -> ApiError:
    return _status(413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit}")


def not_acceptable(message: str) -> ApiError:
    return _status(406, "NotAcceptable", message)


def timeout(message: str) -> ApiError:
    return _status(504, "Timeout", message, retry_after=1)


def internal(message: str) -> ApiError:
    return _status(500, "InternalError", f"Internal error occurred: {message}")


def path_not_found(path: str) -> ApiError:
    """A path this server does not serve. The details are there and empty, as kube-apiserver
    writes them: clients tell a missing subresource from a missing object by that (kubectl
    debug says "ephemeral containers are disabled for this cluster"; without details it
    crashed on a nil pointer)."""
    error = _status(404, "NotFound", f"the server could not find the requested resource ({path})")
    error.status.details = StatusDetails()
    return error


def unavailable(message: str) -> ApiError:
    return _status(503, "ServiceUnavailable", message, retry_after=1)


def unauthorized() -> ApiError:
    return _status(401, "Unauthorized", "Unauthorized")


def too_many_requests(message: str = "Too many requests, please try again later.") -> ApiError:
    return _status(429, "TooManyRequests", message, retry_after=1)


def refused(
    code: int,
    reason: str,
    message: str,
    causes: list[tuple[str, str]],
    retry_after: int | None = None,
) -> ApiError:
    """A refusal with (type, message) causes, e.g. an eviction a disruption budget stops."""
    return _status(
        code,
        reason,
        message,
        causes=[StatusCause(reason=kind, message=text) for kind, text in causes] or None,
        retry_after=retry_after or None,
    )


def request_timeout(message: str) -> ApiError:
    return _status(408, "Timeout", message)
