"""The load driver's HTTP client: many small pools instead of one large one; retries that
would repeat a write already on the log are not sent."""

from __future__ import annotations

import httpx
import pytest

from inplace.load.driver import Landed, request
from inplace.load.http import PooledClient


@pytest.mark.parametrize(
    ("concurrency", "pools", "size"),
    [(1, 1, 1), (4, 1, 4), (6, 2, 3), (64, 16, 4), (65, 17, 4)],
)
def test_connections_are_split_into_small_pools(concurrency: int, pools: int, size: int) -> None:
    client = PooledClient("http://127.0.0.1:1", concurrency=concurrency)
    assert (len(client.clients), client.pool_size) == (pools, size)
    assert len(client.clients) * client.pool_size >= concurrency


async def test_requests_go_round_robin_and_keep_the_base_url() -> None:
    seen: list[tuple[str, str]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append((request.headers["x-client"], str(request.url)))
        return httpx.Response(200)

    async with PooledClient(
        "http://api.test", concurrency=8, transport=httpx.MockTransport(answer)
    ) as client:
        for n, pool in enumerate(client.clients):
            pool.headers["x-client"] = str(n)
        for _ in range(4):
            assert (await client.request("GET", "/api/v1/pods")).status_code == 200
    assert seen == [(str(n % 2), "http://api.test/api/v1/pods") for n in range(4)]


async def _retried(on_log: bool) -> tuple[list[str], httpx.Response | Landed]:
    """A PATCH whose first answer is lost (the apiserver died after writing it)."""
    sent: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request.method)
        if len(sent) == 1:
            raise httpx.ConnectError("connection reset", request=request)
        return httpx.Response(200)

    async with PooledClient(
        "http://api.test", concurrency=1, transport=httpx.MockTransport(answer)
    ) as client:
        try:
            return sent, await request(
                client, "PATCH", "/api/v1/pods/p/resize", landed=lambda: on_log
            )
        except Landed as landed:
            return sent, landed


async def test_a_write_already_on_the_log_is_not_sent_again() -> None:
    sent, outcome = await _retried(on_log=True)
    assert sent == ["PATCH"] and isinstance(outcome, Landed)


async def test_a_write_not_on_the_log_is_retried() -> None:
    sent, outcome = await _retried(on_log=False)
    assert sent == ["PATCH", "PATCH"]
    assert isinstance(outcome, httpx.Response) and outcome.status_code == 200
