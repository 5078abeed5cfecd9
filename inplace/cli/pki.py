"""`inplace pki …`: the cluster's credentials directory (CA, certificates, tokens, kubeconfigs)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from inplace.cli.errors import fail
from inplace.core.security.credentials import Credentials
from inplace.core.security.kubeconfig import render, write_private

app = typer.Typer(help="Credentials: a local CA, certificates, tokens and kubeconfigs.")
out = Console(highlight=False, soft_wrap=True)

DIR = typer.Option(Path(".inplace/pki"), "--dir", envvar="INPLACE_PKI_DIR", help="where")
SERVER = typer.Option(
    "https://127.0.0.1:8080", "--server", envvar="INPLACE_API_URL", help="apiserver URL"
)

HOSTS = typer.Option([], "--host", help="extra DNS name or IP of the servers; repeatable")
GROUPS = typer.Option([], "--group", help="group (certificate O); repeatable")


@app.command("init")
def init_cmd(
    directory: Path = DIR,
    server: str = SERVER,
    host: list[str] = HOSTS,
    rotate: bool = typer.Option(False, "--rotate", help="reissue certificates and tokens"),
) -> None:
    """Create what is missing (idempotent: an existing CA and credentials are kept); with
    --rotate reissue every certificate and token under the same CA."""
    credentials = Credentials(directory)
    try:
        credentials.create(server, host, rotate=rotate)
    except (OSError, ValueError) as exc:
        raise fail(f"cannot write credentials in {directory}: {exc}") from None
    out.print(f"credentials in {directory}")
    out.print(f"export KUBECONFIG={credentials.admin_kubeconfig.absolute()}")


@app.command("issue")
def issue_cmd(
    user: str = typer.Argument(..., help="user name (certificate CN), e.g. system:node:node-1"),
    group: list[str] = GROUPS,
    name: str = typer.Option("", help="file name under users/ (default: the user name)"),
    directory: Path = DIR,
    server: str = SERVER,
) -> None:
    """Issue a client certificate for USER and write users/NAME.kubeconfig."""
    credentials = Credentials(directory)
    if not credentials.exists():
        raise fail(f"no credentials in {directory}: run `inplace pki init --dir {directory}`")
    stem = name or user.replace(":", "-")
    credentials.issue_user(stem, user, group, replace=True)
    text = render(
        server=server,
        ca_pem=credentials.ca_cert.read_bytes(),
        user=stem,
        cert_pem=credentials.user_cert(stem).read_bytes(),
        key_pem=credentials.user_key(stem).read_bytes(),
    )
    write_private(credentials.user_kubeconfig(stem), text)
    out.print(str(credentials.user_kubeconfig(stem).absolute()))
