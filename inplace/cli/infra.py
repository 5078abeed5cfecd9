"""`inplace kafka …` and `inplace postgres …`: the real local broker and database."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from inplace.cli.errors import fail
from inplace.cli.output import OUTPUT, Format, check_format, print_document
from inplace.localinfra import KafkaBroker, LocalInfraError, PostgresCluster

kafka_app = typer.Typer(help="Single-node KRaft Kafka broker from Maven Central's jars.")
postgres_app = typer.Typer(help="Throwaway PostgreSQL cluster (initdb + pg_ctl).")


def home() -> Path:
    """Where local state lives: $INPLACE_HOME or ./.inplace."""
    return Path(os.environ.get("INPLACE_HOME", ".inplace")).absolute()


DataDir = typer.Option(None, help="State directory (default: $INPLACE_HOME/<server>)")
Port = typer.Option(None, help="Port (default: remembered, else 9092/5432 when free)")


def broker(data_dir: Path | None, port: int | None = None) -> KafkaBroker:
    return KafkaBroker(data_dir or home() / "kafka", port=port)


def database(data_dir: Path | None, port: int | None = None, fsync: bool = True) -> PostgresCluster:
    return PostgresCluster(data_dir or home() / "postgres", port=port, fsync=fsync)


@kafka_app.command("start")
def kafka_start(data_dir: Path | None = DataDir, port: int | None = Port) -> None:
    """Fetch the jars (cached), format storage once, start the broker, wait until ready."""
    b = broker(data_dir, port)
    try:
        b.start()
    except LocalInfraError as exc:
        raise fail(str(exc)) from None
    typer.echo(f"kafka ready: {b.bootstrap_servers}  (pid {b.pid}, data {b.data_dir})")


@kafka_app.command("stop")
def kafka_stop(data_dir: Path | None = DataDir) -> None:
    """Stop the broker started from this data directory (by its own PID)."""
    broker(data_dir).stop()
    typer.echo("kafka stopped")


@kafka_app.command("status")
def kafka_status(data_dir: Path | None = DataDir, output: str = OUTPUT) -> None:
    """Whether the broker of this data directory runs (`-o json|yaml`: one document).

    Exit codes: 0 running, 2 bad option, 3 not running."""
    fmt = check_format(output)
    b = broker(data_dir)
    running = b.is_running()
    document = {
        "running": running,
        "bootstrap": b.bootstrap_servers if running else None,
        "pid": b.pid if running else None,
        "data_dir": str(b.data_dir),
    }
    status(document, fmt, f"kafka running: {b.bootstrap_servers} (pid {b.pid})")
    if not running:
        raise fail(f"kafka is not running (data {b.data_dir})", code=3)


def status(document: dict[str, object], fmt: Format, running_line: str) -> None:
    """A status document for scripts (also when not running: the exit code says so), or the
    running line for a human."""
    if not print_document(document, fmt) and document["running"]:
        typer.echo(running_line)


@postgres_app.command("start")
def postgres_start(
    data_dir: Path | None = DataDir,
    port: int | None = Port,
    fsync: bool = typer.Option(True, help="--no-fsync for throwaway test clusters"),
    database_name: str = typer.Option("inplace", "--database", help="database to create"),
) -> None:
    """initdb once, start the server on loopback, create the database."""
    db = database(data_dir, port, fsync)
    try:
        db.start()
        db.create_database(database_name)
    except LocalInfraError as exc:
        raise fail(str(exc)) from None
    typer.echo(f"postgres ready: {db.dsn(database_name)}  (pid {db.pid})")


@postgres_app.command("stop")
def postgres_stop(data_dir: Path | None = DataDir) -> None:
    database(data_dir).stop()
    typer.echo("postgres stopped")


@postgres_app.command("status")
def postgres_status(data_dir: Path | None = DataDir, output: str = OUTPUT) -> None:
    """Whether the server of this data directory runs (`-o json|yaml`: one document).

    Exit codes: 0 running, 2 bad option, 3 not running."""
    fmt = check_format(output)
    db = database(data_dir)
    running = db.is_running()
    document = {
        "running": running,
        "dsn": db.dsn("inplace") if running else None,
        "pid": db.pid if running else None,
        "data_dir": str(db.data_dir),
    }
    status(document, fmt, f"postgres running: {db.dsn('inplace')} (pid {db.pid})")
    if not running:
        raise fail(f"postgres is not running (data {db.data_dir})", code=3)


PASSWORDS = typer.Option(
    ..., "--passwords", help="directory of the roles' password files (missing ones are made)"
)
ROLE = typer.Option([], "--role", help="only these roles (default: all)")


def _passwords(directory: Path, roles: list[str], suffix: str) -> dict[str, str]:
    """Each role's password from `<role><suffix>` in `directory`, made (0600) when missing."""
    import secrets

    from inplace.core.security.kubeconfig import write_private

    found: dict[str, str] = {}
    for name in roles:
        path = directory / f"{name}{suffix}"
        if not path.is_file():
            write_private(path, secrets.token_urlsafe(24) + "\n")
        found[name] = path.read_text().strip()
    return found


