"""CPU per role during a load: /proc snapshots, differences, per settled resize."""

from __future__ import annotations

import os
from pathlib import Path

from inplace.load import cpu
from inplace.load.cpu import CpuSnapshot

TICK = os.sysconf("SC_CLK_TCK")


def _fake_role(proc: Path, pid: int, role: str, bootstrap: str, ticks: int) -> None:
    entry = proc / str(pid)
    entry.mkdir(parents=True, exist_ok=True)
    argv = ["python3", "-m", "inplace.cli.main", "serve", role, "--port", "8083"]
    (entry / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")
    (entry / "environ").write_bytes(f"INPLACE_KAFKA_BOOTSTRAP={bootstrap}\0".encode())
    # The command name may hold spaces and parentheses; utime and stime are fields 14, 15.
    rest = ["S", "1"] + ["0"] * 9 + [str(ticks), str(ticks)] + ["0"] * 5
    (entry / "stat").write_text(f"{pid} (python3 (x) y) " + " ".join(rest))


def test_snapshot_reads_this_clusters_roles_from_proc(tmp_path: Path) -> None:
    alive = os.getppid()  # find_roles keeps live pids only
    _fake_role(tmp_path, alive, "kubelet", "127.0.0.1:9092", ticks=TICK * 3)
    (tmp_path / str(os.getpid())).mkdir()
    (tmp_path / str(os.getpid()) / "stat").write_text(
        f"{os.getpid()} (pytest) R " + " ".join(["0"] * 10 + [str(TICK), "0"] + ["0"] * 5)
    )
    snap = cpu.snapshot("127.0.0.1:9092", "", at=1.0, proc=tmp_path)
    assert snap.by_pid[alive] == ("kubelet", 6.0)
    assert snap.by_pid[os.getpid()] == ("load (this process)", 1.0)
    other = cpu.snapshot("127.0.0.1:1", "", at=1.0, proc=tmp_path)
    assert alive not in other.by_pid  # another cluster's roles are not counted


def _fake_process(proc: Path, pid: int, parent: int, ticks: int) -> None:
    (proc / str(pid)).mkdir(parents=True)
    rest = ["S", str(parent)] + ["0"] * 9 + [str(ticks), "0"] + ["0"] * 5
    (proc / str(pid) / "stat").write_text(f"{pid} (postgres) " + " ".join(rest))


def test_snapshot_counts_extra_processes_with_their_children(tmp_path: Path) -> None:
    _fake_process(tmp_path, 100, 1, ticks=TICK)  # the postmaster
    _fake_process(tmp_path, 101, 100, ticks=TICK * 2)  # a backend
    _fake_process(tmp_path, 102, 1, ticks=TICK * 4)  # someone else's
    (tmp_path / str(os.getpid())).mkdir()
    (tmp_path / str(os.getpid()) / "stat").write_text(
        f"{os.getpid()} (pytest) R " + " ".join(["0"] * 22)
    )
    snap = cpu.snapshot("127.0.0.1:9", "", at=1.0, proc=tmp_path, extra={100: "postgres"})
    assert snap.by_pid[100] == ("postgres", 1.0)
    assert snap.by_pid[101] == ("postgres", 2.0)
    assert 102 not in snap.by_pid
    used = cpu.usage(CpuSnapshot(0.0, {}), snap, resizes=1)
    assert used["postgres"]["cpu_s"] == 3.0


def test_usage_is_per_role_per_settled_resize_and_survives_restarts() -> None:
    before = CpuSnapshot(10.0, {1: ("kubelet", 5.0), 2: ("apiserver", 1.0), 3: ("quota", 2.0)})
    # kubelet restarted as pid 4 (its old process is gone); apiserver went on; quota gone.
    after = CpuSnapshot(20.0, {2: ("apiserver", 3.0), 4: ("kubelet", 4.0), 5: ("kubelet", 1.0)})
    got = cpu.usage(before, after, resizes=1000)
    assert list(got) == ["kubelet", "apiserver"]  # busiest first
    assert got["kubelet"] == {"cpu_s": 5.0, "core_share": 0.5, "ms_per_resize": 5.0}
    assert got["apiserver"] == {"cpu_s": 2.0, "core_share": 0.2, "ms_per_resize": 2.0}
    assert cpu.usage(before, after, resizes=0)["kubelet"]["ms_per_resize"] == 0.0
