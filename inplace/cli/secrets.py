"""`inplace secrets init`: the secure profile's bootstrap secrets (docker-compose.yml, profile
`secure`): the Kafka admin's password and the broker's JAAS line that holds it, and the
PostgreSQL superuser's password with a pgpass file for the admin tools. Idempotent: existing
secrets are kept, so a second `up` changes nothing."""

from __future__ import annotations

import secrets
from pathlib import Path

import typer

from inplace.cli.errors import fail
from inplace.core.security.kubeconfig import write_private
from inplace.localinfra.kafka import SASL_ADMIN, plain_jaas

app = typer.Typer(help="Bootstrap secrets of the secure profile (Kafka admin, PostgreSQL).")

DIR = typer.Option(Path(".inplace/secrets"), "--dir", help="where the secrets go")


def _secret(path: Path) -> str:
    if not path.is_file():
        write_private(path, secrets.token_urlsafe(24) + "\n")
    return path.read_text().strip()


@app.command("init")
def init_cmd(directory: Path = DIR) -> None:
    """admin.kafka-password, kafka/server.properties (the broker's admin JAAS line, for the
    apache/kafka image's /mnt/shared/config), postgres.password and admin.pgpass."""
    try:
        kafka = _secret(directory / "admin.kafka-password")
        jaas = plain_jaas(kafka)
        write_private(
            directory / "kafka" / "server.properties",
            f"listener.name.sasl_plaintext.plain.sasl.jaas.config={jaas}\n",
        )
        postgres = _secret(directory / "postgres.password")
        write_private(directory / "admin.pgpass", f"*:*:*:postgres:{postgres}\n")
    except OSError as exc:
        raise fail(f"cannot write secrets in {directory}: {exc}") from None
    typer.echo(f"secrets in {directory} (Kafka admin: {SASL_ADMIN})")
