"""GC pauses become a histogram per generation and, when long, one warning line."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import weakref
from collections.abc import Iterator

import pytest

from inplace.core.observability import gcpauses
from inplace.core.observability.gcpauses import (
    GC_PAUSE_SECONDS,
    Collections,
    GcPauses,
)
from tests.factories import in_generation


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
        # Full collections are the timer's: CPython's rule would need a billion middle ones.
        assert gc.get_threshold() == gcpauses.THRESHOLDS == (50_000, 10, 1_000_000_000)
        gcpauses.tune(timed=False)
        assert gc.get_threshold() == (10_000, 10, 100)
    finally:
        gc.set_threshold(*saved)


async def _frozen_times(timer: Collections, freezes: int) -> None:
    for _ in range(1000):
        if timer.freezes >= freezes:
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"{timer.freezes} freezes after 5 s")


@contextlib.contextmanager
def _running(timer: Collections) -> Iterator[list[int]]:
    """Run `timer`; the list holds the generation of each collection that ran meanwhile."""
    seen: list[int] = []

    def record(phase: str, info: dict[str, int]) -> None:
        if phase == "stop":
            seen.append(info["generation"])

    gc.callbacks.append(record)
    timer.start()
    try:
        yield seen
    finally:
        timer.stop()
        gc.callbacks.remove(record)


def _frozen(obj: object) -> bool:
    return not any(in_generation(obj, generation) for generation in (0, 1, 2))


@pytest.mark.usefixtures("no_automatic_collections")
async def test_the_timer_freezes_the_young_generation_without_a_collection() -> None:
    kept = [object()]  # a list is tracked: it starts in generation 0
    assert in_generation(kept, 0)
    young = Collections(every=0.01)
    with _running(young) as seen:
        await _frozen_times(young, 2)
        assert _frozen(kept)  # no young or middle collection walks it
        assert gc.get_freeze_count() > 0
    assert seen == []  # frozen, not collected: nothing was walked
    assert in_generation(kept, 2)  # stopped: back in the old generation


class _Cycle:
    def __init__(self) -> None:
        self.me = self


@pytest.mark.usefixtures("no_automatic_collections")
async def test_a_cycle_is_freed_by_the_timed_full_collection_not_by_the_ticks() -> None:
    cycle = _Cycle()
    gone = weakref.ref(cycle)
    timer = Collections(every=0.002, full_every=3600)
    with _running(timer):
        await _frozen_times(timer, 1)
        assert _frozen(cycle)
        short_lived = _Cycle()  # dies young: before the next tick, which no await let run
        gone_young = weakref.ref(short_lived)
        del cycle, short_lived
        await _frozen_times(timer, 3)
        assert gone() is not None and gone_young() is not None  # the ticks free nothing
        timer._next_full = 0.0  # the full collection is due now
        for _ in range(1000):
            if timer.full:
                break
            await asyncio.sleep(0.002)
        assert timer.full == 1
        assert gone() is None and gone_young() is None


@pytest.mark.usefixtures("no_automatic_collections")
async def test_no_timed_freeze_while_collections_run() -> None:
    # A role catching up allocates enough for CPython to collect on its own: the timer
    # only fills the quiet spells.
    young = Collections(every=1.0)  # far above the 10 ms between the others
    young.start()
    try:
        for _ in range(120):
            gc.collect(0)
            await asyncio.sleep(0.01)
        assert young.freezes == 0
        await _frozen_times(young, 1)  # quiet again: the timer freezes
    finally:
        young.stop()


async def test_a_stopped_timer_freezes_no_more() -> None:
    young = Collections(every=0.001)
    young.start()
    await _frozen_times(young, 3)
    young.stop()
    freezes = young.freezes
    await asyncio.sleep(0.05)
    assert young.freezes == freezes


@pytest.mark.usefixtures("no_automatic_collections")
async def test_full_collections_come_on_the_timer() -> None:
    timer = Collections(every=0.005, full_every=0.05)
    with _running(timer) as seen:
        for _ in range(1000):
            if timer.full >= 2:
                break
            await asyncio.sleep(0.005)
    assert timer.full >= 2
    assert seen == [2] * timer.full  # the only collections: the full ones
    assert timer.freezes > 0  # young generations frozen in between


@pytest.mark.usefixtures("no_automatic_collections")
async def test_no_full_collection_when_they_are_off() -> None:
    timer = Collections(every=0.001, full_every=0)
    with _running(timer) as seen:
        await _frozen_times(timer, 50)
    assert 2 not in seen and timer.full == 0


@pytest.mark.usefixtures("no_automatic_collections")
async def test_policy_lends_the_roles_young_policy_for_a_while() -> None:
    # The load generator's: the roles' thresholds and freezing timer while it runs, no full
    # collection, and what it found before back at the end.
    before = gc.get_threshold()
    kept = [object()]
    with gcpauses.policy(every=0.002) as timer:
        assert gc.get_threshold() == gcpauses.THRESHOLDS
        await _frozen_times(timer, 2)
        assert _frozen(kept)
        assert timer.full == 0
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
    assert in_generation(kept, 2)
