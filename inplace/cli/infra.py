"""`inplace kafka …` and `inplace postgres …`: the real local broker and database."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from inplace.cli.errors import fail
from inplace.core.localinfra import KafkaBroker, LocalInfraError, PostgresCluster

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
def kafka_status(data_dir: Path | None = DataDir) -> None:
    b = broker(data_dir)
    if not b.is_running():
        raise fail(f"kafka is not running (data {b.data_dir})", code=3)
    typer.echo(f"kafka running: {b.bootstrap_servers} (pid {b.pid})")


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
def postgres_status(data_dir: Path | None = DataDir) -> None:
    db = database(data_dir)
    if not db.is_running():
        raise fail(f"postgres is not running (data {db.data_dir})", code=3)
    typer.echo(f"postgres running: {db.dsn('inplace')} (pid {db.pid})")
