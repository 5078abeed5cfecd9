"""The credentials directory and kubeconfig files: made once, kept, rotated, read back."""

from __future__ import annotations

import ssl
import tempfile
from pathlib import Path

import pytest

from inplace.core.security import pki
from inplace.core.security.credentials import Credentials, parse_tokens
from inplace.core.security.kubeconfig import KubeconfigError, load


def test_create_is_idempotent_and_rotate_keeps_the_ca(tmp_path: Path) -> None:
    creds = Credentials(tmp_path / "pki")
    creds.create("https://127.0.0.1:6443", ["apiserver"])
    ca, kubeconfig, tokens = (
        creds.ca_cert.read_bytes(),
        creds.admin_kubeconfig.read_text(),
        creds.tokens.read_text(),
    )
    assert creds.admin_kubeconfig.stat().st_mode & 0o777 == 0o600
    assert creds.ca_key.stat().st_mode & 0o777 == 0o600
    creds.create("https://127.0.0.1:6443")
    assert creds.admin_kubeconfig.read_text() == kubeconfig  # an exported kubeconfig stays valid
    assert creds.tokens.read_text() == tokens
    creds.create("https://127.0.0.1:6443", rotate=True)
    assert creds.ca_cert.read_bytes() == ca
    assert creds.admin_kubeconfig.read_text() != kubeconfig
    assert creds.tokens.read_text() != tokens
    users = {t.user: t.groups for t in creds.read_tokens()}
    assert users["inplace-admin"] == ("system:masters",)


def test_the_kubeconfig_reads_back_into_a_working_tls_context(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    creds = Credentials(tmp_path / "pki")
    creds.create("https://127.0.0.1:6443/")
    endpoint = load(creds.user_kubeconfig("workload"))
    assert endpoint.server == "https://127.0.0.1:6443"
    assert endpoint.ca_pem == creds.ca_cert.read_bytes()
    assert endpoint.cert_pem == creds.user_cert("workload").read_bytes()
    left = tmp_path / "tmp"
    left.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(left))
    context = endpoint.ssl_context()
    assert list(left.iterdir()) == []  # the embedded key was read from a file, now gone
    assert isinstance(context, ssl.SSLContext)
    assert len(context.get_ca_certs()) == 1
    assert context.verify_mode == ssl.CERT_REQUIRED
    der = ssl.PEM_cert_to_DER_cert(creds.user_cert("workload").read_text())
    assert pki.subject_of(der) == (
        "system:inplace:workload-controller",
        ("system:inplace:controllers",),
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("current-context: x\ncontexts: []", "no current context 'x'"),
        ("clusters: [{name: c}]", "clusters.0.cluster: Field required"),
        (
            "current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]",
            "missing cluster or user",
        ),
        ("{", "cannot read kubeconfig"),
    ],
)
def test_a_bad_kubeconfig_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(text)
    with pytest.raises(KubeconfigError, match=message):
        load(path)


def test_token_file_format() -> None:
    [token] = parse_tokens('abc,alice,1,"devs,ops"\n# comment\n')
    assert (token.token, token.user, token.uid, token.groups) == (
        "abc",
        "alice",
        "1",
        ("devs", "ops"),
    )
    with pytest.raises(ValueError, match="want token,user,uid"):
        parse_tokens("abc,alice\n")
