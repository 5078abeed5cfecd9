"""A read model with held fetches (the quota role's) fetches promptly while a request waits on
its view (`ReadModel.hurry`), then held again: checked on the fetch requests it sends to the
real broker, which is where the setting takes effect (aiokafka has no public setter)."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiokafka.protocol.fetch import FetchRequest

from inplace.core.bus.consumer import FULL_FETCH_BYTES
from inplace.core.readmodel import OFF_PATH_FETCH_WAIT_MS, ReadModel
from inplace.core.settings import Settings
from schemas import events as ev
from tests.integration.conftest import until


class SentFetches:
    """Every fetch request a read model's follower sends: (max wait ms, min bytes)."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, int]] = []

    def spy_on(self, model: ReadModel) -> None:
        assert model._follower is not None
        client = model._follower._consumer._client
        send = client.send

        async def recorded(node_id: int, request: Any, *args: Any, **kwargs: Any) -> Any:
            if isinstance(request, FetchRequest):
                self.sent.append((request._max_wait_ms, request._min_bytes))
            return await send(node_id, request, *args, **kwargs)

        client.send = recorded

    def since(self, mark: int) -> list[tuple[int, int]]:
        return self.sent[mark:]


@pytest.fixture
async def followed(settings: Settings) -> AsyncIterator[ReadModel]:
    model = ReadModel(
        settings, role="quota", topics=(ev.POLICY,), window=0, fetch_wait_ms=OFF_PATH_FETCH_WAIT_MS
    )
    task = asyncio.create_task(model.run())
    await asyncio.wait_for(model.ready.wait(), 30)
    yield model
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


HELD = (OFF_PATH_FETCH_WAIT_MS, FULL_FETCH_BYTES)
PROMPT = (500, 1)  # aiokafka's defaults: answered at the first record


async def test_hurry_makes_fetches_prompt_for_a_while_then_held_again(
    followed: ReadModel,
) -> None:
    fetches = SentFetches()
    fetches.spy_on(followed)
    mark = 0

    async def sent() -> Counter[tuple[int, int]]:
        return Counter(fetches.since(mark))  # (max wait ms, min bytes): how many of each

    await until(sent, lambda s: s.total() >= 2, "fetches while idle")
    assert set(fetches.sent) == {HELD}, "no request waits on it: the broker holds its fetches"

    mark = len(fetches.sent)
    followed.hurry(seconds=1.0)
    prompt = await until(sent, lambda s: PROMPT in s, "a prompt fetch after hurry")
    assert set(prompt) <= {HELD, PROMPT}  # at most the fetch in flight when it was hurried

    mark = len(fetches.sent)
    followed.hurry(seconds=3.0)  # hurried again: prompt until this one's time is up
    await until(sent, lambda s: HELD in s, "held fetches once its time is up")
    after = fetches.since(mark)
    assert PROMPT in after[: after.index(HELD)], "prompt fetches until then"
