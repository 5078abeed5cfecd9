"""EventStore: Events held as JSON, decoded on demand, fold to exactly what decoded ones give."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from inplace.core.bus.consumer import Record
from inplace.core.bus.producer import Position
from inplace.core.projection.eventpack import event_json
from inplace.core.projection.eventstore import EventStore
from inplace.core.projection.state import ClusterState
from schemas import events as ev
from schemas.envelope import Envelope
from tests import factories

T0 = datetime(2026, 11, 29, tzinfo=UTC)


def _stream() -> list[Envelope]:
    """Pods' Events recorded, recorded again (aggregated), and some deleted (expired)."""
    out = [e for e in factories.every_type_stream(pods=20) if e.topic == ev.K8S_EVENTS]
    recorded = [factories.kubelet_event(f"p{i}", T0 + timedelta(seconds=i)) for i in range(30)]
    for event in [*recorded, *recorded[::3]]:
        out.append(Envelope.wrap(ev.KubeEventRecorded(event=event), producer="kubelet"))
    for event in recorded[::5]:
        out.append(Envelope.wrap(ev.KubeEventDeleted(event=event), producer="apiserver"))
    return out


def _fold(state: ClusterState, envelopes: list[Envelope]) -> ClusterState:
    for offset, env in enumerate(envelopes):
        state.apply(Record(Position(env.topic, 0, offset), env))
    return state


@pytest.mark.parametrize("hot", [1, 2, 7, 1024])
def test_a_fold_into_the_store_equals_a_fold_into_decoded_events(hot: int) -> None:
    envelopes = _stream()
    plain = _fold(ClusterState(), envelopes)
    stored = _fold(ClusterState(events=EventStore(hot=hot)), envelopes)
    assert isinstance(stored.events, EventStore)
    mine = [e for (ns, _), e in plain.events.items() if ns == "ns"]
    assert len(mine) == 30 - 6  # every fifth deleted
    assert sorted(e.count or 0 for e in mine) == [1] * 16 + [2] * 8  # every third again
    assert sorted(stored.events) == sorted(plain.events)
    in_ns = set(stored.events.keys_of("ns"))
    assert in_ns == {key for key in plain.events if key[0] == "ns"}
    for key, event in plain.events.items():
        assert stored.events[key].to_k8s() == event.to_k8s(), key
        assert json.loads(stored.events.json(key)) == event.to_k8s(), key
    for pod in {e.involved_object.name or "" for e in plain.events.values()}:
        about = {k for k, e in plain.events.items() if e.involved_object.name == pod}
        assert set(stored.events.keys_of(involved=pod)) == about, pod
        in_ns_about = set(stored.events.keys_of("ns", involved=pod))
        assert in_ns_about == {k for k in about if k[0] == "ns"}, pod
    assert stored.events.keys_of(involved="no-such-pod") == []
    assert stored.events.newest_resource_version() == max(
        int(e.metadata.resource_version or 0) for e in plain.events.values()
    )


def test_the_ttl_sweep_decodes_only_the_events_written_before_its_cutoff() -> None:
    store = EventStore(hot=1)
    for i in range(4):
        event = factories.kubelet_event(f"p{i}", T0)
        event.last_timestamp = T0 + timedelta(minutes=i)
        event.metadata.resource_version = str(10 + i)
        if i % 2:
            store[("ns", f"p{i}")] = event  # written through the fold
        else:  # a snapshot row, held undecoded
            written = T0 + timedelta(minutes=i)
            store.put_json(
                ("ns", f"p{i}"), event_json(event), rv=10 + i, written=written, involved=f"p{i}"
            )
    old = store.written_before(T0 + timedelta(minutes=1))
    assert [e.involved_object.name for e in old] == ["p0", "p1"]
    assert store.newest_resource_version() == 13
    assert json.loads(event_json(store[("ns", "p2")]))["lastTimestamp"] == "2026-11-29T00:02:00Z"
    del store[("ns", "p0")]
    assert ("ns", "p0") not in store and len(store) == 3


def test_the_events_about_an_object_follow_puts_moves_and_deletes() -> None:
    store = EventStore(hot=1)
    first, second = (
        factories.kubelet_event("p0", T0),
        factories.kubelet_event("p1", T0 + timedelta(seconds=1)),
    )
    store[("ns", "e0")] = first
    store.put_json(("ns", "e1"), event_json(second), rv=2, written=T0, involved="p1")
    store.put_json(("other", "e2"), event_json(second), rv=3, written=T0, involved="p1")
    assert store.keys_of(involved="p0") == [("ns", "e0")]
    assert sorted(store.keys_of(involved="p1")) == [("ns", "e1"), ("other", "e2")]
    assert store.keys_of("other", involved="p1") == [("other", "e2")]
    moved = first.model_copy(deep=True)
    moved.involved_object.name = "p1"  # the same Event written again about another object
    store[("ns", "e0")] = moved
    assert store.keys_of(involved="p0") == []
    assert sorted(store.keys_of("ns", involved="p1")) == [
        ("ns", "e0"),
        ("ns", "e1"),
    ]
    store.put_json(("ns", "e1"), event_json(first), rv=4, written=T0, involved="p0")  # a row again
    assert store.keys_of(involved="p0") == [("ns", "e1")]
    del store[("ns", "e0")]
    del store[("other", "e2")]
    assert store.keys_of(involved="p1") == []
    assert len(store) == 1


def test_a_list_order_is_kept_until_an_event_comes_or_goes() -> None:
    store = EventStore(hot=1)
    for ns, name in [("a", "x.1"), ("a-b", "y.1"), ("a", "w.1")]:
        store.put_json(
            (ns, name),
            event_json(factories.kubelet_event(name[0], T0)),
            rv=1,
            written=T0,
            involved="p",
        )
    listed = store.listed()
    assert list(listed) == [("a-b", "y.1"), ("a", "w.1"), ("a", "x.1")]  # "a-b/" < "a/"
    assert (listed[-1], listed[1:], len(listed)) == (("a", "x.1"), [("a", "w.1"), ("a", "x.1")], 3)
    assert list(store.listed("a")) == [("a", "w.1"), ("a", "x.1")]
    assert list(store.listed("none-here")) == []
    store[("a", "v.1")] = factories.kubelet_event("v", T0)
    assert list(store.listed("a")) == [("a", "v.1"), ("a", "w.1"), ("a", "x.1")]
    del store[("a", "w.1")]
    assert list(store.listed()) == [("a-b", "y.1"), ("a", "v.1"), ("a", "x.1")]
    del store[("a-b", "y.1")]
    assert list(store.listed()) == [("a", "v.1"), ("a", "x.1")]
    with pytest.raises(IndexError):
        store.listed()[2]
