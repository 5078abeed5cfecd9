"""The apiserver answers the controller 503, or drops its connections, in the middle of a
rollout: the controller backs off and retries (never a crash loop, nothing refused for good),
and the resize lands once the apiserver answers again. A TCP proxy between the controller
and the apiserver makes the failures; the test itself talks to the apiserver directly."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any, Literal
from urllib.parse import urlsplit

import pytest

from schemas import events as ev
from tests.integration.conftest import RoleProcess, read_log
from tests.integration.workload.conftest import (
    Cluster,
    clone_set,
    cpu_of,
    cpu_patch,
    eventually,
    running,
)

Mode = Literal["pass", "503", "drop"]
UNAVAILABLE = (
    b'{"kind":"Status","apiVersion":"v1","status":"Failure",'
    b'"message":"etcdserver: leader changed","reason":"ServiceUnavailable","code":503}'
)


class FaultyProxy:
    """Passes bytes through to the apiserver, or, when broken, answers every request with a
    503 Status ("503") or closes every connection at once ("drop")."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.mode: Mode = "pass"
        self.failed = 0  # requests answered 503 or connections dropped
        self._open: set[asyncio.StreamWriter] = set()
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)

    async def stop(self) -> None:
        self._drop_open()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def set_mode(self, mode: Mode) -> None:
        self.mode = mode
        self._drop_open()  # pooled keep-alive connections must not bypass the failure

    def _drop_open(self) -> None:
        for writer in list(self._open):
            writer.transport.abort()
        self._open.clear()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.mode == "drop":
            self.failed += 1
            writer.transport.abort()
            return
        if self.mode == "503":
            await self._unavailable(reader, writer)
            return
        up_reader, up_writer = await asyncio.open_connection(*self.target)
        self._open.update((writer, up_writer))
        try:
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            for w in (writer, up_writer):
                self._open.discard(w)
                w.transport.abort()

    async def _unavailable(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                (
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                ),
                0,
            )
            await reader.readexactly(length)
            self.failed += 1
            writer.write(
                b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(UNAVAILABLE) + UNAVAILABLE
            )
            await writer.drain()
        writer.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    with contextlib.suppress(Exception):
        writer.write_eof()


@pytest.fixture
async def proxy(apiserver: RoleProcess) -> AsyncIterator[FaultyProxy]:
    target = urlsplit(apiserver.url)
    proxy = FaultyProxy(target.hostname or "127.0.0.1", target.port or 80)
    await proxy.start()
    try:
        yield proxy
    finally:
        await proxy.stop()


@pytest.fixture
def controller_apiserver_url(proxy: FaultyProxy) -> str:
    return proxy.url


@pytest.mark.parametrize("failure", ["503", "drop"])
async def test_the_controller_backs_off_and_the_resize_lands_after_the_apiserver_recovers(
    cluster: Cluster, proxy: FaultyProxy, failure: Mode
) -> None:
    await cluster.create(clone_set("api", 2, "100m", maxConcurrentResizes=2))

    async def up() -> list[Any] | None:
        pods = await cluster.pods("api")
        return pods if running(pods, 2) else None

    pods = await eventually(up)
    proxy.set_mode(failure)
    await cluster.patch("api", cpu_patch("200m"))

    # Tried, failed, backed off and tried again (three attempts: after 1 s and 2 s waits).
    await eventually(lambda: _at_least(proxy, 3))
    assert cluster.controller.alive() and await cluster.controller.healthz() == 200
    now = await cluster.pods("api")
    assert {p.metadata.uid for p in now} == {p.metadata.uid for p in pods}
    assert all(cpu_of(p) == "100m" for p in now), "nothing resized while the apiserver is down"
    cs = await cluster.get("api")
    conditions = cs.get("status", {}).get("conditions") or []
    assert not any(c["type"] == "VerticalUpdateFailed" for c in conditions), "not a refusal"

    proxy.set_mode("pass")

    async def resized() -> list[Any] | None:
        pods = await cluster.pods("api")
        done = all(
            cpu_of(p) == "200m"
            and p.status.resize is None
            and str(p.status.container_statuses[0].resources.requests["cpu"]) == "200m"
            for p in pods
        )
        return pods if done else None

    now = await eventually(resized)
    assert {p.metadata.uid for p in now} == {p.metadata.uid for p in pods}, "resized in place"
    log = await read_log(cluster.settings, ev.PODS)
    proposed = [e.payload.name for e in log if isinstance(e.payload, ev.ResizeProposed)]
    assert sorted(proposed) == sorted(p.metadata.name for p in pods), "each resized once"
    assert cluster.controller.alive()


async def _at_least(proxy: FaultyProxy, n: int) -> bool:
    return proxy.failed >= n
