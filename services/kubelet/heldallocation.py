"""An accepted resize's allocation, kept back while the runtime applies it (issue 16).

The node agent holds the step that allocated a resize (its Allocated with InProgress, and the
ResizeStarted Event) instead of writing it at once. When the runtime is done within `within`
(the fake runtime, cgroup writes), the agent `take`s it back and writes one Allocated that
also reports the actual resources and the cleared status (resizestep.applied_with): one
record for every reader instead of two. When the runtime is slower, the timer sends the step
as it was decided, so readers see the allocation and InProgress while it waits, as in
KEP-1287's flow. Any write in between `flush`es it first, so the log keeps the agent's order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from schemas.k8s import Pod
from services.kubelet.resizestep import Step

__all__ = ["HOLD_FOR_ACTUATION_S", "HeldAllocation", "HeldStep"]

# How long an accepted allocation waits for the runtime, to go out with what it applied.
HOLD_FOR_ACTUATION_S = 0.1


@dataclass(frozen=True, slots=True)
class HeldStep:
    """The step that allocated `key`'s resize, and the pod it was decided on (its Events')."""

    key: str
    pod: Pod
    step: Step


class HeldAllocation:
    """At most one held step (a node agent works one pod at a time), and its timer."""

    __slots__ = ("_held", "_send", "_sending", "_timer", "within")

    def __init__(
        self, send: Callable[[HeldStep], Awaitable[None]], within: float = HOLD_FOR_ACTUATION_S
    ) -> None:
        self._send = send  # hands a step's writes to the producer, unwaited
        self.within = within
        self._held: HeldStep | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._sending: asyncio.Future[None] | None = None  # the timer's send, under way

    def hold(self, held: HeldStep) -> None:
        self._held = held
        self._timer = asyncio.get_running_loop().call_later(self.within, self._expired)

    def take(self, key: str) -> HeldStep | None:
        """The step held for `key`, no longer held (to write with what the runtime applied);
        None when there is none or the timer sent it already."""
        held = self._held
        if held is None or held.key != key:
            return None
        self._held = None
        self._stop_timer()
        return held

    async def flush(self) -> None:
        """Send the held step now, after the timer's send if that started: it goes before
        anything written after it."""
        sending = self._sending
        if sending is not None and asyncio.current_task() is not sending:
            await sending
        self._stop_timer()
        held, self._held = self._held, None
        if held is not None:
            await self._send(held)

    def drop(self) -> None:
        """Forget the held step (the agent stops; the log never had it)."""
        self._stop_timer()
        self._held = None

    def _expired(self) -> None:
        self._timer = None
        if self._held is not None:
            self._sending = asyncio.ensure_future(self._send_late())

    async def _send_late(self) -> None:
        try:
            await self.flush()
        finally:
            self._sending = None

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
