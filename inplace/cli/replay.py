"""`inplace replay …`: rebuild projections, a pod's timeline, the cluster as of a position."""

from __future__ import annotations

import json

import asyncpg
import typer
from rich.console import Console
from rich.table import Table

from inplace.cli.errors import fail, run_async
from inplace.core.projection.replay import parse_position, pod_history, rebuild, state_at
from inplace.core.projection.store import ProjectionStore
from inplace.core.settings import Settings

app = typer.Typer(help="Replay the log: rebuild projections, pod history, state at a position.")
out = Console(highlight=False, soft_wrap=True)


@app.command("rebuild")
def rebuild_cmd(
    replace: bool = typer.Option(
        False, help="swap the rebuilt projection in for the live one (atomic, under a lock)"
    ),
    shadow: str = typer.Option("projection_rebuild", help="schema to rebuild into"),
) -> None:
    """Replay every topic from offset 0 into a fresh schema, up to exactly the live
    projection's offsets, and print both checksums (exit 1 if they differ)."""
    s = Settings()
    report = run_async(
        rebuild(
            s.postgres_dsn,
            s.kafka_bootstrap,
            live_schema=s.projection_schema,
            shadow_schema=shadow,
            replace=replace,
            topic_prefix=s.topic_prefix,
        )
    )
    out.print(
        f"replayed {report.events} events in {report.seconds:.2f}s "
        f"({report.events_per_second:,.0f} events/s)"
    )
    out.print(f"rebuilt checksum {report.rebuilt_checksum}")
    if report.live_checksum is None:
        out.print("live checksum    (no live projection yet)")
    else:
        out.print(f"live checksum    {report.live_checksum}")
    if report.replaced:
        out.print(f"the rebuilt projection replaced schema {s.projection_schema}")
    if report.live_checksum is not None and report.live_checksum != report.rebuilt_checksum:
        raise fail("checksums differ: the live projection does not match the log")
    if report.live_checksum is not None:
        out.print("match")


@app.command("checksum")
def checksum_cmd() -> None:
    """Print the live projection's checksum and row counts."""
    s = Settings()

    async def go() -> tuple[str, dict[str, int]]:
        conn = await asyncpg.connect(s.postgres_dsn)
        try:
            store = ProjectionStore(s.projection_schema)
            return await store.checksum(conn), await store.counts(conn)
        finally:
            await conn.close()

    checksum, counts = run_async(go())
    out.print(checksum)
    out.print("  ".join(f"{k}={v}" for k, v in counts.items()))


@app.command("history")
def history_cmd(pod: str = typer.Argument(..., help="<namespace>/<name>")) -> None:
    """A pod's events in log order, with correlation ids and the time between steps."""
    if pod.count("/") != 1 or not all(pod.split("/")):
        raise fail(f"pod {pod!r} is not <namespace>/<name>")
    namespace, name = pod.split("/")
    s = Settings()
    entries = run_async(pod_history(s.kafka_bootstrap, namespace, name, s.topic_prefix))
    if not entries:
        raise fail(f"no events for pod {pod} in the log", code=3)
    table = Table("offset", "time", "+delta", "event", "producer", "correlation id", "detail")
    for entry in entries:
        env = entry.record.envelope
        detail = env.payload.model_dump(
            mode="json", by_alias=True, exclude_none=True, exclude={"namespace", "name", "uid"}
        )
        table.add_row(
            str(entry.record.position.offset),
            env.time.strftime("%H:%M:%S.%f")[:-3],
            "" if entry.since_previous is None else f"{entry.since_previous * 1000:.1f}ms",
            env.type,
            env.producer,
            env.correlation_id,
            _short(detail),
        )
    out.print(table)


@app.command("state")
def state_cmd(
    at: str = typer.Option(..., "--at", help="<topic>:<partition>:<offset>, e.g. pods:0:41"),
    output: str = typer.Option("table", "-o", "--output", help="table | json"),
) -> None:
    """The pods and nodes as of a position in the log."""
    try:
        position = parse_position(at)
    except ValueError as exc:
        raise fail(str(exc)) from None
    if output not in ("table", "json"):
        raise fail(f"--output must be table or json, not {output!r}")
    s = Settings()
    state, cut = run_async(state_at(s.kafka_bootstrap, position, s.topic_prefix))
    if output == "json":
        out.print_json(
            json.dumps(
                {
                    "at": str(position),
                    "time": cut.isoformat(),
                    "pods": [p.to_k8s() for _, p in sorted(state.pods.items())],
                    "nodes": [n.to_k8s() for _, n in sorted(state.nodes.items())],
                }
            )
        )
        return
    out.print(f"state at {position} ({cut.isoformat()})")
    pods = Table("namespace/name", "node", "phase", "resize", "desired", "allocated", "actual")
    for (ns, name), p in sorted(state.pods.items()):
        statuses = {c.name: c for c in p.status.container_statuses or []}
        for c in p.spec.containers:
            st = statuses.get(c.name)
            pods.add_row(
                f"{ns}/{name}[{c.name}]",
                p.spec.node_name or "",
                p.status.phase or "",
                p.status.resize or "",
                _short(c.resources.to_k8s()),
                _short({k: str(v) for k, v in (st.allocated_resources or {}).items()})
                if st
                else "",
                _short(st.resources.to_k8s()) if st and st.resources else "",
            )
    out.print(pods)
    nodes = Table("node", "capacity", "allocatable", "initialCapacity")
    for name, n in sorted(state.nodes.items()):
        st = n.status
        nodes.add_row(
            name,
            _resources(st.capacity),
            _resources(st.allocatable),
            _resources(st.initial_capacity),
        )
    out.print(nodes)


def _short(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def _resources(rl: dict[str, object] | None) -> str:
    return _short({k: str(v) for k, v in (rl or {}).items()})
