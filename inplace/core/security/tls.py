"""HTTPS for every role: uvicorn serving our certificate, client certificates optional.

A client that presents a certificate must present one our CA signed (the handshake fails
otherwise); one that presents none may still authenticate with a bearer token. The verified
certificate reaches the app through ASGI's TLS extension (`scope["extensions"]["tls"]`), which
uvicorn does not fill in itself: the protocol below adds it once per connection.
"""

from __future__ import annotations

import ipaddress
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from uvicorn.protocols.http.auto import AutoHTTPProtocol

from inplace.core.security.credentials import Credentials


@dataclass(frozen=True)
class ServerTLS:
    cert_file: Path
    key_file: Path
    client_ca_file: Path

    @classmethod
    def of(cls, credentials: Credentials) -> ServerTLS:
        return cls(credentials.server_cert, credentials.server_key, credentials.ca_cert)

    def uvicorn_options(self) -> dict[str, Any]:
        return {
            "ssl_certfile": str(self.cert_file),
            "ssl_keyfile": str(self.key_file),
            "ssl_ca_certs": str(self.client_ca_file),
            "ssl_cert_reqs": ssl.CERT_OPTIONAL,
            "http": ClientCertProtocol,
        }


class ClientCertProtocol(AutoHTTPProtocol):  # type: ignore[misc,valid-type]
    """uvicorn's HTTP/1.1 protocol, plus the peer's verified certificate in every scope."""

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        ssl_object = transport.get_extra_info("ssl_object")
        der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        if not der:
            return
        extension = {"client_cert_chain": [ssl.DER_cert_to_PEM_cert(der)], "client_cert_der": der}
        inner = self.app

        async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
            scope.setdefault("extensions", {})["tls"] = extension
            await inner(scope, receive, send)

        self.app = app


def client_cert_der(scope: dict[str, Any]) -> bytes | None:
    """The verified client certificate of this request's connection, if it presented one."""
    tls = (scope.get("extensions") or {}).get("tls") or {}
    der = tls.get("client_cert_der")
    return der if isinstance(der, bytes) else None


class SecurityConfigError(RuntimeError):
    """A role asked to serve without credentials, or plain HTTP beyond loopback; one line."""


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host == "localhost"


def existing_credentials(pki_dir: Path, role: str) -> Credentials:
    credentials = Credentials(pki_dir)
    if not credentials.exists():
        raise SecurityConfigError(
            f"{role}: no credentials in {pki_dir}: run `inplace pki init --dir {pki_dir}`"
        )
    return credentials


def serving_tls(
    pki_dir: Path | None, insecure_http: bool, host: str, role: str
) -> ServerTLS | None:
    """HTTPS from the credentials directory, or None for the explicit plain-HTTP mode."""
    if pki_dir is not None:
        return ServerTLS.of(existing_credentials(pki_dir, role))
    if not insecure_http:
        raise SecurityConfigError(
            f"{role}: no credentials: set INPLACE_PKI_DIR (made by `inplace pki init`), or "
            "INPLACE_INSECURE_HTTP=true for plain HTTP without authentication on loopback"
        )
    if not _loopback(host):
        raise SecurityConfigError(
            f"{role}: plain HTTP without authentication serves loopback only, not {host}"
        )
    return None
