"""/metrics of every role: any authenticated caller (a client certificate from the cluster CA or
a token), an anonymous one only from loopback; a wrong token is refused everywhere."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from inplace.core.security.credentials import Credentials
from inplace.core.security.guard import loopback_peer, may_read_metrics
from inplace.core.service import RoleServer
from inplace.core.settings import Settings
from schemas.envelope import UserInfo

SCRAPER = UserInfo(username="prometheus", groups=("system:authenticated",))


@pytest.mark.parametrize(
    ("peer", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.10.0.3", True),  # all of 127.0.0.0/8
        ("::1", True),
        ("[::1]", True),
        ("::ffff:127.0.0.1", True),  # IPv4 loopback on a dual-stack socket
        ("10.0.0.5", False),
        ("172.18.0.4", False),  # another container on the compose network
        ("0.0.0.0", False),
        ("::", False),
        ("::ffff:10.0.0.5", False),
        ("fe80::1", False),
        ("localhost", False),  # a peer address is never a name
        ("testclient", False),
        ("", False),
        (None, False),
    ],
)
def test_loopback_peer(peer: str | None, loopback: bool) -> None:
    assert loopback_peer(peer) is loopback


@pytest.mark.parametrize(
    ("peer", "caller", "bad_credentials", "allowed"),
    [
        ("127.0.0.1", None, False, True),  # anonymous on loopback: readable
        ("::1", None, False, True),
        ("10.0.0.5", None, False, False),  # anonymous from elsewhere: 401
        (None, None, False, False),
        ("10.0.0.5", SCRAPER, False, True),  # authenticated: from anywhere
        ("127.0.0.1", SCRAPER, False, True),
        ("127.0.0.1", None, True, False),  # a wrong token is never anonymous
        ("10.0.0.5", None, True, False),
    ],
)
def test_who_may_read_metrics(
    peer: str | None, caller: UserInfo | None, bad_credentials: bool, allowed: bool
) -> None:
    assert may_read_metrics(peer, caller, bad_credentials=bad_credentials) is allowed


@pytest.fixture(scope="module")
def credentials(tmp_path_factory: pytest.TempPathFactory) -> Credentials:
    made = Credentials(tmp_path_factory.mktemp("pki") / "pki")
    made.create("https://127.0.0.1:1")
    return made


def _server(credentials: Credentials) -> RoleServer:
    settings = Settings(pki_dir=str(credentials.root), insecure_http=False)
    return RoleServer("scheduler", settings, host="0.0.0.0", port=1)


def _token(credentials: Credentials, user: str) -> str:
    return next(t.token for t in credentials.read_tokens() if t.user == user)


def test_a_role_serves_metrics_to_callers_it_can_authenticate(credentials: Credentials) -> None:
    app = _server(credentials).app
    admin = {"Authorization": f"Bearer {_token(credentials, 'inplace-admin')}"}
    wrong = {"Authorization": "Bearer not-a-token"}
    with TestClient(app, client=("172.18.0.4", 40000)) as outside:
        refused = outside.get("/metrics")
        assert refused.status_code == 401
        assert refused.json()["reason"] == "Unauthorized"
        assert outside.get("/metrics", headers=wrong).status_code == 401
        served = outside.get("/metrics", headers=admin)
        assert served.status_code == 200
        assert "python_info" in served.text
        assert outside.get("/healthz").status_code == 200  # health stays open
    for peer in ("127.0.0.1", "::1"):
        with TestClient(app, client=(peer, 40000)) as local:
            assert local.get("/metrics").status_code == 200, peer
            assert local.get("/metrics", headers=wrong).status_code == 401, peer


def test_plain_http_mode_serves_metrics_on_loopback() -> None:
    settings = Settings(pki_dir="", insecure_http=True)
    app = RoleServer("scheduler", settings, host="127.0.0.1", port=1).app
    with TestClient(app, client=("127.0.0.1", 40000)) as local:
        assert local.get("/metrics").status_code == 200
