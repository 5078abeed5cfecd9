"""The load report's summary: what a run prints."""

from __future__ import annotations

from typing import Any

from inplace.load.cpu import SELF
from inplace.load.report import summary_lines


def _report(cpu: dict[str, float]) -> dict[str, Any]:
    counts = ("planned", "sent", "injected", "completed", "deferred", "infeasible", "pending")
    return {
        "counts": {name: 0 for name in (*counts, "skipped", "unexpected")},
        "throughput": {"injected_per_s": 0.0, "completed_per_s": 0.0, "window_s": 1.0},
        "lag": {"tracker_max_records": 0, "projector_max_records": 0, "projector_last_records": 0},
        "errors": {"total": 0, "retries": 0, "kinds": {}},
        "cpu": {
            name: {"cpu_s": ms, "core_share": 0.1, "ms_per_resize": ms} for name, ms in cpu.items()
        },
    }


def test_the_cpu_per_resize_sums_the_roles_apart_from_the_load_and_the_infrastructure() -> None:
    lines = summary_lines(
        _report({"kubelet": 2.0, "apiserver": 1.5, SELF: 1.25, "kafka": 0.5, "projector": 0.25})
    )
    assert lines[-1] == (
        "cpu ms per settled resize  3.75 over the roles (5.50 in all):  kubelet 2.00  "
        f"apiserver 1.50  {SELF} 1.25  kafka 0.50  projector 0.25"
    )


def test_a_report_without_cpu_figures_has_no_cpu_line() -> None:
    report = _report({})
    del report["cpu"]
    assert not any(line.startswith("cpu") for line in summary_lines(report))
