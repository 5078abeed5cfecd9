"""`inplace load`: a seeded resize load against the running cluster, with a live progress bar
(on stderr), a summary table (`-o json|yaml`: the report as one document), and a JSON + PNG
report (see `inplace.load`)."""

from __future__ import annotations

import asyncio
import ipaddress
import os
from pathlib import Path
from urllib.parse import urlsplit

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from inplace.cli.errors import fail, run_async
from inplace.cli.kubeconfig import KUBECONFIG, endpoint_of
from inplace.cli.output import OUTPUT, Format, check_format, print_document, print_rows
from inplace.core.settings import Settings
from inplace.load.plan import Mix
from inplace.load.report import SUMMARY_COLUMNS, summary_lines, summary_rows, summary_title
from inplace.load.runner import LoadConfig, LoadResult, LoadRun

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False)
MAX_DURATION = 3600.0
OUT_DIR = typer.Option(None, "--out", help="report directory (default $INPLACE_HOME/load)")


def is_loopback(host: str | None) -> bool:
    """Loopback addresses, `localhost`, and no host at all (a Unix socket)."""
    if not host or host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _bootstrap_hosts(bootstrap: str) -> list[str]:
    return [entry.strip().rsplit(":", 1)[0] for entry in bootstrap.split(",") if entry.strip()]


def check_targets(api: str, settings: Settings) -> None:
    """Refuse anything but this machine: the load is meant to hurt, so never by accident a
    shared cluster."""
    url = urlsplit(api)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise fail(f"--api {api!r} is not an http(s) URL")
    if not is_loopback(url.hostname):
        raise fail(
            f"--api {api} is not a loopback address; `inplace load` only targets this machine"
        )
    for host in _bootstrap_hosts(settings.kafka_bootstrap):
        if not is_loopback(host):
            raise fail(
                f"INPLACE_KAFKA_BOOTSTRAP {settings.kafka_bootstrap} is not loopback; "
                "`inplace load` only targets this machine"
            )
    if not is_loopback(urlsplit(settings.postgres_dsn).hostname):
        raise fail(
            "INPLACE_POSTGRES_DSN is not a loopback address; "
            "`inplace load` only targets this machine"
        )


async def _run_with_progress(run: LoadRun, show: bool) -> LoadResult:
    columns = (
        TextColumn("{task.description:>16}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[phase]}"),
    )
    with Progress(*columns, console=err, disable=not show, transient=False) as progress:
        tasks = {
            name: progress.add_task(name, total=total or 1, phase="")
            for name, (_, total) in run.counters().items()
        }
        job = asyncio.create_task(run.run())
        while not job.done():
            for name, (done, total) in run.counters().items():
                progress.update(tasks[name], completed=done, total=total or 1, phase=run.phase)
            await asyncio.wait([job], timeout=0.25)
        for name, (done, total) in run.counters().items():
            progress.update(tasks[name], completed=done, total=total or 1, phase="done")
        return job.result()


def load_cmd(
    nodes: int = typer.Option(1000, min=1, help="simulated nodes to create"),
    pods: int = typer.Option(50_000, min=1, help="pods to create (spread over the nodes)"),
    resizes: int = typer.Option(10_000, min=0, help="resizes to inject (at most)"),
    rate: float | None = typer.Option(
        None, min=0.1, help="target resizes/s (default: open loop, as fast as possible)"
    ),
    duration: float = typer.Option(
        300.0, min=1.0, help=f"stop injecting after S seconds (at most {MAX_DURATION:.0f})"
    ),
    mode: str = typer.Option("api", help="api (PATCH …/resize) | log (ResizeProposed events)"),
    seed: int = typer.Option(0, help="the workload's seed: same seed, same plan"),
    chaos: bool = typer.Option(
        False,
        "--chaos",
        help="SIGKILL a role process every few seconds (each of several kubelets or apiserver "
        "replicas in turn), then judge consistency",
    ),
    chaos_interval: float = typer.Option(5.0, min=0.5, help="seconds between kills"),
    verify: bool = typer.Option(False, "--verify", help="also compare projections with a rebuild"),
    out_dir: Path | None = OUT_DIR,
    api: str | None = typer.Option(
        None,
        envvar="INPLACE_API_URL",
        help="the apiserver, loopback only (default: the kubeconfig's, else http://127.0.0.1:8080)",
    ),
    kubeconfig: Path | None = KUBECONFIG,
    concurrency: int = typer.Option(64, min=1, max=1024, help="HTTP requests in flight"),
    deferred: float = typer.Option(0.02, min=0.0, max=0.5, help="share meant to be Deferred"),
    infeasible: float = typer.Option(0.02, min=0.0, max=0.5, help="share meant Infeasible"),
    setup_timeout: float = typer.Option(600.0, min=1.0, help="bound on creating the workload"),
    drain_timeout: float = typer.Option(120.0, min=1.0, help="bound on waiting for results"),
    output: str = OUTPUT,
) -> None:
    """Create N simulated nodes and M pods through the API, inject resizes (through the API or
    straight onto the log), follow each by correlation id to Allocated / Actuated / Deferred /
    Infeasible, and report throughput and latency per stage (JSON + PNG).

    Exit codes: 0 every resize accounted for (and the verdict passed), 1 a failure or a failed
    consistency verdict, 2 bad option."""
    fmt = check_format(output)
    if mode not in ("api", "log"):
        raise fail(f"--mode must be api or log, not {mode!r}")
    if duration > MAX_DURATION:
        raise fail(f"--duration {duration:.0f} is over the {MAX_DURATION:.0f}s bound")
    settings = Settings()
    credentials = endpoint_of(kubeconfig)
    api = api or (credentials.server if credentials else "http://127.0.0.1:8080")
    check_targets(api, settings)
    home = Path(os.environ.get("INPLACE_HOME", ".inplace"))
    config = LoadConfig(
        settings=settings,
        api=api.rstrip("/"),
        credentials=credentials,
        mode=mode,  # type: ignore[arg-type]
        nodes=nodes,
        pods=pods,
        resizes=resizes,
        rate=rate,
        duration=duration,
        seed=seed,
        mix=Mix(deferred=deferred, infeasible=infeasible),
        concurrency=concurrency,
        chaos=chaos,
        chaos_interval=chaos_interval,
        verify=verify,
        out=out_dir or home / "load",
        setup_timeout=setup_timeout,
        drain_timeout=drain_timeout,
    )
    run = LoadRun(config)
    result = run_async(_run_with_progress(run, show=True))
    print_result(result, fmt, chaos or verify)


def print_result(result: LoadResult, fmt: Format, judged: bool) -> None:
    """The summary (or, `-o json|yaml`, the report as one document), then exit 1 with the
    first failed check when the verdict failed."""
    if not print_document(result.report, fmt):
        report = result.report
        print_rows(
            summary_rows(report), SUMMARY_COLUMNS, fmt, console=out, title=summary_title(report)
        )
        for line in summary_lines(report):
            out.print(line)
        for check in result.verdict.checks:
            mark = "[green]ok[/]  " if check.ok else "[red]FAIL[/]"
            out.print(f"{mark} {check.name}: {escape(check.detail)}", markup=True)
        out.print(f"report  {result.json_path}")
        out.print(f"plot    {result.png_path}")
    if not result.ok:
        failed = next(c for c in result.verdict.checks if not c.ok)
        raise fail(f"consistency verdict failed: {failed.name} ({failed.detail})")
    if fmt == "table":
        out.print("verdict: pass" if judged else "all resizes accounted for")
