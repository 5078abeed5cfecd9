"""The load driver's HTTP client: many requests in flight against one server, cheaply.

`inplace load` runs on the cores it measures, so what its client costs per request is taken
from the cluster. httpx spent ~0.7 ms of CPU per resize there (its pure-Python connection pool
and HTTP/1.1 machinery: 60% of the driver's samples at the default shape, the driver ~1 ms per
resize in all), so the driver uses aiohttp, whose HTTP parser and connection pool are C and a
deque. Answers are read whole (they are small Status and Pod bodies) and returned as a
`Response` with what the driver reads of them.
"""

from __future__ import annotations

import json as jsonlib
from dataclasses import dataclass
from typing import Any

import aiohttp

from inplace.core.security.kubeconfig import Endpoint


class TransportError(Exception):
    """No answer: the connection failed or broke, or the request timed out."""


@dataclass(frozen=True)
class Response:
    status_code: int
    content: bytes

    def json(self) -> Any:
        return jsonlib.loads(self.content)

    @property
    def text(self) -> str:
        return self.content.decode(errors="replace")


class PooledClient:
    """Up to `concurrency` connections to `base_url`; use as an async context manager."""

    def __init__(
        self,
        base_url: str,
        *,
        concurrency: int,
        timeout: float = 30.0,
        credentials: Endpoint | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.concurrency = max(1, concurrency)
        self.timeout = timeout
        self.credentials = credentials
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> PooledClient:
        # aiohttp's `ssl=`: a context, False (no verification), or True (the defaults).
        tls = self.credentials.ssl_context() if self.credentials else True
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=self.concurrency, ssl=tls),
            headers=self.credentials.headers() if self.credentials else None,
            timeout=aiohttp.ClientTimeout(total=self.timeout),
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()

    async def request(
        self,
        method: str,
        url: str,
        *,
        json: Any = None,
        headers: dict[str, str] | None = None,
    ) -> Response:
        assert self._session is not None, "use PooledClient as an async context manager"
        body = None if json is None else jsonlib.dumps(json).encode()
        sent = dict(headers or {})
        if body is not None:
            sent.setdefault("content-type", "application/json")
        try:
            async with self._session.request(
                method, self.base_url + url, data=body, headers=sent
            ) as answer:
                return Response(answer.status, await answer.read())
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise TransportError(f"{type(exc).__name__}: {exc}") from None


HttpClient = PooledClient  # what the driver's functions take
