"""GC pauses become a histogram per generation and, when long, one warning line."""

from __future__ import annotations

import gc
import logging

import pytest

from inplace.core.observability import gcpauses
from inplace.core.observability.gcpauses import GC_PAUSE_SECONDS, GcPauses


def _count(generation: str) -> float:
    for metric in GC_PAUSE_SECONDS.collect():
        for sample in metric.samples:
            if sample.name.endswith("_count") and sample.labels == {"generation": generation}:
                return sample.value
    return 0.0


def test_every_collection_is_timed_and_slow_ones_are_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    pauses = GcPauses(slow=0.0)  # every pause counts as slow here
    before = _count("2")
    pauses.install()
    try:
        with caplog.at_level(logging.WARNING):
            gc.collect()
    finally:
        pauses.uninstall()
    assert _count("2") == before + 1
    assert any("generation 2) paused the process" in r.getMessage() for r in caplog.records)
    gc.collect()  # uninstalled: no longer counted
    assert _count("2") == before + 1


def test_installing_twice_keeps_one_callback() -> None:
    first, second = GcPauses(), GcPauses()
    first.install()
    second.install()
    try:
        assert sum(isinstance(cb, GcPauses) for cb in gc.callbacks) == 1
    finally:
        first.uninstall()
        second.uninstall()


def test_tune_sets_the_long_lived_heap_thresholds() -> None:
    saved = gc.get_threshold()
    try:
        gcpauses.tune()
        assert gc.get_threshold() == gcpauses.THRESHOLDS == (10_000, 10, 100)
    finally:
        gc.set_threshold(*saved)
