"""The bookkeeping behind the kubelet's resize metrics: every proposal closed exactly once."""

from __future__ import annotations

from typing import Any

import pytest

from schemas.events import DecisionRecord
from schemas.k8s import ResourceRequirements
from services.kubelet.resizebook import ResizeBook, infeasible_detail, requested_changes


def rr(requests: dict[str, str] | None = None, limits: dict[str, str] | None = None) -> Any:
    return ResourceRequirements.model_validate({"requests": requests, "limits": limits})


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        (rr({"cpu": "1"}), rr({"cpu": "2"}), [("cpu", "requests", "increase")]),
        (
            rr({"cpu": "1"}, {"cpu": "1", "memory": "1Gi"}),
            rr({"cpu": "1"}, {"cpu": "500m"}),
            [("cpu", "limits", "decrease"), ("memory", "limits", "remove")],
        ),
        (rr(), rr({"memory": "64Mi"}), [("memory", "requests", "add")]),
        (rr({"cpu": "1"}), rr({"cpu": "1000m"}), []),  # the same quantity
    ],
)
def test_requested_changes(before: Any, after: Any, expected: list[Any]) -> None:
    assert requested_changes({"app": before}, {"app": after}) == expected


def test_infeasible_detail() -> None:
    record = DecisionRecord(node="n")
    assert infeasible_detail(None) == "other"
    assert infeasible_detail(record.model_copy(update={"short": ["cpu"]})) == (
        "insufficient_node_allocatable"
    )
    assert infeasible_detail(record.model_copy(update={"policy": "cpuManagerPolicy=static"})) == (
        "guaranteed_pod_cpu_manager_static_policy"
    )


def test_every_proposal_closes_once() -> None:
    book = ResizeBook()
    counted: list[str] = []
    counted += book.propose("a")  # completed after a wait
    book.wait("a", "deferred")
    assert book.pending_count("deferred") == 1
    assert book.accept("a") is True and book.in_progress == {"a"}
    counted += book.close("a", "completed")
    counted += book.propose("b")  # superseded, then infeasible
    counted += book.propose("b")
    book.wait("b", "infeasible")
    counted += book.close("b", "infeasible")
    assert book.pending_count("infeasible") == 1  # still says Infeasible
    counted += book.close("b", "canceled")  # deleted later: already closed
    counted += book.propose("c")  # deleted while in progress
    book.accept("c")
    counted += book.close("c", "canceled")
    counted += book.close("d", "completed")  # never proposed here (a restart): nothing
    assert counted.count("proposed") == 4
    assert counted.count("proposed") == sum(
        counted.count(s) for s in ("completed", "infeasible", "canceled")
    )
    assert (book.open, book.in_progress, book.pending) == (set(), set(), {})
