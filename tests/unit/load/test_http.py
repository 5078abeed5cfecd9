"""The load driver's HTTP client (aiohttp, against a real local server) and its retries:
a retry that would repeat a write already on the log is not sent."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from inplace.load.driver import Landed, request
from inplace.load.http import PooledClient, Response, TransportError


@pytest.fixture
async def server() -> AsyncIterator[tuple[TestServer, list[dict[str, Any]]]]:
    """Echoes what it got; the first request to /flaky loses its connection."""
    seen: list[dict[str, Any]] = []

    async def echo(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        seen.append(
            {"method": request.method, "path": request.path, "body": body,
             "type": request.headers.get("content-type"), "cid": request.headers.get("x-cid")}
        )  # fmt: skip
        if request.path == "/flaky" and len(seen) == 1:
            assert request.transport is not None
            request.transport.close()  # the answer is lost
            return web.Response()
        return web.json_response({"path": request.path}, status=201)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", echo)
    async with TestServer(app) as running:
        yield running, seen


async def test_requests_carry_the_base_url_json_and_headers(
    server: tuple[TestServer, list[dict[str, Any]]],
) -> None:
    running, seen = server
    async with PooledClient(str(running.make_url("")), concurrency=4) as client:
        answer = await client.request(
            "PATCH", "/api/v1/pods/p/resize", json={"a": 1}, headers={"x-cid": "c1"}
        )
    assert (answer.status_code, answer.json()) == (201, {"path": "/api/v1/pods/p/resize"})
    assert seen == [{"method": "PATCH", "path": "/api/v1/pods/p/resize", "body": b'{"a": 1}',
                     "type": "application/json", "cid": "c1"}]  # fmt: skip


async def test_no_server_is_a_transport_error() -> None:
    async with PooledClient("http://127.0.0.1:1", concurrency=1, timeout=5) as client:
        with pytest.raises(TransportError):
            await client.request("GET", "/version")


async def _retried(
    server: tuple[TestServer, list[dict[str, Any]]], on_log: bool
) -> tuple[list[str], Response | Landed]:
    """A PATCH whose first answer is lost (the apiserver died after writing it)."""
    running, seen = server
    async with PooledClient(str(running.make_url("")), concurrency=1) as client:
        try:
            outcome: Response | Landed = await request(
                client, "PATCH", "/flaky", landed=lambda: on_log
            )
        except Landed as landed:
            outcome = landed
    return [s["method"] for s in seen], outcome


async def test_a_write_already_on_the_log_is_not_sent_again(
    server: tuple[TestServer, list[dict[str, Any]]],
) -> None:
    sent, outcome = await _retried(server, on_log=True)
    assert sent == ["PATCH"] and isinstance(outcome, Landed)


async def test_a_write_not_on_the_log_is_retried(
    server: tuple[TestServer, list[dict[str, Any]]],
) -> None:
    sent, outcome = await _retried(server, on_log=False)
    assert sent == ["PATCH", "PATCH"]
    assert isinstance(outcome, Response) and outcome.status_code == 201
