"""A follower with held fetches (the quota role's, the scheduler's) lets the broker hold them
while records flow, waits at the broker for the first record while none come, and fetches
promptly while a request waits on its view (`ReadModel.hurry`). Checked on the fetch requests
it sends to the real broker, which is where the setting takes effect (aiokafka has no public
setter)."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.protocol.fetch import FetchRequest

from inplace.core.bus.consumer import FULL_FETCH_BYTES, EventConsumer
from inplace.core.bus.producer import EventProducer
from inplace.core.readmodel import OFF_PATH_FETCH_WAIT_MS, ReadModel
from inplace.core.settings import Settings
from schemas import events as ev
from schemas.envelope import Envelope
from tests.integration.conftest import until

HELD = (OFF_PATH_FETCH_WAIT_MS, FULL_FETCH_BYTES)  # (max wait ms, min bytes)
PROMPT = (500, 1)  # aiokafka's defaults: answered at the first record


class SentFetches:
    """Every fetch request an aiokafka consumer sends, from `mark` on."""

    def __init__(self, consumer: AIOKafkaConsumer) -> None:
        self.sent: list[tuple[int, int]] = []
        self.mark = 0
        client = consumer._client
        send = client.send

        async def recorded(node_id: int, request: Any, *args: Any, **kwargs: Any) -> Any:
            if isinstance(request, FetchRequest):
                self.sent.append((request._max_wait_ms, request._min_bytes))
            return await send(node_id, request, *args, **kwargs)

        client.send = recorded

    def from_now(self) -> None:
        self.mark = len(self.sent)

    def since_mark(self) -> list[tuple[int, int]]:
        return self.sent[self.mark :]

    async def counted(self) -> Counter[tuple[int, int]]:
        return Counter(self.since_mark())  # how many of each kind (short, when it fails)


@contextlib.asynccontextmanager
async def following(model: ReadModel) -> AsyncIterator[SentFetches]:
    """`model` following the log (caught up), and the fetch requests of its follower."""
    task = asyncio.create_task(model.run())
    try:
        await asyncio.wait_for(model.ready.wait(), 30)
        assert model._follower is not None
        yield SentFetches(model._follower._consumer)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


@pytest.fixture
async def followed(settings: Settings) -> AsyncIterator[tuple[ReadModel, SentFetches]]:
    model = ReadModel(
        settings, role="quota", topics=(ev.POLICY,), window=0, fetch_wait_ms=OFF_PATH_FETCH_WAIT_MS
    )
    async with following(model) as fetches:
        yield model, fetches


@pytest.fixture
def fetches(followed: tuple[ReadModel, SentFetches]) -> SentFetches:
    """The fetch requests of the followed read model's follower."""
    return followed[1]


@contextlib.contextmanager
def records_flowing(producer: EventProducer) -> Iterator[None]:
    """A policy record every 10 ms while the block runs."""

    async def write() -> None:
        for n in range(1_000_000):
            envelope = Envelope.wrap(ev.NamespaceCreated(namespace=f"ns-{n}"), producer="test")
            await producer.send(envelope)
            await asyncio.sleep(0.01)

    task = asyncio.create_task(write())
    try:
        yield
    finally:
        task.cancel()


async def prompt_while_idle_held_while_flowing(
    fetches: SentFetches, producer: EventProducer, held: tuple[int, int]
) -> None:
    """An idle reader's fetches wait for the first record; held (`held`) once records flow."""
    await until(fetches.counted, lambda c: c[PROMPT] >= 1, "an idle reader's prompt fetch")
    fetches.from_now()
    await until(fetches.counted, lambda c: c.total() >= 2, "more fetches while idle")
    assert set(fetches.since_mark()) == {PROMPT}, "idle: each fetch waits for the first record"
    with records_flowing(producer):
        fetches.from_now()
        await until(fetches.counted, lambda c: c[held] >= 3, "held fetches while records flow")


async def test_held_while_records_flow_waiting_for_the_first_while_idle(
    fetches: SentFetches, producer: EventProducer
) -> None:
    await prompt_while_idle_held_while_flowing(fetches, producer, HELD)
    fetches.from_now()
    await until(fetches.counted, lambda c: c[PROMPT] >= 1, "prompt again once idle")


async def test_hurry_makes_fetches_prompt_for_a_while_then_held_again(
    followed: tuple[ReadModel, SentFetches], fetches: SentFetches, producer: EventProducer
) -> None:
    model, _ = followed
    with records_flowing(producer):
        await until(fetches.counted, lambda c: c[HELD] >= 3, "held fetches while records flow")

        model.hurry(seconds=1.0)
        fetches.from_now()
        await until(fetches.counted, lambda c: c[PROMPT] >= 3, "prompt fetches after hurry")

        model.hurry(seconds=3.0)  # hurried again: prompt until this one's time is up
        fetches.from_now()
        await until(fetches.counted, lambda c: c[HELD] >= 1, "held fetches once its time is up")
        after = fetches.since_mark()
        assert after[: after.index(HELD)].count(PROMPT) >= 3, "prompt fetches until then"


async def test_held_only_while_the_holder_says_so(
    settings: Settings, producer: EventProducer
) -> None:
    """The kubelet holds its fetches only while reconciles wait in its queues (`hold_while`):
    with nothing queued a resize waits on its fetch, so each returns at the first record."""
    queued = {"work": False}
    model = ReadModel(
        settings,
        role="kubelet",
        topics=(ev.POLICY,),
        window=0,
        fetch_wait_ms=5,
        hold_while=lambda: queued["work"],
    )
    held = (5, FULL_FETCH_BYTES)
    async with following(model) as fetches:
        with records_flowing(producer):
            fetches.from_now()
            await until(fetches.counted, lambda c: c[PROMPT] >= 5, "fetches while records flow")
            assert held not in fetches.since_mark(), "nothing queued: never held"
            queued["work"] = True
            fetches.from_now()
            await until(fetches.counted, lambda c: c[held] >= 3, "held once work is queued")
            queued["work"] = False
            fetches.from_now()
            await until(fetches.counted, lambda c: c[PROMPT] >= 3, "prompt again once drained")


async def test_a_lingering_consumer_group_member_waits_for_the_first_record_while_idle(
    settings: Settings, producer: EventProducer
) -> None:
    """The projector's consumer (a group member with a 100 ms linger) fetches the same way."""
    consumer = EventConsumer(
        settings.kafka_bootstrap,
        role="projector",
        topics=[settings.topic(ev.POLICY)],
        group_id=f"{settings.topic_prefix}fetch-test",
        linger_ms=100,
    )
    await consumer.start()
    fetches = SentFetches(consumer._consumer)

    async def consume() -> None:
        async for _ in consumer.batches(timeout_ms=200):
            pass

    task = asyncio.create_task(consume())
    try:
        await prompt_while_idle_held_while_flowing(fetches, producer, (100, FULL_FETCH_BYTES))
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await consumer.stop()
