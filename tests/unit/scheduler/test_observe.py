"""The scheduler's cache follows the log: each pod priced again only when its price can move."""

from __future__ import annotations

from typing import Any

import pytest

from inplace.core.bus.consumer import Record
from inplace.core.bus.producer import Position
from inplace.core.readmodel import ReadModel
from inplace.core.settings import Settings
from schemas import events as ev
from schemas.demand import demand_json
from schemas.envelope import Envelope, EventPayload
from services.scheduler.cache import SchedulerCache
from services.scheduler.service import Scheduler
from tests import factories

NS, NAME, NODE, UID = "team-a", "web-0", "node-0", "uid-team-a-web-0"


class _Feed:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.model = ReadModel(Settings(), role="test", window=0)
        self.scheduler = Scheduler(self.model, producer=None)  # type: ignore[arg-type]
        self.offset = 0
        self.priced = 0
        upsert = SchedulerCache.upsert_pod

        def counting(cache: SchedulerCache, pod: Any) -> Any:
            self.priced += 1
            return upsert(cache, pod)

        monkeypatch.setattr(SchedulerCache, "upsert_pod", counting)

    def __call__(self, payload: EventPayload) -> None:
        env = Envelope.wrap(payload, producer="test")
        self.model._apply(Record(Position(env.topic, 0, self.offset), env))
        self.offset += 1

    def cpu(self) -> int:
        demand = self.scheduler.cache.placed_demand(f"{NS}/{NAME}")
        assert demand is not None
        return demand.cpu


def test_status_only_events_do_not_price_the_pod_again(monkeypatch: pytest.MonkeyPatch) -> None:
    feed = _Feed(monkeypatch)
    feed(ev.NodeRegistered(name=NODE, node=factories.node(NODE)))
    feed(ev.PodCreated(namespace=NS, name=NAME, uid=UID, pod=factories.pod(NS, NAME, cpu="1")))
    feed(ev.PodBound(namespace=NS, name=NAME, uid=UID, node_name=NODE))
    assert feed.cpu() == 1000
    proposed, allocated, in_progress, actuated, cleared = factories.resize_flow(
        NS, NAME, NODE, "2", "128Mi"
    )
    feed(proposed)  # spec grows: priced, max(spec, granted)
    assert feed.cpu() == 2000
    priced = feed.priced
    feed(in_progress)
    feed(ev.ContainerRestarted(namespace=NS, name=NAME, uid=UID, container="app", restart_count=1))
    assert feed.priced == priced
    feed(allocated)
    feed(actuated)
    assert feed.priced == priced + 2
    feed(cleared)
    assert feed.priced == priced + 2
    assert feed.cpu() == 2000


def test_a_resize_turning_infeasible_is_priced_at_what_was_granted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    feed = _Feed(monkeypatch)
    feed(ev.NodeRegistered(name=NODE, node=factories.node(NODE)))
    feed(ev.PodCreated(namespace=NS, name=NAME, uid=UID, pod=factories.pod(NS, NAME, cpu="1")))
    feed(ev.PodBound(namespace=NS, name=NAME, uid=UID, node_name=NODE))
    granted = factories.resize_flow(NS, NAME, NODE, "1", "128Mi")
    feed(granted[1])  # Allocated 1 cpu
    feed(granted[3])  # Actuated 1 cpu
    feed(factories.resize_flow(NS, NAME, NODE, "64", "128Mi")[0])  # Proposed: too big
    assert feed.cpu() == 64000  # a pending resize is assumed to succeed
    feed(ev.ResizeStatusChanged(namespace=NS, name=NAME, uid=UID, resize="Infeasible"))
    assert feed.cpu() == 1000  # ... unless Infeasible: only what the node granted
    feed(ev.ResizeStatusChanged(namespace=NS, name=NAME, uid=UID, resize=None))
    assert feed.cpu() == 64000


def _started(feed: _Feed, demands: dict[tuple[str, str], str]) -> Scheduler:
    """A scheduler seeded from `feed`'s objects as from a snapshot bringing `demands`."""
    scheduler = Scheduler(feed.model, producer=None)  # type: ignore[arg-type]
    feed.model.snapshot_demands = demands
    scheduler._seed()
    return scheduler


def _counted(scheduler: Scheduler) -> tuple[dict[str, Any], dict[str, Any]]:
    cache = scheduler.cache
    return (
        {key: (cache.placed_node(key), cache.placed_demand(key)) for key in cache.placed_keys()},
        {n.name: n.requested() for n in cache.nodes()},
    )


def test_a_scheduler_started_from_the_projection_counts_the_stored_demands(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Seeded from the projection's `pods.demand` where a row has one, by pricing the pod
    where not: the same cache either way, and the stored demand is what it counts."""
    feed = _Feed(monkeypatch)
    feed(ev.NodeRegistered(name=NODE, node=factories.node(NODE)))
    for i, cpu in enumerate(["1", "2", "250m"]):
        name = f"web-{i}"
        uid = f"uid-{NS}-{name}"
        feed(ev.PodCreated(namespace=NS, name=name, uid=uid, pod=factories.pod(NS, name, cpu=cpu)))
        if i < 2:
            feed(ev.PodBound(namespace=NS, name=name, uid=uid, node_name=NODE))
    feed(factories.resize_flow(NS, "web-1", NODE, "3", "128Mi")[0])  # a resize Proposed
    stored = {key: demand_json(feed.model.pods[key]) for key in feed.model.pods}
    priced = _counted(_started(feed, {}))
    assert priced[1] == {NODE: {"cpu": 4000, "memory": 2 * 128 * 1024 * 1024}}
    assert _counted(_started(feed, stored)) == priced
    assert _counted(_started(feed, {(NS, "web-0"): stored[(NS, "web-0")]})) == priced
    # The pending pod waits in the queue whichever way the others were counted.
    assert list(_started(feed, stored)._queue) == [f"{NS}/web-2"]
    # Taken as stored, not priced again.
    other = demand_json(factories.pod(NS, "web-0", cpu="7"))
    seeded = _started(feed, {**stored, (NS, "web-0"): other})
    assert _counted(seeded)[1][NODE]["cpu"] == 7000 + 3000


def test_pods_storing_the_same_demand_are_each_counted_at_a_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Pods of one template store the same row; the start parses it once and counts it for
    every pod, and the infeasible mark is per pod too."""
    feed = _Feed(monkeypatch)
    feed(ev.NodeRegistered(name=NODE, node=factories.node(NODE)))
    for i in range(3):
        name, uid = f"web-{i}", f"uid-{NS}-web-{i}"
        feed(ev.PodCreated(namespace=NS, name=name, uid=uid, pod=factories.pod(NS, name, cpu="1")))
        feed(ev.PodBound(namespace=NS, name=name, uid=uid, node_name=NODE))
    stored = {key: demand_json(feed.model.pods[key]) for key in feed.model.pods}
    assert len(set(stored.values())) == 1
    seeded = _started(feed, stored)
    placed, requested = _counted(seeded)
    assert requested[NODE]["cpu"] == 3000
    assert {node for node, _ in placed.values()} == {NODE} and len(placed) == 3
    assert seeded._infeasible == {f"{NS}/web-{i}": False for i in range(3)}


def test_its_read_model_keeps_the_decoded_payloads_objects(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The scheduler keeps causes, not records, so its model folds the payload's own pod in
    instead of a deep copy of it."""
    feed = _Feed(monkeypatch)
    created = ev.PodCreated(namespace=NS, name=NAME, uid=UID, pod=factories.pod(NS, NAME))
    feed(created)
    assert feed.model.get("pods", (NS, NAME)) is created.pod
