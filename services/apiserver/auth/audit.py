"""The audit log: one audit.k8s.io/v1 `Event` per request (level Metadata: who, what, which
object, the decision and the response code; never bodies), as JSON lines."""

from __future__ import annotations

import json
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from schemas.envelope import UserInfo
from services.apiserver.auth.requestinfo import RequestInfo


def _time(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def audit_event(
    *,
    info: RequestInfo,
    user: UserInfo,
    impersonated: UserInfo | None = None,
    method_uri: str,
    source_ip: str,
    user_agent: str,
    code: int,
    received: datetime,
    decision: str,
    reason: str = "",
) -> dict[str, Any]:
    event: dict[str, Any] = {
        "kind": "Event",
        "apiVersion": "audit.k8s.io/v1",
        "level": "Metadata",
        "auditID": str(uuid.uuid4()),
        "stage": "ResponseComplete",
        "requestURI": method_uri,
        "verb": info.verb,
        "user": {"username": user.username, "groups": list(user.groups)},
        "sourceIPs": [source_ip] if source_ip else [],
        "userAgent": user_agent,
        "responseStatus": {"metadata": {}, "code": code},
        "requestReceivedTimestamp": _time(received),
        "stageTimestamp": _time(datetime.now(UTC)),
        "annotations": {"authorization.k8s.io/decision": decision},
    }
    if impersonated is not None:
        event["impersonatedUser"] = {
            "username": impersonated.username,
            "groups": list(impersonated.groups),
        }
    if reason:
        event["annotations"]["authorization.k8s.io/reason"] = reason
    if info.is_resource:
        ref = {
            "resource": info.resource,
            "namespace": info.namespace,
            "name": info.name,
            "apiGroup": info.api_group,
            "apiVersion": info.api_version,
            "subresource": info.subresource,
        }
        event["objectRef"] = {k: v for k, v in ref.items() if v}
    return event


class AuditLog:
    """Appends events to a file (`-` is standard output); flushed per line so a crash loses
    at most the line being written."""

    def __init__(self, target: str) -> None:
        self._out: IO[str] = (
            sys.stdout if target == "-" else Path(target).open("a", encoding="utf-8")
        )

    def write(self, event: dict[str, Any]) -> None:
        self._out.write(json.dumps(event, separators=(",", ":")) + "\n")
        self._out.flush()

    def close(self) -> None:
        if self._out is not sys.stdout:
            self._out.close()
