"""The workload controller backs off from an unavailable apiserver (5xx, connection errors)
and honours each delay: records arriving meanwhile do not cut it short (no broker)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, cast

import pytest

from inplace.core.readmodel import ReadModel
from inplace.core.settings import Settings
from services.workload.client import ApiClient, Unavailable
from services.workload.service import Backoff, Controller
from tests.unit.workload.test_planner import make_set


def test_the_backoff_doubles_up_to_its_maximum_and_starts_again_after_a_success() -> None:
    backoff = Backoff(1.0, 8.0)
    assert [backoff.next() for _ in range(5)] == [1.0, 2.0, 4.0, 8.0, 8.0]
    backoff.reset()
    assert backoff.next() == 1.0


class Model:
    """The controller's read model: one CloneSet, no pods, caught up."""

    def __init__(self) -> None:
        self.ready = asyncio.Event()
        self.ready.set()
        self.clone_set = make_set()

    def on_apply(self, listener: Callable[..., None]) -> None:
        pass

    def on_snapshot(self, seed: Callable[[], None]) -> None:
        pass

    def objects(self, collection: str) -> dict[Any, Any]:
        return {("default", "web"): self.clone_set} if collection == "clonesets" else {}

    def get(self, collection: str, key: Any) -> Any:
        return self.objects(collection).get(key)


class DownApiserver:
    """Every call fails as a connection error does."""

    def __init__(self) -> None:
        self.calls = 0

    def __getattr__(self, name: str) -> Callable[..., Any]:
        async def call(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            raise Unavailable(f"{name}: connection refused")

        return call


class Stop(Exception):
    pass


async def test_records_arriving_during_a_backoff_do_not_end_it() -> None:
    apiserver = DownApiserver()
    waits: list[float] = []
    attempts: list[int] = []

    async def sleep(delay: float) -> None:
        waits.append(delay)
        attempts.append(apiserver.calls)
        controller.wake.set()  # records keep arriving while the controller waits
        await asyncio.sleep(0)
        if len(waits) == 5:
            raise Stop

    controller = Controller(
        Settings(),
        cast(ReadModel, Model()),
        cast(ApiClient, apiserver),
        sleep=sleep,
    )
    with pytest.raises(Stop):
        await controller.run()
    assert waits == [1.0, 2.0, 4.0, 8.0, 16.0]
    assert attempts == [1, 2, 3, 4, 5], "one attempt per delay, none while waiting"
