"""A read model folds the log in memory; only a watch-serving holder (the apiserver) keeps a
change feed per collection."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka import TopicPartition

from inplace.core.bus.consumer import Record
from inplace.core.bus.producer import Position
from inplace.core.projection.reducers import PARTITION_SPACE
from inplace.core.readmodel import ReadModel, TooOld
from inplace.core.settings import Settings
from tests import factories

STREAM = list(factories.cluster_stream(pods=3, resizes_per_pod=2, nodes=1))


def _fold(model: ReadModel) -> None:
    for offset, env in enumerate(STREAM):
        model._apply(Record(Position(env.topic, 0, offset), env.model_copy(deep=True)))


def test_watchable_model_publishes_every_change_of_every_collection() -> None:
    model = ReadModel(Settings(), role="test", window=1000)
    model.ready.set()
    _fold(model)
    pods = model.collections["pods"]
    assert pods.window, "pod changes are kept for watch resume"
    assert {e.type for e in pods.window} >= {"ADDED", "MODIFIED"}
    last = pods.window[-1]
    assert last.object["metadata"]["resourceVersion"] == str(last.resource_version)
    deleted = [e for e in pods.window if e.type == "DELETED"]
    assert deleted and all(
        e.object["metadata"]["resourceVersion"] == str(e.resource_version) for e in deleted
    )
    assert all(isinstance(e.raw, bytes) for e in pods.window)  # no dicts for the GC to walk
    # A watch in a namespace matches by the event's namespace, unparsed: it is the object's.
    for collection in model.collections.values():
        for e in collection.window:
            assert e.namespace == e.object["metadata"].get("namespace")
    assert any(e.namespace for e in pods.window)


def test_catching_up_folds_everything_but_the_window_starts_when_ready() -> None:
    model = ReadModel(Settings(), role="test", window=1000)
    pods = model.collections["pods"]
    half = len(STREAM) // 2
    for offset, env in enumerate(STREAM[:half]):
        model._apply(Record(Position(env.topic, 0, offset), env.model_copy(deep=True)))
    assert not pods.window and pods.last == pods.base > 0
    caught_up = pods.last
    model.ready.set()
    for offset, env in enumerate(STREAM[half:], start=half):
        model._apply(Record(Position(env.topic, 0, offset), env.model_copy(deep=True)))
    assert pods.window and pods.window[0].resource_version > caught_up
    assert pods.since(caught_up) == list(pods.window)  # a watch from the list misses nothing
    with pytest.raises(TooOld):
        pods.since(caught_up - PARTITION_SPACE)
    served = ReadModel(Settings(), role="test", window=1000)
    served.ready.set()
    _fold(served)
    assert model.state.pods == served.state.pods


def test_the_window_base_moves_as_old_changes_fall_out() -> None:
    model = ReadModel(Settings(), role="test", window=3)
    model.ready.set()
    _fold(model)
    pods = model.collections["pods"]
    assert len(pods.window) == 3
    assert pods.since(pods.base) == list(pods.window)


def test_model_without_window_folds_the_same_state_but_keeps_no_feed() -> None:
    watched, plain = (
        ReadModel(Settings(), role="test", window=1000),
        ReadModel(Settings(), role="test", window=0),
    )
    watched.ready.set()
    _fold(watched)
    _fold(plain)
    assert plain.state.pods == watched.state.pods
    assert plain.state.nodes == watched.state.nodes
    assert all(not c.window for c in plain.collections.values())
    assert not plain.state.touched


async def test_wait_for_wakes_each_writer_when_its_offset_is_applied() -> None:
    model = ReadModel(Settings(), role="test", window=0)
    tp = TopicPartition("pods", 0)

    def applied(next_offset: int) -> None:  # what run() does after folding a batch
        model.applied[tp] = next_offset
        model._release(tp, next_offset)

    early = asyncio.create_task(model.wait_for(Position("pods", 0, 3)))
    late = asyncio.create_task(model.wait_for(Position("pods", 0, 5)))
    other = asyncio.create_task(model.wait_for(Position("pods", 1, 0)))
    await asyncio.sleep(0)
    applied(4)
    await asyncio.sleep(0)
    assert early.done() and not late.done() and not other.done()
    applied(6)
    await asyncio.sleep(0)
    assert late.done() and not other.done()
    await model.wait_for(Position("pods", 0, 2))  # applied already: returns at once
    with pytest.raises(TimeoutError):
        await model.wait_for(Position("pods", 0, 9), within=0.01)
    other.cancel()
    applied(10)  # the timed-out waiter is skipped, not resolved twice
    assert not model._waiters[tp]


def test_payload_objects_are_kept_unless_a_listener_keeps_the_records() -> None:
    """Alone, or heard only by listeners that keep no payloads (the kubelet, the scheduler),
    a model keeps the payload's objects; a listener that may keep records makes it copy."""
    created = next(e for e in STREAM if e.type == "PodCreated")
    key = (created.payload.namespace, created.payload.name)  # type: ignore[attr-defined]

    def folded(*keeping: bool) -> tuple[ReadModel, Record]:
        model = ReadModel(Settings(), role="test", window=0)
        kept: list[Record] = []
        for keeps in keeping:
            model.on_apply(kept.append, keeps_payloads=keeps)
        record = Record(Position(created.topic, 0, 0), created.model_copy(deep=True))
        model._apply(record)
        assert kept == [record] * len(keeping)
        return model, record

    alone, record = folded()
    assert alone.state.pods[key] is record.envelope.payload.pod  # type: ignore[attr-defined]
    reading, record = folded(False, False)
    assert reading.state.pods[key] is record.envelope.payload.pod  # type: ignore[attr-defined]
    for keeping in [(True,), (False, True)]:
        listened, record = folded(*keeping)
        assert listened.state.pods[key] is not record.envelope.payload.pod  # type: ignore[attr-defined]
        assert listened.state.pods[key] == alone.state.pods[key]


def test_a_watcher_that_falls_behind_is_told_it_is_closed() -> None:
    from collections import deque

    from inplace.core.readmodel import Collection, WatchEvent

    pods = Collection("pods", deque(maxlen=10))
    queue = pods.subscribe(size=3)
    events = [WatchEvent.of("MODIFIED", rv, "ns", {"metadata": {}}) for rv in range(1, 5)]
    for event in events:
        pods.publish(event)
    got = [queue.get_nowait() for _ in range(queue.qsize())]
    assert got == [events[0], events[1], None]  # then closed: the client re-watches
    assert queue not in pods.subscribers
