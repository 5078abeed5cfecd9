"""`-o table|json|yaml` on the commands that print data (issue 19): `replay rebuild`,
`migrate`, `kafka status` / `postgres status` and `load`'s summary, run through the real
command line with their I/O replaced by fakes. Under the test runner stdout is no terminal,
so `table` is the piped form: plain columns, nothing cut."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml
from aiokafka import TopicPartition
from typer.testing import CliRunner

from inplace.cli import infra, load
from inplace.cli import replay as replay_cli
from inplace.cli.main import app
from inplace.core.projection.replay import RebuildReport
from inplace.load.chaos import Check, Verdict
from inplace.load.runner import LoadResult

runner = CliRunner()


def _rebuilt(live: str | None) -> RebuildReport:
    return RebuildReport(
        events=1200,
        seconds=0.5,
        live_checksum=live,
        rebuilt_checksum="abc123",
        offsets={TopicPartition("pods", 0): 41, TopicPartition("nodes", 0): 3},
    )


def _fake_rebuild(monkeypatch: pytest.MonkeyPatch, report: RebuildReport) -> None:
    async def rebuild(*args: object, **kwargs: object) -> RebuildReport:
        return report

    monkeypatch.setattr(replay_cli, "rebuild", rebuild)


def test_replay_rebuild_as_json_yaml_and_table(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_rebuild(monkeypatch, _rebuilt("abc123"))
    done = runner.invoke(app, ["replay", "rebuild", "-o", "json"])
    assert done.exit_code == 0, done.output
    document = json.loads(done.stdout)
    assert document["match"] is True and document["events"] == 1200
    assert document["rebuilt_checksum"] == document["live_checksum"] == "abc123"
    assert document["offsets"] == {"nodes:0": 3, "pods:0": 41}
    as_yaml = yaml.safe_load(runner.invoke(app, ["replay", "rebuild", "-o", "yaml"]).stdout)
    assert as_yaml["events_per_second"] == 2400.0
    table = runner.invoke(app, ["replay", "rebuild"])
    assert table.exit_code == 0
    assert table.stdout.splitlines()[-1] == "match"
    assert "rebuilt checksum abc123" in table.stdout


def test_replay_rebuild_that_differs_still_prints_the_document_and_exits_1(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _fake_rebuild(monkeypatch, _rebuilt("def456"))
    done = runner.invoke(app, ["replay", "rebuild", "-o", "json"])
    assert done.exit_code == 1
    assert json.loads(done.stdout)["match"] is False
    assert "checksums differ" in done.stderr
    _fake_rebuild(monkeypatch, _rebuilt(None))
    fresh = json.loads(runner.invoke(app, ["replay", "rebuild", "-o", "json"]).stdout)
    assert fresh["match"] is None and fresh["live_checksum"] is None
    assert runner.invoke(app, ["replay", "rebuild", "-o", "xml"]).exit_code == 2


class _Pool:
    @asynccontextmanager
    async def acquire(self) -> AsyncIterator[object]:
        yield object()

    async def close(self) -> None:
        return None


def test_migrate_as_json(monkeypatch: pytest.MonkeyPatch) -> None:
    import inplace.core.store.database as database
    import inplace.core.store.migrations as migrations

    applied: list[list[int]] = [[1, 2], []]

    async def create_pool(dsn: str, max_size: int) -> _Pool:
        return _Pool()

    async def migrate(conn: object, schema: str) -> list[int]:
        return applied.pop(0)

    monkeypatch.setattr(database, "create_pool", create_pool)
    monkeypatch.setattr(migrations, "migrate", migrate)
    monkeypatch.setenv("INPLACE_PROJECTION_SCHEMA", "projection_x")
    done = runner.invoke(app, ["migrate", "-o", "json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout) == {"schema": "projection_x", "applied": [1, 2]}
    again = runner.invoke(app, ["migrate"])
    assert again.stdout.strip() == "schema is up to date"


class _Server:
    """A broker or a database of a data directory, running or not."""

    def __init__(self, data_dir: Path, running: bool) -> None:
        self.data_dir = data_dir
        self.running = running
        self.bootstrap_servers = "127.0.0.1:19092"
        self.pid = 4242 if running else None

    def is_running(self) -> bool:
        return self.running

    def dsn(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:15432/{database}"


@pytest.mark.parametrize("server", ["kafka", "postgres"])
def test_status_as_json_running_or_not(
    server: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    running = [True]

    def make(data_dir: Path | None, *args: Any) -> _Server:
        return _Server(data_dir or tmp_path, running[0])

    monkeypatch.setattr(infra, "broker" if server == "kafka" else "database", make)
    up = runner.invoke(app, [server, "status", "-o", "json"])
    assert up.exit_code == 0, up.output
    document = json.loads(up.stdout)
    assert document["running"] is True and document["pid"] == 4242
    assert document["data_dir"] == str(tmp_path)
    if server == "kafka":
        assert document["bootstrap"] == "127.0.0.1:19092"
    else:
        assert document["dsn"] == "postgresql://postgres@127.0.0.1:15432/inplace"
    assert runner.invoke(app, [server, "status"]).stdout.startswith(f"{server} running: ")

    running[0] = False
    down = runner.invoke(app, [server, "status", "-o", "yaml"])
    assert down.exit_code == 3
    assert yaml.safe_load(down.stdout)["running"] is False
    assert f"{server} is not running" in down.stderr
    quiet = runner.invoke(app, [server, "status"])
    assert (quiet.exit_code, quiet.stdout) == (3, "")
    assert runner.invoke(app, [server, "status", "-o", "xml"]).exit_code == 2


LONG_HELP = "Proposed → Allocated"


def _load_result(tmp_path: Path, ok: bool = True) -> LoadResult:
    stage = {"count": 10, "p50_ms": 12.0, "p90_ms": 20.5, "p99_ms": 31.25, "max_ms": 40.0}
    report = {
        "run": {"id": "run-7", "mode": "api"},
        "counts": {
            "planned": 10,
            "sent": 10,
            "injected": 10,
            "completed": 10,
            "deferred": 0,
            "infeasible": 0,
            "pending": 0,
            "skipped": 0,
            "unexpected": 0,
        },
        "throughput": {"injected_per_s": 5.0, "completed_per_s": 5.0, "window_s": 2.0},
        "stages": {"admit": stage, "defer": {**stage, "count": 0}},
        "lag": {"tracker_max_records": 1, "projector_max_records": 2, "projector_last_records": 0},
        "errors": {"total": 0, "retries": 0, "kinds": {}},
    }
    verdict = Verdict([Check("all accounted for", ok, "10 of 10" if ok else "3 missing")])
    return LoadResult(report, tmp_path / "run-7.json", tmp_path / "run-7.png", verdict)


def test_load_summary_piped_is_never_cut(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    load.print_result(_load_result(tmp_path), "table", judged=False)
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "inplace load run-7 (api mode)"
    assert lines[1].split() == ["STAGE", "WHAT", "COUNT", "P50_MS", "P90_MS", "P99_MS", "MAX_MS"]
    assert lines[2].split() == ["admit", *LONG_HELP.split(), "10", "12.0", "20.5", "31.2", "40.0"]
    assert not any(ln.startswith("defer") for ln in lines)  # a stage that saw nothing
    assert "…" not in out and out.rstrip().endswith("all resizes accounted for")


def test_load_report_as_json_and_a_failed_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = _load_result(tmp_path)
    load.print_result(result, "json", judged=True)
    assert json.loads(capsys.readouterr().out) == result.report
    with pytest.raises(typer.Exit) as failed:
        load.print_result(_load_result(tmp_path, ok=False), "json", judged=True)
    assert failed.value.exit_code == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out)["run"]["id"] == "run-7"
    assert "consistency verdict failed: all accounted for (3 missing)" in captured.err