@kafka_app.command("provision")
def kafka_provision(passwords: Path = PASSWORDS, role: list[str] = ROLE) -> None:
    """Secure profile: each role's SCRAM-SHA-512 credential (`<role>.kafka-password`) and its
    ACLs on the log (inplace/core/bus/access.py), made as the admin of INPLACE_KAFKA_*."""
    import asyncio

    from pydantic import ValidationError

    from inplace.core.bus.access import ROLE_WRITES, ROLES, provision, roles_of
    from inplace.core.bus.auth import kafka_auth
    from inplace.core.settings import Settings

    try:
        roles = roles_of(role or ROLES)
        admin = kafka_auth()
    except (ValueError, ValidationError) as exc:
        raise fail(_first_error(exc)) from None
    settings = Settings()
    try:
        found = _passwords(passwords, roles, ".kafka-password")
        grants = asyncio.run(
            asyncio.to_thread(
                provision,
                settings.kafka_bootstrap,
                admin,
                found,
                topic_prefix=settings.topic_prefix,
            )
        )
    except Exception as exc:  # a broker refusal or a bad directory: one line, non-zero
        raise fail(f"cannot provision Kafka principals: {exc}") from None
    for name in roles:
        writes = ", ".join(ROLE_WRITES[name]) or "-"
        count = sum(1 for g in grants if g.principal == f"User:{name}")
        typer.echo(f"User:{name}: writes {writes}; {count} ACLs")


@postgres_app.command("provision")
def postgres_provision(passwords: Path = PASSWORDS, role: list[str] = ROLE) -> None:
    """Secure profile: a login per role (`inplace_<role>`; the projector writes, the rest
    read), with `<role>.pgpass` files for PGPASSFILE; as the admin of INPLACE_POSTGRES_DSN."""
    import asyncio

    import asyncpg

    from inplace.core.security.kubeconfig import write_private
    from inplace.core.settings import Settings
    from inplace.core.store import roles as db_roles

    known = (*db_roles.WRITERS, *db_roles.READERS)
    unknown = [r for r in role if r not in known]
    if unknown:
        raise fail(f"unknown role {unknown[0]!r}; roles: {', '.join(known)}")
    roles = list(role or known)
    settings = Settings()

    async def go(found: dict[str, str]) -> None:
        conn = await asyncpg.connect(settings.postgres_dsn)
        try:
            await db_roles.provision(conn, settings.projection_schema, found)
        finally:
            await conn.close()

    try:
        found = _passwords(passwords, roles, ".pg-password")
        asyncio.run(go(found))
        for name, password in found.items():
            write_private(
                passwords / f"{name}.pgpass", f"*:*:*:{db_roles.db_role(name)}:{password}\n"
            )
    except Exception as exc:  # refused by the server, or a bad directory: one line, non-zero
        raise fail(f"cannot provision PostgreSQL roles: {exc}") from None
    for name in roles:
        kind = "writes" if name in db_roles.WRITERS else "reads"
        typer.echo(f"{db_roles.db_role(name)}: {kind} schema {settings.projection_schema}")


def _first_error(exc: Exception) -> str:
    from pydantic import ValidationError

    if isinstance(exc, ValidationError):
        return str(exc.errors()[0]["msg"]).removeprefix("Value error, ")
    return str(exc)
