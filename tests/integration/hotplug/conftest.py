"""The hotplug role as a child process, and helpers to drive it and read what it logs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from inplace.core.settings import Settings
from schemas.envelope import EventPayload
from tests.integration.conftest import RoleProcess, read_log


async def payloads_of(
    settings: Settings, kind: type[EventPayload], topic: str, within: float = 30
) -> list[Any]:
    deadline = asyncio.get_running_loop().time() + within
    while True:
        found = [e.payload for e in await read_log(settings, topic) if isinstance(e.payload, kind)]
        if found or asyncio.get_running_loop().time() > deadline:
            return found
        await asyncio.sleep(0.2)


async def post_when_known(
    url: str, name: str, body: dict[str, Any], within: float = 30
) -> httpx.Response:
    """POST a resize, retrying while the hotplug read model has not seen the node yet."""
    deadline = asyncio.get_running_loop().time() + within
    async with httpx.AsyncClient(timeout=30) as http:
        while True:
            response = await http.post(f"{url}/api/v1/nodes/{name}/resize", json=body)
            if response.status_code != 404 or asyncio.get_running_loop().time() > deadline:
                return response
            await asyncio.sleep(0.1)


def strs(values: dict[str, Any]) -> dict[str, str]:
    return {k: str(v) for k, v in values.items()}


@pytest.fixture
async def hotplug(settings: Settings, tmp_path: Path) -> AsyncIterator[RoleProcess]:
    proc = RoleProcess("hotplug", settings, tmp_path / "hotplug.log")
    proc.start()
    await proc.ready()
    yield proc
    assert proc.stop() == 0
