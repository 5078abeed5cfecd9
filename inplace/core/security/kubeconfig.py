"""kubeconfig files: written for kubectl and the official clients, read by our own clients.

We read the handful of fields a client needs (server, CA, client certificate or token of the
current context) rather than depend on the whole `kubernetes` client package for it.
"""

from __future__ import annotations

import base64
import os
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError


class KubeconfigError(ValueError):
    """A kubeconfig that cannot be used; the message is one line."""


class _Open(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class _Cluster(_Open):
    server: str
    certificate_authority: str | None = Field(default=None, alias="certificate-authority")
    certificate_authority_data: str | None = Field(default=None, alias="certificate-authority-data")
    insecure_skip_tls_verify: bool = Field(default=False, alias="insecure-skip-tls-verify")


class _User(_Open):
    token: str | None = None
    client_certificate: str | None = Field(default=None, alias="client-certificate")
    client_certificate_data: str | None = Field(default=None, alias="client-certificate-data")
    client_key: str | None = Field(default=None, alias="client-key")
    client_key_data: str | None = Field(default=None, alias="client-key-data")


class _Context(_Open):
    cluster: str
    user: str
    namespace: str | None = None


class _Named(_Open):
    name: str


class _NamedCluster(_Named):
    cluster: _Cluster


class _NamedUser(_Named):
    user: _User


class _NamedContext(_Named):
    context: _Context


class _Kubeconfig(_Open):
    clusters: list[_NamedCluster] = []
    users: list[_NamedUser] = []
    contexts: list[_NamedContext] = []
    current_context: str = Field(default="", alias="current-context")


@dataclass(frozen=True)
class Endpoint:
    """Where an API is and how to prove who we are to it."""

    server: str
    ca_pem: bytes | None = None
    cert_file: Path | None = None  # client-certificate / client-key: files the kubeconfig names
    key_file: Path | None = None
    cert_pem: bytes | None = None  # client-certificate-data / client-key-data: embedded
    key_pem: bytes | None = None
    token: str | None = None
    verify: bool = True

    def ssl_context(self) -> ssl.SSLContext | bool:
        """What httpx takes as `verify=`: a context holding our CA and client certificate."""
        if not self.server.startswith("https://"):
            return True
        if not self.verify:
            return False
        context = ssl.create_default_context(cadata=self.ca_pem.decode() if self.ca_pem else None)
        if self.cert_file and self.key_file:
            context.load_cert_chain(self.cert_file, self.key_file)
        elif self.cert_pem and self.key_pem:
            _load_embedded(context, self.cert_pem, self.key_pem)
        return context

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}


def render(
    *,
    server: str,
    ca_pem: bytes,
    user: str,
    cert_pem: bytes | None = None,
    key_pem: bytes | None = None,
    token: str | None = None,
    cluster: str = "inplace",
) -> str:
    """A kubeconfig with one cluster, one user, one context; credentials embedded."""
    credentials: dict[str, str] = {}
    if cert_pem and key_pem:
        credentials["client-certificate-data"] = _b64(cert_pem)
        credentials["client-key-data"] = _b64(key_pem)
    if token:
        credentials["token"] = token
    document: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": cluster,
                "cluster": {"server": server, "certificate-authority-data": _b64(ca_pem)},
            }
        ],
        "users": [{"name": user, "user": credentials}],
        "contexts": [
            {
                "name": f"{user}@{cluster}",
                "context": {"cluster": cluster, "user": user, "namespace": "default"},
            }
        ],
        "current-context": f"{user}@{cluster}",
        "preferences": {},
    }
    return yaml.safe_dump(document, sort_keys=False)


def write_private(path: Path, text: str | bytes) -> None:
    """Create or replace `path` readable by its owner only (0600), never briefly wider."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = text.encode() if isinstance(text, str) else text
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    os.chmod(path, 0o600)


def load(path: Path) -> Endpoint:
    """The current context of the kubeconfig at `path`, as an `Endpoint`."""
    try:
        raw = yaml.safe_load(path.read_text())
        config = _Kubeconfig.model_validate(raw or {})
    except (OSError, yaml.YAMLError) as exc:
        raise KubeconfigError(f"cannot read kubeconfig {path}: {exc}") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise KubeconfigError(f"kubeconfig {path}: {where}: {first['msg']}") from None
    contexts = {c.name: c.context for c in config.contexts}
    context = contexts.get(config.current_context)
    if context is None:
        raise KubeconfigError(f"kubeconfig {path}: no current context {config.current_context!r}")
    cluster = next((c.cluster for c in config.clusters if c.name == context.cluster), None)
    user = next((u.user for u in config.users if u.name == context.user), None)
    if cluster is None or user is None:
        raise KubeconfigError(f"kubeconfig {path}: context names a missing cluster or user")
    base = path.parent
    ca = _bytes(cluster.certificate_authority_data, cluster.certificate_authority, base)
    return Endpoint(
        server=cluster.server.rstrip("/"),
        ca_pem=ca,
        cert_file=base / user.client_certificate if user.client_certificate else None,
        key_file=base / user.client_key if user.client_key else None,
        cert_pem=base64.b64decode(user.client_certificate_data or ""),
        key_pem=base64.b64decode(user.client_key_data or ""),
        token=user.token,
        verify=not cluster.insecure_skip_tls_verify,
    )


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _bytes(data: str | None, file: str | None, base: Path) -> bytes | None:
    if data:
        return base64.b64decode(data)
    if file:
        return (base / file).read_bytes()
    return None


def _load_embedded(context: ssl.SSLContext, cert_pem: bytes, key_pem: bytes) -> None:
    """Load an embedded client certificate and key into `context`. `ssl` reads them from files
    only, so they go to a private directory that is gone once they are read (it was left
    behind, a copy of the key in /tmp per process that ever read a kubeconfig)."""
    with tempfile.TemporaryDirectory(prefix="inplace-kubeconfig-") as directory:
        cert, key = Path(directory) / "cert.pem", Path(directory) / "key.pem"
        write_private(cert, cert_pem)
        write_private(key, key_pem)
        context.load_cert_chain(cert, key)
