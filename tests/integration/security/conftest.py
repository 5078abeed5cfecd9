"""An apiserver serving HTTPS with authentication and authorization, and its credentials."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from inplace.core.security.credentials import Credentials
from inplace.core.settings import Settings
from tests.integration.conftest import RoleProcess


@pytest.fixture
def credentials(tmp_path: Path) -> Credentials:
    made = Credentials(tmp_path / "pki")
    made.create("https://127.0.0.1:1")  # kubeconfigs are rewritten once the port is known
    return made


async def start_secure(
    role: str, settings: Settings, credentials: Credentials, log: Path, **env: str
) -> RoleProcess:
    """`role` serving HTTPS with `credentials`, as `inplace up` runs it."""
    proc = RoleProcess(
        role,
        settings,
        log,
        ca=credentials.ca_cert,
        INPLACE_INSECURE_HTTP="false",
        INPLACE_PKI_DIR=str(credentials.root),
        **env,
    )
    proc.start()
    await proc.ready()
    return proc


async def start_secure_apiserver(
    settings: Settings, credentials: Credentials, log: Path, **env: str
) -> RoleProcess:
    env.setdefault("INPLACE_QUOTA_URL", "")
    proc = await start_secure(
        "apiserver",
        settings,
        credentials,
        log,
        INPLACE_APISERVER_AUDIT_LOG=str(log.parent / "audit.log"),
        **env,
    )
    credentials.write_kubeconfigs(proc.url)
    return proc


@pytest.fixture
async def secure_apiserver(
    settings: Settings, credentials: Credentials, tmp_path: Path
) -> AsyncIterator[RoleProcess]:
    proc = await start_secure_apiserver(settings, credentials, tmp_path / "apiserver.log")
    yield proc
    proc.stop()


def as_user(proc: RoleProcess, credentials: Credentials, name: str) -> httpx.AsyncClient:
    """A client presenting users/<name>.crt (issued by `credentials`)."""
    assert proc.ca is not None
    context = ssl.create_default_context(cafile=proc.ca)
    context.load_cert_chain(credentials.user_cert(name), credentials.user_key(name))
    return httpx.AsyncClient(base_url=proc.url, verify=context, timeout=30)


def token_of(credentials: Credentials, user: str) -> str:
    return next(t.token for t in credentials.read_tokens() if t.user == user)
