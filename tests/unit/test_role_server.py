"""RoleServer's listening socket: connections it accepts send small writes at once."""

from __future__ import annotations

import asyncio
import socket

import pytest
import uvloop

from inplace.core.service import RoleServer
from inplace.core.settings import Settings


async def _nodelay_of_an_accepted_connection() -> int:
    server = RoleServer("test", Settings(insecure_http=True), host="127.0.0.1", port=0)
    listener = server._listen()
    accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    class Probe(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            sock = transport.get_extra_info("socket")
            accepted.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))

    loop = asyncio.get_running_loop()
    served = await loop.create_server(Probe, sock=listener)
    try:
        _, writer = await asyncio.open_connection(*listener.getsockname()[:2])
        nodelay = await asyncio.wait_for(accepted, 5)
        writer.close()
        return nodelay
    finally:
        served.close()


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_accepted_connections_have_nagle_off(loop: str) -> None:
    # uvicorn writes a response's headers and body separately; with Nagle on, the body waited
    # for the client's delayed ACK (~40 ms per answer). Roles run on uvloop by default
    # (INPLACE_EVENT_LOOP), asyncio's own loop on request: both must turn it off.
    factory = uvloop.new_event_loop if loop == "uvloop" else None
    with asyncio.Runner(loop_factory=factory) as runner:
        assert runner.run(_nodelay_of_an_accepted_connection()) != 0


def test_a_taken_port_is_a_one_line_error() -> None:
    taken = socket.create_server(("127.0.0.1", 0))
    port = taken.getsockname()[1]
    try:
        server = RoleServer("test", Settings(insecure_http=True), host="127.0.0.1", port=port)
        with pytest.raises(RuntimeError, match=r"cannot listen on 127\.0\.0\.1"):
            server._listen()
    finally:
        taken.close()


def test_roles_parse_http_with_httptools() -> None:
    # A dependency, not an accident of the environment: uvicorn falls back to h11 (pure
    # Python, ~12% more apiserver CPU per resize) without it.
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    assert AutoHTTPProtocol.__name__ == "HttpToolsProtocol"
