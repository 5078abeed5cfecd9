"""RoleServer's listening socket: connections it accepts send small writes at once."""

from __future__ import annotations

import asyncio
import socket

import pytest
import uvloop

from inplace.core.service import RoleServer
from inplace.core.settings import Settings
from tests.factories import in_generation


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


@pytest.mark.usefixtures("no_automatic_collections")
async def test_a_running_role_freezes_its_young_generation_on_a_timer() -> None:
    # Only the role's timer acts here: an object the role keeps leaves generation 0 (frozen)
    # while the role runs (gcpauses.Collections), with no allocations to trigger it.
    server = RoleServer("test", Settings(insecure_http=True), host="127.0.0.1", port=0)
    kept = [object()]
    assert in_generation(kept, 0)

    async def watch() -> None:
        for _ in range(500):
            await asyncio.sleep(0.01)
            if not in_generation(kept, 0):
                return
        raise AssertionError("still in generation 0 after 5 s")

    await server.run({"watch": watch})
