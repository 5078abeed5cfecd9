"""The `inplace` command line."""

from __future__ import annotations

import asyncio
import signal
import sys

import typer
import uvloop
from pydantic import ValidationError
from rich.console import Console

from inplace.cli.errors import fail, run_async
from inplace.cli.lazy import LazyGroup
from inplace.cli.output import OUTPUT, check_format, print_document, print_rows
from inplace.cli.roles import ROLES, serve
from inplace.core.bus.auth import kafka_auth
from inplace.core.service import configure_logging
from inplace.core.settings import DEFAULT_PORTS, Settings

app = typer.Typer(
    help="inplace: an event-sourced control plane for in-place pod and node resize.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    cls=LazyGroup,  # kafka, postgres, replay, node, pki, secrets, load, explain: lazy.py
)
out = Console(highlight=False, soft_wrap=True)


@app.command("serve")
def serve_cmd(
    role: str = typer.Argument(..., help=f"one of: {', '.join(ROLES)}"),
    host: str | None = typer.Option(None, help="bind address (default: $INPLACE_HOST)"),
    port: int | None = typer.Option(None, help="HTTP port (default: the role's own)"),
) -> None:
    """Run one role: its Kafka loops plus /healthz, /readyz and /metrics (+ its API)."""
    if role not in ROLES:
        raise fail(f"unknown role {role!r}; roles: {', '.join(ROLES)}")
    settings = Settings()
    try:
        kafka_auth()  # its Kafka credentials, checked before anything connects
    except ValidationError as exc:
        raise fail(str(exc.errors()[0]["msg"]).removeprefix("Value error, ")) from None
    configure_logging(settings.log_level, role)
    loop = uvloop.new_event_loop if settings.event_loop == "uvloop" else None
    run_async(
        serve(role, settings, host=host or settings.host, port=port or DEFAULT_PORTS[role]),
        loop_factory=loop,
    )


@app.command("topics")
def topics_cmd(output: str = OUTPUT) -> None:
    """Create the event topics with their partition counts and retention (idempotent)."""
    from inplace.core.bus.topics import ensure_topics, topic_specs

    fmt = check_format(output)
    settings = Settings()
    created = run_async(ensure_topics(settings))
    rows = [
        {
            "topic": spec.name,
            "partitions": spec.partitions,
            "state": "created" if spec.name in created else "exists",
        }
        for spec in topic_specs(settings)
    ]
    print_rows(rows, ["topic", "partitions", "state"], fmt, console=out)


@app.command("migrate")
def migrate_cmd(output: str = OUTPUT) -> None:
    """Apply the projection schema's SQL migrations (idempotent; `-o json|yaml`: one document
    with the schema and the migrations applied now)."""
    from inplace.core.store.database import create_pool
    from inplace.core.store.migrations import migrate

    fmt = check_format(output)
    settings = Settings()

    async def go() -> list[int]:
        pool = await create_pool(settings.postgres_dsn, max_size=1)
        try:
            async with pool.acquire() as conn:
                return await migrate(conn, settings.projection_schema)
        finally:
            await pool.close()

    applied = run_async(go())
    if print_document({"schema": settings.projection_schema, "applied": applied}, fmt):
        return
    out.print(f"applied migrations {applied}" if applied else "schema is up to date")


@app.command("up")
def up_cmd(
    home: str = typer.Option(".inplace", envvar="INPLACE_HOME", help="state directory"),
    kafka_port: int | None = typer.Option(None, help="broker port (default 9092 if free)"),
    postgres_port: int | None = typer.Option(None, help="database port (default 5432 if free)"),
    insecure_http: bool = typer.Option(
        False, "--insecure-http", help="plain HTTP, no authentication (loopback experiments)"
    ),
    apiservers: int = typer.Option(1, "--apiservers", min=1, help="apiserver replicas"),
    kubelets: int = typer.Option(
        1, "--kubelets", min=1, help="kubelet processes sharing the nodes (one consumer group)"
    ),
    workloads: int = typer.Option(
        1,
        "--workloads",
        min=1,
        help="workload controllers sharing the CloneSets (one consumer group)",
    ),
    schedulers: int = typer.Option(
        1, "--schedulers", min=1, help="schedulers: one binds, the others stand by (one group)"
    ),
) -> None:
    """Start the local cluster (Kafka, PostgreSQL, every role), print how to use it, and
    keep it running until Ctrl-C, which stops every process it started."""
    from pathlib import Path

    from inplace.cli.localcluster import LocalCluster, pick_port
    from inplace.localinfra import LocalInfraError

    cluster = LocalCluster(
        Path(home).absolute(),
        kafka_port=kafka_port or pick_port(9092),
        postgres_port=postgres_port or pick_port(5432),
        say=out.print,
        secure=not insecure_http,
        apiservers=apiservers,
        kubelets=kubelets,
        workloads=workloads,
        schedulers=schedulers,
    )
    stop = [False]

    def on_signal(signum: int, frame: object) -> None:
        stop[0] = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        cluster.start()
        out.print(cluster.summary())
        sys.stdout.flush()
        cluster.supervise(stop)
    except LocalInfraError as exc:
        cluster.stop()
        raise fail(str(exc)) from None
    out.print("stopping …")
    cluster.stop()
    out.print("stopped.")


@app.command("dead-letters")
def dead_letters_cmd(
    limit: int = typer.Option(50, help="most recent N"), output: str = OUTPUT
) -> None:
    """List records parked on the dead-letter topic, with where they came from and why.

    Exit codes: 0 printed (also when there are none), 1 unreachable Kafka, 2 bad option."""
    from inplace.core.bus.deadletters import read_dead_letters

    fmt = check_format(output)
    s = Settings()
    rows = run_async(read_dead_letters(s.kafka_bootstrap, limit, s.topic_prefix))
    if not rows and fmt == "table":
        out.print("no dead letters")
        return
    found = [{"source": r.source, "consumer": r.consumer, "reason": r.reason} for r in rows]
    print_rows(found, ["source", "consumer", "reason"], fmt, console=out)


def main() -> None:
    asyncio.set_event_loop_policy(None)
    app()


if __name__ == "__main__":
    main()
