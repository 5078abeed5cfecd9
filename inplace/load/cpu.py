"""CPU seconds per role while the load runs: what bounds throughput on a shared machine.

Every role of the cluster is a local process (the load only targets loopback), so `/proc`
tells how much CPU each spent between two snapshots. Divided by the resizes that settled, it
says where a resize's cost goes, a steadier figure than throughput when other work shares
the cores. A role restarted in between (chaos) counts only its new process.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from inplace.load.chaos import find_roles

_TICKS = os.sysconf("SC_CLK_TCK")
# The load's own process: measured beside the roles, not one of them.
SELF = "load (this process)"


def cpu_seconds(pid: int, proc: Path = Path("/proc")) -> float | None:
    """User + system CPU seconds of a process so far; None once it is gone."""
    try:
        stat = (proc / str(pid) / "stat").read_text()
    except OSError:
        return None
    # Fields after the command name (which may hold spaces): utime, stime are 14th and 15th.
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


@dataclass(frozen=True)
class CpuSnapshot:
    at: float  # time.monotonic()
    by_pid: dict[int, tuple[str, float]]  # pid → (role, cpu seconds so far)


def _children(pid: int, proc: Path) -> list[int]:
    """Direct children of `pid` (PostgreSQL's backends are the postmaster's)."""
    found: list[int] = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:  # field 4: the parent's pid
            found.append(int(entry.name))
    return found


def snapshot(
    bootstrap: str,
    topic_prefix: str,
    at: float,
    proc: Path = Path("/proc"),
    extra: dict[int, str] | None = None,
) -> CpuSnapshot:
    """`extra`: other processes to count, pid → name, each with its direct children (the
    broker and the database share the cores with the roles: a benchmark counts them too)."""
    by_pid: dict[int, tuple[str, float]] = {}
    for role in find_roles(bootstrap, topic_prefix, proc=proc):
        seconds = cpu_seconds(role.pid, proc)
        if seconds is not None:
            by_pid[role.pid] = (role.role, seconds)
    for pid, name in (extra or {}).items():
        for each in (pid, *_children(pid, proc)):
            seconds = cpu_seconds(each, proc)
            if seconds is not None:
                by_pid[each] = (name, seconds)
    by_pid[os.getpid()] = (SELF, cpu_seconds(os.getpid(), proc) or 0.0)
    return CpuSnapshot(at, by_pid)


def usage(before: CpuSnapshot, after: CpuSnapshot, resizes: int) -> dict[str, dict[str, float]]:
    """Per role: CPU seconds spent between the snapshots, share of one core, ms per resize."""
    spent: dict[str, float] = {}
    for pid, (role, seconds) in after.by_pid.items():
        start = before.by_pid.get(pid, (role, 0.0))[1]
        spent[role] = spent.get(role, 0.0) + max(0.0, seconds - start)
    wall = max(after.at - before.at, 1e-9)
    return {
        role: {
            "cpu_s": round(seconds, 2),
            "core_share": round(seconds / wall, 3),
            "ms_per_resize": round(1000 * seconds / resizes, 3) if resizes else 0.0,
        }
        for role, seconds in sorted(spent.items(), key=lambda kv: -kv[1])
    }
