"""Until the read model has caught up, API paths answer 503 with a Kubernetes Status body;
probes and metrics never do, and once ready every request goes through."""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from services.apiserver.readiness import ReadinessGate


def _client(ready: list[bool]) -> TestClient:
    async def hello(request: object) -> PlainTextResponse:
        return PlainTextResponse("served")

    inner = Starlette(routes=[Route("/{path:path}", hello, methods=["GET", "PATCH"])])
    return TestClient(ReadinessGate(inner, lambda: ready[0]))


@pytest.mark.parametrize(
    ("path", "gated"),
    [
        ("/api/v1/namespaces/default/pods/x", True),
        ("/api", True),
        ("/apis/apps.inplace.dev/v1alpha1", True),
        ("/version", False),
        ("/apiary", False),  # a prefix of the path, not a path segment
    ],
)
def test_gate_before_ready(path: str, gated: bool) -> None:
    response = _client([False]).get(path)
    if gated:
        assert response.status_code == 503
        body = response.json()
        assert body["kind"] == "Status" and body["reason"] == "ServiceUnavailable"
        assert body["details"]["retryAfterSeconds"] == 1
        assert response.headers["retry-after"] == "1"
    else:
        assert response.status_code == 200 and response.text == "served"


def test_gate_opens_when_ready() -> None:
    ready = [False]
    client = _client(ready)
    assert client.patch("/api/v1/namespaces/default/pods/x").status_code == 503
    ready[0] = True
    response = client.patch("/api/v1/namespaces/default/pods/x")
    assert response.status_code == 200 and response.text == "served"
