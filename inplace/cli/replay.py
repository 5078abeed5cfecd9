"""`inplace replay …`: rebuild projections, a pod's timeline, the cluster as of a position."""

from __future__ import annotations

import json

import asyncpg
import typer
from rich.console import Console

from inplace.cli.errors import fail, run_async
from inplace.cli.output import OUTPUT, check_format, print_document, print_rows
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
    output: str = OUTPUT,
) -> None:
    """Replay every topic from offset 0 into a fresh schema, up to exactly the live
    projection's offsets, and print both checksums (`-o json|yaml`: one document).

    Exit codes: 0 rebuilt (and equal to the live projection, if any), 1 the checksums differ
    or Kafka/PostgreSQL unreachable, 2 bad option."""
    fmt = check_format(output)
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
    differ = report.live_checksum is not None and report.live_checksum != report.rebuilt_checksum
    document = {
        "events": report.events,
        "seconds": round(report.seconds, 3),
        "events_per_second": round(report.events_per_second, 1),
        "rebuilt_checksum": report.rebuilt_checksum,
        "live_checksum": report.live_checksum,
        "match": None if report.live_checksum is None else not differ,
        "replaced": report.replaced,
        "schema": shadow,
        "offsets": {f"{tp.topic}:{tp.partition}": o for tp, o in sorted(report.offsets.items())},
    }
    if not print_document(document, fmt):
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
    if differ:
        raise fail("checksums differ: the live projection does not match the log")
    if report.live_checksum is not None and fmt == "table":
        out.print("match")


@app.command("checksum")
def checksum_cmd(output: str = OUTPUT) -> None:
    """Print the live projection's checksum and row counts (`-o json|yaml`: one document).

    Exit codes: 0 printed, 1 unreachable PostgreSQL, 2 bad option."""
    fmt = check_format(output)
    s = Settings()

    async def go() -> tuple[str, dict[str, int]]:
        conn = await asyncpg.connect(s.postgres_dsn)
        try:
            store = ProjectionStore(s.projection_schema)
            return await store.checksum(conn), await store.counts(conn)
        finally:
            await conn.close()

    checksum, counts = run_async(go())
    if print_document({"checksum": checksum, "counts": counts}, fmt):
        return
    out.print(checksum)
    out.print("  ".join(f"{k}={v}" for k, v in counts.items()))


@app.command("history")
def history_cmd(
    pod: str = typer.Argument(..., help="<namespace>/<name>"),
    output: str = OUTPUT,
) -> None:
    """A pod's events in log order: who asked (the API user), correlation ids, and the time
    between steps. An update folded to nothing (decided from a version of the pod another
    write had replaced: two apiserver replicas at once) is marked refused.

    Exit codes: 0 events printed, 1 bad argument or unreachable Kafka, 2 bad option,
    3 no events for the pod."""
    fmt = check_format(output)
    if pod.count("/") != 1 or not all(pod.split("/")):
        raise fail(f"pod {pod!r} is not <namespace>/<name>")
    namespace, name = pod.split("/")
    s = Settings()
    entries = run_async(pod_history(s.kafka_bootstrap, namespace, name, s.topic_prefix))
    if not entries:
        raise fail(f"no events for pod {pod} in the log", code=3)
    rows = []
    for entry in entries:
        env = entry.record.envelope
        detail = env.payload.model_dump(
            mode="json", by_alias=True, exclude_none=True, exclude={"namespace", "name", "uid"}
        )
        rows.append(
            {
                "offset": entry.record.position.offset,
                "partition": entry.record.position.partition,
                "time": env.time.isoformat(),
                "delta_ms": None
                if entry.since_previous is None
                else round(entry.since_previous * 1000, 1),
                "event": f"{env.type} (refused)" if entry.refused and fmt == "table" else env.type,
                "refused": entry.refused,
                "producer": env.producer,
                "user": env.user.username if env.user else "",
                "correlation_id": env.correlation_id,
                "detail": detail if fmt != "table" else _short(detail),
            }
        )
    columns = [
        "offset",
        "time",
        "delta_ms",
        "event",
        "producer",
        "user",
        "correlation_id",
        "detail",
    ]
    print_rows(rows, columns, fmt, console=out)


@app.command("state")
def state_cmd(
    at: str = typer.Option(..., "--at", help="<topic>:<partition>:<offset>, e.g. pods:0:41"),
    output: str = OUTPUT,
) -> None:
    """The pods and nodes as of a position in the log (`-o json|yaml`: one document).

    Exit codes: 0 printed, 1 bad position or unreachable Kafka, 2 bad option."""
    fmt = check_format(output)
    try:
        position = parse_position(at)
    except ValueError as exc:
        raise fail(str(exc)) from None
    s = Settings()
    state, cut = run_async(state_at(s.kafka_bootstrap, position, s.topic_prefix))
    document = {
        "at": str(position),
        "time": cut.isoformat(),
        "pods": [p.to_k8s() for _, p in sorted(state.pods.items())],
        "nodes": [n.to_k8s() for _, n in sorted(state.nodes.items())],
    }
    if print_document(document, fmt):
        return
    out.print(f"state at {position} ({cut.isoformat()})")
    pods = []
    for (ns, name), p in sorted(state.pods.items()):
        statuses = {c.name: c for c in p.status.container_statuses or []}
        for c in p.spec.containers:
            st = statuses.get(c.name)
            pods.append(
                {
                    "namespace/name": f"{ns}/{name}[{c.name}]",
                    "node": p.spec.node_name or "",
                    "phase": p.status.phase or "",
                    "resize": p.status.resize or "",
                    "desired": _short(c.resources.to_k8s()),
                    "allocated": _short(
                        {k: str(v) for k, v in (st.allocated_resources or {}).items()}
                    )
                    if st
                    else "",
                    "actual": _short(st.resources.to_k8s()) if st and st.resources else "",
                }
            )
    pod_columns = ["namespace/name", "node", "phase", "resize", "desired", "allocated", "actual"]
    print_rows(pods, pod_columns, "table", console=out)
    nodes = [
        {
            "node": name,
            "capacity": _resources(n.status.capacity),
            "allocatable": _resources(n.status.allocatable),
            "initialCapacity": _resources(n.status.initial_capacity),
        }
        for name, n in sorted(state.nodes.items())
    ]
    print_rows(nodes, ["node", "capacity", "allocatable", "initialCapacity"], "table", console=out)


def _short(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def _resources(rl: dict[str, object] | None) -> str:
    return _short({k: str(v) for k, v in (rl or {}).items()})
