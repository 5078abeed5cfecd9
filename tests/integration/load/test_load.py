"""`inplace load` against real roles on the test's own topics: a small bounded run through the
library (api mode) and through the CLI (log mode) whose report counts add up, and a `--chaos`
run (roles SIGKILLed and restarted) that passes its own consistency verdict. No timing
assertions: the figures are measured, not judged, here."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from inplace.core.bus.consumer import LogReader
from inplace.core.bus.partitioning import partition_of
from inplace.core.settings import Settings
from inplace.load.plan import Mix
from inplace.load.runner import LoadConfig, run_load
from schemas import events as ev
from tests.integration.conftest import REPO, RoleProcess, settings_env

pytestmark = pytest.mark.integration
PNG = b"\x89PNG\r\n\x1a\n"
MIX = Mix(deferred=0.05, infeasible=0.05)


@contextlib.asynccontextmanager
async def roles(
    settings: Settings,
    tmp_path: Path,
    names: tuple[str, ...],
    *,
    supervise: bool = False,
    replicas: dict[str, int] | None = None,
) -> AsyncIterator[dict[str, RoleProcess]]:
    """The roles as processes (kubelet with no nodes of its own: it adopts the load's), and
    with `supervise` a loop that restarts any that dies, as `inplace up` does, each with its
    own port and environment. `replicas`: several processes of a role, named `kubelet`,
    `kubelet-2` …; kubelets then each get their own static member name and a short session."""
    env = {
        "apiserver": {"INPLACE_QUOTA_URL": ""},
        "kubelet": {"INPLACE_KUBELET_NODES": "0"},
    }
    procs: dict[str, RoleProcess] = {}
    for name in names:
        count = (replicas or {}).get(name, 1)
        for n in range(1, count + 1):
            label = name if n == 1 else f"{name}-{n}"
            extra = dict(env.get(name, {}))
            if name == "kubelet" and count > 1:
                extra["INPLACE_KUBELET_INSTANCE"] = label
                extra["INPLACE_KUBELET_GROUP_SESSION_TIMEOUT"] = "6"
            procs[label] = RoleProcess(name, settings, tmp_path / f"{label}.log", **extra)
    for proc in procs.values():
        proc.start()
    for proc in procs.values():
        await proc.ready()

    async def supervisor() -> None:
        while True:
            for proc in procs.values():
                if not proc.alive():
                    proc.start()
            await asyncio.sleep(0.2)

    task = asyncio.create_task(supervisor()) if supervise else None
    try:
        yield procs
    finally:
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        for proc in procs.values():
            proc.stop()


def is_png(path: Path) -> bool:
    return path.read_bytes()[:8] == PNG


def assert_counts_add_up(report: dict[str, Any]) -> None:
    c, stages = report["counts"], report["stages"]
    assert c["injected"] == c["completed"] + c["deferred"] + c["infeasible"], c
    assert c["pending"] == 0 and c["superseded"] == 0, c
    assert c["unexpected"] == 0, c
    assert c["sent"] == c["planned"] and c["errors"] == 0 and c["skipped"] == 0, c
    assert c["injected"] == c["sent"], c
    assert c["completed"] and c["deferred"] and c["infeasible"], c
    for name in ("admit", "actuate", "clear", "end_to_end", "complete"):
        assert stages[name]["count"] == c["completed"], (name, stages[name], c)
    assert stages["defer"]["count"] == c["deferred"]
    assert stages["infeasible"]["count"] == c["infeasible"]
    assert report["expected"] == {
        "completed": c["completed"],
        "deferred": c["deferred"],
        "infeasible": c["infeasible"],
    }
    assert report["throughput"]["completed_per_s"] > 0
    assert report["verdict"]["ok"], report["verdict"]
    json_path, png_path = Path(report["files"]["json"]), Path(report["files"]["png"])
    assert json.loads(json_path.read_text())["counts"] == c
    assert is_png(png_path)


async def test_a_small_load_through_the_library_reports_counts_that_add_up(
    settings: Settings, tmp_path: Path
) -> None:
    async with roles(settings, tmp_path, ("apiserver", "kubelet", "projector")) as procs:
        result = await run_load(
            LoadConfig(
                settings=settings,
                api=procs["apiserver"].url,
                mode="api",
                nodes=5,
                pods=50,
                resizes=200,
                seed=11,
                mix=MIX,
                concurrency=16,
                out=tmp_path / "reports",
                verify=True,
                setup_timeout=120,
                drain_timeout=120,
            )
        )
    report = result.report
    assert_counts_add_up(report)
    assert report["stages"]["request"]["count"] == report["counts"]["sent"]
    assert report["counts"]["planned"] == 200
    assert result.json_path.parent == (tmp_path / "reports").absolute()
    assert [c["name"] for c in report["verdict"]["checks"]][-1] == "projections equal a rebuild"
    # CPU per role over the run: the roles of this cluster found by their command line and env.
    assert {"apiserver", "kubelet", "projector", "load (this process)"} <= report["cpu"].keys()
    assert report["cpu"]["kubelet"]["cpu_s"] > 0 and report["cpu"]["kubelet"]["ms_per_resize"] > 0


async def test_the_cli_runs_a_small_log_mode_load_and_writes_its_report(
    settings: Settings, tmp_path: Path
) -> None:
    async with roles(settings, tmp_path, ("apiserver", "kubelet")) as procs:
        out = tmp_path / "cli-reports"
        done = await asyncio.to_thread(
            subprocess.run,
            [
                sys.executable,
                "-m",
                "inplace.cli.main",
                "load",
                "--nodes",
                "5",
                "--pods",
                "50",
                "--resizes",
                "200",
                "--mode",
                "log",
                "--seed",
                "3",
                "--deferred",
                "0.05",
                "--infeasible",
                "0.05",
                "--api",
                procs["apiserver"].url,
                "--out",
                str(out),
                "--duration",
                "120",
            ],
            env=settings_env(settings),
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "end_to_end" in done.stdout and "all resizes accounted for" in done.stdout
    (report_file,) = out.glob("load-*.json")
    report = json.loads(report_file.read_text())
    assert report["run"]["mode"] == "log"
    assert "request" not in report["stages"]
    assert_counts_add_up(report)


async def test_the_cli_refuses_a_non_loopback_target(settings: Settings) -> None:
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "inplace.cli.main", "load", "--api", "http://10.1.2.3:8080"],
        env=settings_env(settings),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "not a loopback address" in lines[0], done.stderr


async def test_a_chaos_run_passes_its_consistency_verdict(
    settings: Settings, tmp_path: Path
) -> None:
    """Two apiserver replicas and two kubelet processes (one consumer group, a node partition
    each): chaos SIGKILLs every process in turn, the load's own apiserver too (the driver
    retries until it is back), each comes back under its own port and name, and the verdict
    passes: every resize final, at most one Allocated each, projections equal a rebuild."""
    names = ("apiserver", "kubelet", "projector")
    run_id = "chaos-run"  # its 4 nodes fall 2 and 2 on the 2 node partitions
    nodes = [f"{run_id}-n{i}" for i in range(4)]
    assert sorted(partition_of(n, settings.nodes_partitions) for n in nodes) == [0, 0, 1, 1]
    replicas = {"apiserver": 2, "kubelet": 2}
    async with roles(settings, tmp_path, names, supervise=True, replicas=replicas) as procs:
        result = await run_load(
            LoadConfig(
                settings=settings,
                api=procs["apiserver"].url,
                mode="api",
                nodes=len(nodes),
                pods=30,
                resizes=180,
                rate=12.0,
                seed=5,
                mix=MIX,
                concurrency=8,
                chaos=True,
                chaos_interval=1.2,
                out=tmp_path / "chaos",
                setup_timeout=120,
                drain_timeout=180,
                run_id=run_id,
            )
        )
        ports = {label: proc.port for label, proc in procs.items()}
    report = result.report
    chaos = report["chaos"]
    assert set(chaos["roles"]) == set(names)
    processes = {(p["role"], p["port"]) for p in chaos["processes"]}
    assert processes == {(label.split("-")[0], port) for label, port in ports.items()}
    kills = chaos["kills"]
    killed = {(k["role"], k["port"]) for k in kills}
    # Kills rotate over roles and over a role's replicas: every process was killed, both
    # kubelets and both apiservers (the one the load drives among them), and all came back.
    assert killed == processes, kills
    assert ("apiserver", ports["apiserver"]) in killed
    assert chaos["unrecovered"] == [], chaos
    if not result.verdict.ok:  # the story of each pod a check names, to read the failure
        named = {
            p for c in report["verdict"]["checks"] if not c["ok"] for p in PODS.findall(c["detail"])
        }
        stories = await _pod_stories(settings, named)
        raise AssertionError(json.dumps(report["verdict"], indent=1) + "\n" + stories)
    checks = {c["name"]: c for c in report["verdict"]["checks"]}
    assert "2 of 2 processes" in checks["chaos killed a role"]["detail"]
    assert checks["projections equal a rebuild"]["ok"]
    c = report["counts"]
    assert c["injected"] == c["completed"] + c["deferred"] + c["infeasible"], c
    assert c["pending"] == 0 and c["unexpected"] == 0, c
    assert is_png(Path(report["files"]["png"]))


PODS = re.compile(r"\(([^()/\s]+/[^()/\s]+)\)")


async def _pod_stories(settings: Settings, pods: set[str]) -> str:
    """Every record of `pods` on the pods topic: offset, type, producer, correlation, node."""
    lines: list[str] = []
    async with LogReader(settings.kafka_bootstrap) as reader:
        tps = await reader.partitions([settings.topic(ev.PODS)])
        async for batch in reader.read({}, await reader.end_offsets(tps)):
            for r in batch.records:
                if r.envelope.key in pods:
                    e = r.envelope
                    lines.append(
                        f"{r.position} {e.time:%H:%M:%S.%f} {e.key} {e.type} {e.producer} "
                        f"{e.correlation_id} {e.payload.model_dump_json(exclude_none=True)[:160]}"
                    )
    return "\n".join(lines)
