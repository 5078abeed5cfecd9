"""Cyclic-GC settings for long-lived roles, and their pauses as a metric and a log line.

A role folds the whole cluster into memory; Python's full collection walks all of it while
the event loop waits (about 1 s per 45,000 pods on an idle core; up to 7 s in the kubelet at
50,000 pods, dozens of times while they were created). CPython's default thresholds
(700, 10, 10) run young collections so often that short-lived objects get promoted and push
the old generation into full collections. Folding 30,000 pods with resizes, measured here:

    thresholds      gc time   full collections   longest pause
    700, 10, 10     5.1 s     12                 1,097 ms
    10000, 10, 100  0.8 s     0                  49 ms

Full collections come on a timer, not by CPython's rule. With 50,000 pods every role ran
one within the same two seconds of a load's resize phase (the pods created before it had
grown the old generation past CPython's 25%): apiserver 1.1-1.6 s, kubelet 1.6-2.1 s,
scheduler 0.7 s, quota 0.4 s, projector 0.3-0.5 s, the cluster standing still meanwhile and
~10% of the machine's CPU in that window. What dies is freed by reference counting, and
a full collection every `INPLACE_GC_FULL_EVERY_S` (an hour; 0: never) catches cycles, so
that memory stays bounded. (With automatic collection off altogether, session
15 saw no RSS growth over a default-shape load.)

CPython starts a young collection when allocations minus deallocations pass the first
threshold. A role in steady state replaces objects (a pod's new version in, the old one out),
so that count hardly moves while the young generation keeps every new object: under a
resize load the kubelet's young generation held 40,000-120,000 objects when a collection
finally came, each costing ~1 us to walk (scattered over a heap of hundreds of MB): pauses of
50-160 ms of CPU, 220-400 ms of wall time on busy cores, which were the p99 of a paced load.
`Collections` collected the young generations whenever none ran for half a second
(`INPLACE_GC_YOUNG_EVERY_MS`), so each collection walked what half a second left behind; it
now freezes them instead (below).

What a timed young collection leaves alive is frozen (`gc.freeze`: CPython's permanent
generation, which no collection walks) until the next full collection, which unfreezes it
first. Young and middle collections found no cyclic garbage at all in the apiserver, kubelet,
scheduler and quota over a default-shape load (the projector: 28 objects in all), so walking
a survivor again in the middle generation bought nothing. With survivors frozen at every
tick, the young threshold is 50,000: the kubelet, allocating fastest, no longer collects its
young generation several times between two ticks, promoting what a later middle collection
walks again (pauses of ~200 ms of CPU in it, a dozen per load). The collections' CPU time
over the 10,000 resizes of a default-shape load, in seconds (apiserver / kubelet /
scheduler / quota / projector): 2.67-2.95 / 3.89-5.52 / 1.33-1.65 / 1.26-1.59 / 1.81-1.92
before (three runs); frozen, threshold 10,000: 1.92 / 3.24 / 0.76 / 0.69 / 1.61; frozen,
50,000: 1.21 / 1.89 / 0.61 / 0.57 / 1.05, and no collection but the full ones over 110 ms.
Reference counting frees a frozen object as before; only a cycle among frozen objects waits
for the full collection, as one in the old generation always did.

The tick no longer collects at all: it only freezes (session 19). Walking the young
survivors was still 9-13% of each role's CPU at the default shape (py-spy of the apiserver,
kubelet, scheduler and quota: the pods decoded into each hot set, ~60 tracked objects each,
walked once), ~13.5 s of pauses over the roles per 10,000 resizes, and those walks found nothing to
free (above). `gc.freeze()` alone splices the young generations onto the frozen list without
visiting them, so a survivor costs no collection at all; a cycle that dies young waits for the
timed full collection like one that dies frozen, and that collection's log line (`GcPauses`)
says how many objects it freed, so a role that starts making cyclic garbage shows it. The
default shape, alternated (freeze / walk, three pairs): 4.88-5.70 vs 5.97-6.00 ms of the
roles' CPU per settled resize, no young pause at all (README, Performance).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import random
import time
from collections.abc import Iterator
from typing import Any

from prometheus_client import Histogram

log = logging.getLogger(__name__)

GC_PAUSE_SECONDS = Histogram(
    "inplace_gc_pause_seconds",
    "Time the process stood still in one cyclic garbage collection",
    ["generation"],
    buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)


# No full collection by CPython's own rule (a billion middle ones first): `Collections` runs
# them on its timer, and freezes what each young one leaves (so 50,000, not 10,000).
THRESHOLDS = (50_000, 10, 1_000_000_000)


# CPython's rule for full collections kept, for a process without the timer.
UNTIMED_THRESHOLDS = (10_000, 10, 100)


def tune(*, timed: bool = True) -> None:
    """Thresholds for a process that keeps a large, long-lived heap (see the module doc);
    `timed`: a `Collections` timer runs the full collections."""
    gc.set_threshold(*(THRESHOLDS if timed else UNTIMED_THRESHOLDS))


class GcPauses:
    """A `gc.callbacks` entry timing each collection; pauses from `slow` seconds are logged."""

    def __init__(self, slow: float = 0.1) -> None:
        self.slow = slow
        self._started: float | None = None

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        if self._started is None:
            return
        took, self._started = time.perf_counter() - self._started, None
        generation = info.get("generation", -1)
        GC_PAUSE_SECONDS.labels(str(generation)).observe(took)
        if took >= self.slow:
            log.warning(
                "garbage collection (generation %s) paused the process for %.0f ms"
                " (%s unreachable objects freed)",
                generation,
                took * 1000,
                info.get("collected", "?"),
            )

    def install(self) -> None:
        if not any(isinstance(cb, GcPauses) for cb in gc.callbacks):
            gc.callbacks.append(self)

    def uninstall(self) -> None:
        if self in gc.callbacks:
            gc.callbacks.remove(self)


class Collections:
    """Freezes the young generations whenever no collection ran for `every` seconds, on the
    running event loop, without walking them (module doc): no collection ever visits a
    survivor before the full one. While allocations trigger collections anyway (a role
    catching up), it adds nothing. Every `full_every` seconds (0: never) the tick is a full
    collection instead, of the frozen objects too. Stopped, it unfreezes them."""

    def __init__(self, every: float, full_every: float = 0.0) -> None:
        self.every = every
        self.full_every = full_every
        self.freezes = 0  # the young generations frozen by this timer
        self.full = 0  # full collections it ran
        self._last = time.monotonic()
        self._next_full = self._last + _jittered(full_every)
        self._timer: asyncio.TimerHandle | None = None

    def start(self) -> None:
        if self.every > 0 and self._timer is None:
            gc.callbacks.append(self._seen)
            self._schedule(self.every)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
            gc.callbacks.remove(self._seen)
            gc.unfreeze()  # the old generation holds them again, for whoever collects next

    def _seen(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "stop":
            self._last = time.monotonic()
            if info.get("generation") == 2:  # anyone's gc.collect() counts too
                self._next_full = self._last + _jittered(self.full_every)

    def _schedule(self, delay: float) -> None:
        self._timer = asyncio.get_running_loop().call_later(delay, self._tick)

    def _tick(self) -> None:
        now = time.monotonic()
        quiet = now - self._last
        if self.full_every > 0 and now >= self._next_full:
            gc.unfreeze()
            gc.collect()
            self.full += 1
            quiet = 0.0
        elif quiet >= self.every:
            gc.freeze()  # a list splice: nothing is walked (nor freed)
            self.freezes += 1
            self._last = now
            quiet = 0.0
        self._schedule(self.every - quiet)


def _jittered(seconds: float) -> float:
    """`seconds` give or take a quarter: roles started together do not stall together."""
    return seconds * random.uniform(0.75, 1.25)


@contextlib.contextmanager
def policy(every: float = 0.5, full_every: float = 0.0) -> Iterator[Collections]:
    """This module's collection policy while the block runs, inside a running event loop: the
    thresholds above and the freezing timer every `every` seconds (0: no timer, CPython's rule
    for full collections kept), a full collection every `full_every` (0: never). A role holds
    it for its life; the load generator (whose tracker holds every pod and resize of a run)
    for a run, with no full collection. CPython's thresholds and the frozen objects are back
    at the end."""
    saved = gc.get_threshold()
    tune(timed=every > 0)
    timer = Collections(every, full_every)
    timer.start()
    try:
        yield timer
    finally:
        timer.stop()
        gc.set_threshold(*saved)
