"""Writing events decided together: sent in order, applied at once when the model is at their
offset, else one read-your-writes wait per partition."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest
from aiokafka import TopicPartition

from inplace.core.bus.consumer import Record
from inplace.core.bus.producer import Position
from inplace.core.logwriter import LogWriter
from inplace.core.projection.state import ClusterState
from inplace.core.readmodel import ReadModel
from inplace.core.settings import Settings
from schemas import events as ev
from schemas.envelope import Envelope, decode
from tests import factories


class Producer:
    """Acks each event at the next offset of partition 0 of its topic (`prefix` + name),
    after `taken` records others wrote there."""

    def __init__(self, prefix: str = "", taken: int = 0) -> None:
        self.sent: list[tuple[str, str | None]] = []
        self.prefix, self.next = prefix, taken

    async def send(
        self, envelope: Envelope, *, headers: dict[str, str] | None = None, encoded: bytes
    ) -> asyncio.Future[Position]:
        assert encoded == envelope.encode()
        self.sent.append((envelope.type, (headers or {}).get("node")))
        future: asyncio.Future[Position] = asyncio.get_running_loop().create_future()
        future.set_result(Position(self.prefix + envelope.payload.TOPIC, 0, self.next))
        self.next += 1
        return future


class Model:
    topics = [ev.PODS]

    def __init__(self) -> None:
        self.state = ClusterState()
        self.waited: list[Position] = []

    async def wait_for(self, position: Position, within: float) -> None:
        self.waited.append(position)

    def apply_own(self, position: Position, encoded: bytes) -> bool:
        return False  # behind: another writer's record comes first


def telling_writer(settings: Settings) -> tuple[ReadModel, LogWriter, list[tuple[int, bool]]]:
    """A ready kubelet model, a `tell_own` writer on it, and what a listener of the model
    hears: (offset, was it the writer's own) for each applied record."""
    model = ReadModel(settings, role="kubelet", topics=(ev.PODS,), window=0)
    model.ready.set()
    writer = LogWriter(Producer(settings.topic_prefix), model, "kubelet", tell_own=True)  # type: ignore[arg-type]
    seen: list[tuple[int, bool]] = []
    model.on_apply(
        lambda record: seen.append((record.position.offset, writer.own(record.position)))
    )
    return model, writer, seen


async def test_events_decided_together_are_written_in_order_and_waited_for_once() -> None:
    producer, model = Producer(), Model()
    writer = LogWriter(producer, model, "kubelet")  # type: ignore[arg-type]
    ids: dict[str, Any] = {"namespace": "a", "name": "p", "uid": "u"}
    positions = await writer.write_all(
        [
            ev.ResizeStatusChanged(**ids, resize="InProgress"),
            ev.ResizeStatusChanged(**ids, resize=None),
            ev.KubeEventRecorded(event=factories.kube_event("a", "p")),
        ]
    )
    assert [t for t, _ in producer.sent] == [
        "ResizeStatusChanged",
        "ResizeStatusChanged",
        "KubeEventRecorded",
    ]
    # The last pods record only: the model applies a partition in order; k8s-events it does
    # not follow.
    assert model.waited == [positions[1]]


async def test_writes_the_model_is_ready_for_are_applied_without_waiting() -> None:
    settings = Settings()
    model = ReadModel(settings, role="kubelet", topics=(ev.PODS,), window=0)
    model.ready.set()
    ids: dict[str, Any] = {"namespace": "a", "name": "p", "uid": "u"}
    pod = factories.pod("a", "p")
    writer = LogWriter(Producer(settings.topic_prefix), model, "kubelet")  # type: ignore[arg-type]
    await writer.write(ev.PodCreated(**ids, pod=pod))
    positions = await writer.write_all(
        [ev.PodBound(**ids, node_name="n1"), ev.PodUpdated(**ids, labels={"x": "y"})]
    )
    held = model.get("pods", ("a", "p"))
    assert held.spec.node_name == "n1" and held.metadata.labels == {"x": "y"}
    tp = TopicPartition(settings.topic(ev.PODS), 0)
    assert model.applied[tp] == positions[-1].offset + 1 == 3
    # Behind (another writer's record at offset 3 not applied yet): not applied, waited for.
    behind = LogWriter(Producer(settings.topic_prefix, taken=4), model, "kubelet")  # type: ignore[arg-type]
    with pytest.raises(TimeoutError):
        await behind.write(ev.PodUpdated(**ids, labels={"x": "z"}), within=0.05)
    assert model.get("pods", ("a", "p")).metadata.labels == {"x": "y"}


async def test_a_listener_tells_its_own_writes_from_others() -> None:
    settings = Settings()
    model, writer, seen = telling_writer(settings)
    ids: dict[str, Any] = {"namespace": "a", "name": "p", "uid": "u"}
    await writer.write(ev.PodCreated(**ids, pod=factories.pod("a", "p")))
    await writer.write_all([ev.PodBound(**ids, node_name="n1"), ev.PodUpdated(**ids, labels={})])
    assert seen == [(0, True), (1, True), (2, True)]
    # Another writer's record (offset 3) is not this writer's, asked as the model applies it.
    other = LogWriter(Producer(settings.topic_prefix, taken=3), model, "apiserver")  # type: ignore[arg-type]
    await other.write(ev.PodUpdated(**ids, labels={"x": "y"}))
    assert seen[-1] == (3, False)
    assert not writer.own(Position(settings.topic(ev.PODS), 0, 0))  # each is told once


async def test_writes_the_model_passed_over_are_forgotten() -> None:
    # A kubelet's model skips the records of a node handed to another process: a write of
    # its own there is never applied, never asked about, and must not be kept for ever.
    settings = Settings()
    model = ReadModel(settings, role="kubelet", topics=(ev.PODS,), window=0)  # not ready
    writer = LogWriter(Producer(settings.topic_prefix), model, "kubelet", tell_own=True)  # type: ignore[arg-type]
    ids: dict[str, Any] = {"namespace": "a", "name": "p", "uid": "u"}
    many = [ev.PodUpdated(**ids, labels={"n": str(i)}) for i in range(4096)]
    with pytest.raises(TimeoutError):
        await writer.write_all(many, within=0.01)  # offsets 0-4095, remembered
    tp = TopicPartition(settings.topic(ev.PODS), 0)
    model.applied[tp] = 4096  # passed over, unapplied
    with pytest.raises(TimeoutError):
        await writer.write(ev.PodUpdated(**ids, labels={}), within=0.01)  # offset 4096
    assert not writer.own(Position(tp.topic, 0, 0))  # forgotten when the next one came
    assert writer.own(Position(tp.topic, 0, 4096))


async def test_a_queued_write_the_fetch_brings_back_before_it_settles_is_still_own() -> None:
    # The kubelet queues its allocation and settles it after actuating: the fetch may apply
    # the record in between, and it must still be told as this writer's (no second reconcile).
    settings = Settings()
    model, writer, seen = telling_writer(settings)
    ids: dict[str, Any] = {"namespace": "a", "name": "p", "uid": "u"}
    queued = await writer.queue([ev.PodCreated(**ids, pod=factories.pod("a", "p"))])
    await asyncio.sleep(0)  # the ack's callbacks run
    ((future, encoded),) = queued.sent
    position = future.result()
    model._apply(Record(position, decode(encoded)))  # as the fetch brings it back
    model.applied[TopicPartition(position.topic, position.partition)] = position.offset + 1
    assert await writer.settle(queued) == [position]
    assert seen == [(0, True)]  # applied once, by the fetch, and told as its own


class FailingProducer(Producer):
    async def send(
        self, envelope: Envelope, *, headers: dict[str, str] | None = None, encoded: bytes
    ) -> asyncio.Future[Position]:
        future: asyncio.Future[Position] = asyncio.get_running_loop().create_future()
        future.set_exception(ConnectionError("broker gone"))
        return future


async def test_a_failed_write_whose_wait_was_dropped_is_not_reported_unretrieved() -> None:
    loop = asyncio.get_running_loop()
    reported: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _, context: reported.append(context))
    writer = LogWriter(FailingProducer(), Model(), "kubelet", tell_own=True)  # type: ignore[arg-type]
    ids: dict[str, Any] = {"namespace": "a", "name": "p", "uid": "u"}
    queued = await writer.queue([ev.ResizeStatusChanged(**ids, resize="InProgress")])
    await asyncio.sleep(0)
    del queued  # a failed step drops its wait (NodeAgent._reconcile_resize)
    gc.collect()
    assert reported == []
    # A writer that waits still hears of the error.
    with pytest.raises(ConnectionError):
        await writer.write(ev.ResizeStatusChanged(**ids, resize=None))
