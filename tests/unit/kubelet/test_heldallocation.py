"""The held allocation: taken back when the runtime is quick, sent by its timer when it is
slow, sent first by any other write, never sent twice (services/kubelet/heldallocation.py)."""

from __future__ import annotations

import asyncio

from services.kubelet.heldallocation import HeldAllocation, HeldStep
from services.kubelet.resizestep import Step
from tests import factories

WITHIN = 0.05


def _held(key: str = "ns/web") -> HeldStep:
    return HeldStep(key, factories.pod("ns", "web"), Step("accepted"))


class Sends:
    """What the hold handed to the producer, in order; each send takes `slow` seconds."""

    def __init__(self, slow: float = 0.0) -> None:
        self.sent: list[str] = []
        self.slow = slow

    async def __call__(self, held: HeldStep) -> None:
        await asyncio.sleep(self.slow)
        self.sent.append(held.key)


async def test_a_step_taken_back_in_time_is_never_sent() -> None:
    sends = Sends()
    hold = HeldAllocation(sends, within=WITHIN)
    held = _held()
    hold.hold(held)
    assert hold.take("ns/other") is None
    assert hold.take("ns/web") is held
    await asyncio.sleep(3 * WITHIN)
    await hold.flush()
    assert sends.sent == []


async def test_a_slow_runtime_gets_the_step_sent_by_the_timer_once() -> None:
    sends = Sends(slow=WITHIN)
    hold = HeldAllocation(sends, within=WITHIN)
    hold.hold(_held())
    await asyncio.sleep(1.5 * WITHIN)  # the timer's send is under way
    assert hold.take("ns/web") is None  # too late to report with it
    await hold.flush()  # waits for the timer's send: what follows goes after it
    assert sends.sent == ["ns/web"]
    await asyncio.sleep(2 * WITHIN)
    assert sends.sent == ["ns/web"]


async def test_a_flush_sends_at_once_and_the_timer_then_does_nothing() -> None:
    sends = Sends()
    hold = HeldAllocation(sends, within=WITHIN)
    hold.hold(_held())
    await hold.flush()
    assert sends.sent == ["ns/web"]
    await asyncio.sleep(2 * WITHIN)
    assert sends.sent == ["ns/web"]


async def test_a_dropped_step_is_never_sent() -> None:
    sends = Sends()
    hold = HeldAllocation(sends, within=WITHIN)
    hold.hold(_held())
    hold.drop()
    await asyncio.sleep(2 * WITHIN)
    await hold.flush()
    assert sends.sent == []
