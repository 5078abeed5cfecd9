"""Roles run on uvloop unless told otherwise (INPLACE_EVENT_LOOP), and serve either way."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from inplace.core.settings import Settings
from tests.integration.conftest import RoleProcess

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(("setting", "loop"), [(None, "uvloop"), ("asyncio", "asyncio")])
async def test_a_role_serves_on_the_event_loop_it_is_given(
    settings: Settings, tmp_path: Path, setting: str | None, loop: str
) -> None:
    env = {"INPLACE_EVENT_LOOP": setting} if setting else {}
    role = RoleProcess("projector", settings, tmp_path / "projector.log", **env)
    role.start()
    try:
        await role.ready()
    finally:
        assert role.stop() == 0
    assert re.search(rf"projector serving on http://\S+ \({loop}\)", role.log.read_text())
