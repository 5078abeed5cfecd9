"""The scheduler decodes only the event types it reads (services/scheduler/reads.py), and decides
exactly as if it folded everything."""

from __future__ import annotations

from typing import Any

from inplace.core.bus.consumer import Record
from inplace.core.bus.headers import Accept, of_types
from inplace.core.bus.producer import Position
from inplace.core.projection.podstore import PodForm, PodStore, pod_json
from inplace.core.projection.state import ClusterState
from inplace.core.readmodel import ReadModel
from inplace.core.settings import Settings
from schemas.k8s import Pod
from schemas.kubeevents import reference
from schemas.resources import is_resize_infeasible
from services.scheduler.cache import pod_demand
from services.scheduler.placement import schedule
from services.scheduler.reads import READS, SKIPS, placed_json
from services.scheduler.service import INPUT_TOPICS, ROLE, Scheduler, _unschedulable_message
from tests import factories

STREAM = factories.every_type_stream()


async def _follow(
    accept: Accept | None, form: PodForm | None = None
) -> tuple[list[dict[str, Any]], int]:
    """The scheduler's view after each batch of the stream, and how many records it skipped.
    With a `form`, every pod goes cold after each record and is kept in that form."""
    model = ReadModel(Settings(), role=ROLE, topics=INPUT_TOPICS, window=0)
    if form is not None:
        model.state.pods = PodStore(hot=1, held=0, form=form)
    scheduler = Scheduler(model, producer=None)  # type: ignore[arg-type]
    model.ready.set()  # live: the changes that retry parked pods are recorded too
    views, skipped = [], 0
    async for skipped_so_far in factories.feed(model, STREAM, accept):
        views.append(_view(scheduler))
        skipped = skipped_so_far
    return views, skipped


def _view(scheduler: Scheduler) -> dict[str, Any]:
    """What the scheduler decides from: its cache, its queues and every pod as it prices it."""
    cache = scheduler.cache
    pods = scheduler.model.objects("pods")
    pending = {
        f"{ns}/{name}": pod
        for (ns, name), pod in pods.items()
        if pod.spec.node_name is None and pod.status.phase not in ("Succeeded", "Failed")
    }
    return {
        "nodes": [
            (n.name, n.allocatable(), n.requested(), n.pod_count, n.non_zero_cpu, n.non_zero_memory)
            for n in cache.nodes()
        ],
        "placement": [(n.name, n.blocked_reason, n.facts) for n in cache.nodes()],
        "ghosts": [
            (name, cache.node(name).present)  # type: ignore[union-attr]
            for name in sorted({cache.placed_node(k) or "" for k in cache.placed_keys()})
        ],
        "placed": {k: (cache.placed_node(k), cache.placed_demand(k)) for k in cache.placed_keys()},
        "pods": {
            key: (pod.spec.node_name, pod.status.phase, is_resize_infeasible(pod), pod_demand(pod))
            for key, pod in pods.items()
        },
        # A pending pod's decision, the message it was last refused with, and what its Events
        # name (resourceVersion included).
        "pending": {
            key: (schedule(cache, pod), _unschedulable_message(pod), reference("Pod", pod.metadata))
            for key, pod in pending.items()
        },
        "queue": list(scheduler._queue),
        "changes": [(change, cause.id) for change, cause in scheduler._changes.items()],
        "infeasible": scheduler._infeasible,
    }


def test_every_type_of_its_topics_is_read_or_skipped_for_a_reason() -> None:
    factories.assert_every_type_decided(READS, SKIPS, INPUT_TOPICS, STREAM)


async def test_the_filtered_scheduler_decides_as_if_it_read_everything() -> None:
    full, none_skipped = await _follow(None)
    filtered, skipped = await _follow(of_types(READS))
    assert none_skipped == 0 and skipped > 0
    assert full[-1]["pending"] and full[-1]["changes"] and full[-1]["placed"]  # not vacuous
    factories.assert_same_views(full, filtered)


async def test_placed_pods_kept_in_part_price_and_fold_as_whole_ones() -> None:
    """Every pod going cold after every record: placed ones kept as `placed_json` writes them
    (a fraction of the pod), pending ones whole; the scheduler decides the same throughout."""
    whole, _ = await _follow(of_types(READS))
    kept, _ = await _follow(of_types(READS), placed_json)
    assert whole[-1]["placed"] and whole[-1]["pending"]  # not vacuous
    factories.assert_same_views(whole, kept)


def test_a_placed_pod_is_kept_in_part_and_a_pending_one_whole() -> None:
    state = ClusterState()
    for offset, env in enumerate(factories.cluster_stream(pods=2, resizes_per_pod=1, nodes=1)):
        state.apply(Record(Position(env.topic, 0, offset), env))
    placed = next(p for p in state.pods.values() if p.status.phase == "Running")
    assert placed.status.conditions and placed.status.container_statuses
    placed.metadata.labels = {"app": "web"}
    placed.status.container_statuses[0].image_id = "registry.k8s.io/pause@sha256:6f73"
    pending = placed.model_copy(deep=True)
    pending.spec.node_name = None
    assert placed_json(pending) == pod_json(pending)
    kept = Pod.model_validate_json(placed_json(placed))
    assert kept.metadata.labels is None and kept.status.conditions is None
    assert kept.status.container_statuses and not kept.status.container_statuses[0].image_id
    assert len(placed_json(placed)) < len(pod_json(placed))
    assert (kept.spec.node_name, kept.status.phase) == (placed.spec.node_name, "Running")
    assert kept.metadata.resource_version == placed.metadata.resource_version
    assert pod_demand(kept) == pod_demand(placed)
