"""The quota role as a real process, and an apiserver that calls it for admission."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from inplace.core.settings import Settings
from tests.integration.conftest import RoleProcess


@pytest.fixture
def quota_env(request: pytest.FixtureRequest) -> dict[str, str]:
    """Extra INPLACE_* settings of the quota process (a test parametrizes it, indirect)."""
    return dict(getattr(request, "param", {}))


@pytest.fixture
async def quota(
    settings: Settings, tmp_path: Path, quota_env: dict[str, str]
) -> AsyncIterator[RoleProcess]:
    proc = RoleProcess("quota", settings, tmp_path / "quota.log", **quota_env)
    proc.start()
    await proc.ready()
    yield proc
    proc.stop()


@pytest.fixture
async def admitting_apiserver(
    settings: Settings, tmp_path: Path, quota: RoleProcess
) -> AsyncIterator[RoleProcess]:
    """An apiserver whose ResourceQuota/LimitRange admission is the `quota` process."""
    proc = RoleProcess(
        "apiserver", settings, tmp_path / "apiserver.log", INPLACE_QUOTA_URL=quota.url
    )
    proc.start()
    await proc.ready()
    yield proc
    proc.stop()
