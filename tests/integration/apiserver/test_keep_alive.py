"""An idle keep-alive connection stays open longer than a client keeps it (inplace.core.service
KEEP_ALIVE_S): `kubectl drain` retries a refused eviction every 5 s on the connection it used,
and with uvicorn's 5 s default the server closed it at that instant (the POST failed: EOF)."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

from tests.integration.conftest import RoleProcess


async def test_a_connection_idle_for_6_seconds_is_still_served(apiserver: RoleProcess) -> None:
    where = urlsplit(apiserver.url)
    reader, writer = await asyncio.open_connection(where.hostname, where.port)
    request = f"GET /version HTTP/1.1\r\nHost: {where.netloc}\r\n\r\n".encode()
    try:
        for _ in range(2):
            writer.write(request)
            await writer.drain()
            status = await asyncio.wait_for(reader.readline(), 10)
            assert status.startswith(b"HTTP/1.1 200"), status  # b"" once the server closed it
            length = 0
            while (line := await reader.readline()) != b"\r\n":
                name, _, value = line.decode().partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            await reader.readexactly(length)
            await asyncio.sleep(6)
    finally:
        writer.close()
