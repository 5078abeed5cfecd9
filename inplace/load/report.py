"""The run's report: summary rows (the CLI prints them), a JSON file, and a PNG next to it
(matplotlib: end-to-end latency over the run, and its histogram)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from inplace.core.settings import DEFAULT_PORTS
from inplace.load.tracker import StageStats, Tracker, stage_stats

STAGE_HELP = {
    "request": "PATCH …/resize round trip (client)",
    "admit": "Proposed → Allocated",
    "actuate": "Allocated → Actuated",
    "clear": "Actuated → status cleared",
    "end_to_end": "Proposed → Actuated",
    "complete": "Proposed → status cleared",
    "defer": "Proposed → Deferred",
    "infeasible": "Proposed → Infeasible",
    "observe": "event written → seen by the tracker",
}


def stages_of(tracker: Tracker, request_seconds: list[float]) -> dict[str, StageStats]:
    stages = {"request": stage_stats(request_seconds)} if request_seconds else {}
    stages.update(tracker.stages())
    stages["observe"] = stage_stats(max(0.0, d) for d in tracker.delays)
    return stages


def throughput(tracker: Tracker) -> dict[str, float]:
    traces = tracker.proposed()
    window = tracker.window()
    if not traces or window is None:
        return {"injected_per_s": 0.0, "completed_per_s": 0.0, "window_s": 0.0}
    proposed = sorted(t.times["proposed"] for t in traces)
    inject_span = proposed[-1] - proposed[0]
    span = window[1] - window[0]
    completed = sum(1 for t in traces if t.outcome == "completed")
    return {
        "injected_per_s": round(len(traces) / inject_span, 1) if inject_span > 0 else 0.0,
        "completed_per_s": round(completed / span, 1) if span > 0 else 0.0,
        "window_s": round(span, 3),
    }


SUMMARY_COLUMNS = ("stage", "what", "count", "p50_ms", "p90_ms", "p99_ms", "max_ms")


def summary_title(report: dict[str, Any]) -> str:
    return f"inplace load {report['run']['id']} ({report['run']['mode']} mode)"


def summary_rows(report: dict[str, Any]) -> list[dict[str, str]]:
    """One row per stage that saw anything: its count and latency percentiles (ms)."""
    return [
        {
            "stage": name,
            "what": STAGE_HELP.get(name, ""),
            "count": str(s["count"]),
            **{f"{q}_ms": f"{s[f'{q}_ms']:.1f}" for q in ("p50", "p90", "p99", "max")},
        }
        for name, s in report["stages"].items()
        if s["count"]
    ]


def summary_lines(report: dict[str, Any]) -> list[str]:
    c, t, lag, err = report["counts"], report["throughput"], report["lag"], report["errors"]
    lines = [
        f"resizes  planned {c['planned']}  sent {c['sent']}  injected {c['injected']}  "
        f"completed {c['completed']}  deferred {c['deferred']}  infeasible {c['infeasible']}  "
        f"pending {c['pending']}  skipped {c['skipped']}  unexpected {c['unexpected']}",
        f"throughput  {t['injected_per_s']:,.1f} injected/s  {t['completed_per_s']:,.1f} "
        f"completed/s (end to end, over {t['window_s']:.1f}s)",
        f"consumer lag  tracker max {lag['tracker_max_records']} records  projector max "
        f"{lag['projector_max_records']} records, at the end {lag['projector_last_records']}",
        f"errors  {err['total']}  (retried requests {err['retries']})",
    ]
    lines += [f"  {n}x {kind}" for kind, n in list(err["kinds"].items())[:5]]
    if report.get("cpu"):
        lines.append(_cpu_line(report["cpu"]))
    return lines


def _cpu_line(usage: dict[str, dict[str, float]]) -> str:
    """CPU per settled resize: the roles' sum (the cluster's cost), then each process; the
    load's own process (and whatever else a benchmark counts) listed but not in that sum (the
    roles are what has a default port)."""
    per_role = "  ".join(f"{role} {u['ms_per_resize']:.2f}" for role, u in usage.items())
    roles = sum(u["ms_per_resize"] for name, u in usage.items() if name in DEFAULT_PORTS)
    total = sum(u["ms_per_resize"] for u in usage.values())
    return (
        f"cpu ms per settled resize  {roles:.2f} over the roles ({total:.2f} in all):  {per_role}"
    )


def write_json(report: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, sort_keys=False) + "\n")


def plot(tracker: Tracker, path: Path, title: str) -> None:
    """Latency over the run (per completed resize, by proposal time) and its histogram."""
    from matplotlib.figure import Figure  # slow import; no pyplot, no GUI backend

    traces = [t for t in tracker.proposed() if t.outcome == "completed"]
    window = tracker.window()
    origin = window[0] if window else 0.0
    points = sorted(
        (t.times["proposed"] - origin, v * 1000)
        for t in traces
        if (v := t.latency("end_to_end")) is not None
    )
    admit = sorted(
        (t.times["proposed"] - origin, v * 1000)
        for t in traces
        if (v := t.latency("admit")) is not None
    )
    fig = Figure(figsize=(11, 8), layout="constrained")
    over_time, histogram = fig.subplots(2, 1)
    fig.suptitle(title)
    if points:
        over_time.scatter(*zip(*points, strict=True), s=4, alpha=0.5, label="Proposed → Actuated")
    if admit:
        over_time.scatter(*zip(*admit, strict=True), s=4, alpha=0.4, label="Proposed → Allocated")
    over_time.set_xlabel("seconds since the first proposal")
    over_time.set_ylabel("latency (ms)")
    if points:
        over_time.set_yscale("log")
        over_time.legend(loc="upper left")
    over_time.grid(True, alpha=0.3)
    values = [v for _, v in points]
    if values:
        histogram.hist(values, bins=60, color="tab:blue", alpha=0.8)
        stats = stage_stats(v / 1000 for v in values)
        for q, value in (("p50", stats.p50), ("p99", stats.p99)):
            histogram.axvline(value * 1000, color="tab:red", linestyle="--", linewidth=1)
            histogram.annotate(
                f"{q} {value * 1000:.0f} ms",
                (value * 1000, 0.95),
                xycoords=("data", "axes fraction"),
                rotation=90,
                va="top",
                ha="right",
                fontsize=8,
            )
    else:
        histogram.text(0.5, 0.5, "no completed resize", ha="center", transform=histogram.transAxes)
    histogram.set_xlabel("Proposed → Actuated (ms)")
    histogram.set_ylabel("resizes")
    histogram.grid(True, alpha=0.3)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
