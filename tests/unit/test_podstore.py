"""PodStore: pods held as JSON, decoded on demand, fold to exactly what decoded pods give."""

from __future__ import annotations

import json

import pytest

from inplace.core.bus.consumer import Record
from inplace.core.bus.producer import Position
from inplace.core.projection.podstore import PodStore, pod_json
from inplace.core.projection.state import ClusterState
from schemas.envelope import Envelope
from schemas.k8s import Pod
from schemas.podview import PodResources, controller_kind, resource_json
from schemas.resources import is_resize_infeasible, pod_limits, pod_requests, qos_class
from services.quota.totals import charge
from services.scheduler.cache import pod_demand
from tests import factories


def _fold(state: ClusterState, envelopes: list[Envelope]) -> ClusterState:
    for offset, env in enumerate(envelopes):
        state.apply(Record(Position(env.topic, 0, offset), env))
    return state


@pytest.mark.parametrize(("hot", "held"), [(1, 0), (1, 2), (7, 3), (10_000, 4096)])
def test_a_fold_into_the_store_equals_a_fold_into_decoded_pods(hot: int, held: int) -> None:
    """With a hot set of one, every event folds into a pod decoded from its JSON and leaves
    it serialized again: nothing of a pod may be lost on the way (extras, times, quantities,
    statuses of every event type)."""
    envelopes = [
        *factories.every_type_stream(),
        *factories.cluster_stream(pods=30, resizes_per_pod=3, nodes=3),
    ]
    plain = _fold(ClusterState(), envelopes)
    stored = _fold(ClusterState(pods=PodStore(hot=hot, held=held)), envelopes)
    assert plain.pods, "the stream creates pods"
    assert sorted(stored.pods) == sorted(plain.pods)
    for key, pod in plain.pods.items():
        assert stored.pods[key].to_k8s() == pod.to_k8s(), key
        assert json.loads(stored.pods.json(key) or b"") == pod.to_k8s(), key


def test_the_facts_are_kept_without_decoding() -> None:
    store = PodStore(hot=1)
    bound = factories.pod("ns", "a")
    bound.spec.node_name = "node-1"
    bound.metadata.resource_version = "42"
    store.put_json(("ns", "a"), pod_json(bound), rv=42, node="node-1")
    store[("ns", "b")] = factories.pod("ns", "b")  # unbound, hot
    assert store.node_of(("ns", "a")) == "node-1"
    assert store.node_of(("ns", "b")) == ""
    assert store.node_of(("ns", "c")) is None
    assert store.resource_version(("ns", "a")) == 42
    assert store.newest_resource_version() == 42
    assert store.keys_on({"node-1"}) == [("ns", "a")]
    assert store.json(("ns", "c")) is None and store.get(("ns", "c")) is None


def test_a_pod_changed_while_hot_is_serialized_when_it_leaves_the_hot_set() -> None:
    store = PodStore(hot=1)
    pod = factories.pod("ns", "a")
    store[("ns", "a")] = pod
    pod.metadata.labels = {"changed": "yes"}
    store[("ns", "a")] = pod  # put back, as ClusterState does after every reducer
    store[("ns", "b")] = factories.pod("ns", "b")  # pushes `a` out of the hot set
    assert store[("ns", "a")] is not pod  # decoded again, from its JSON
    assert store[("ns", "a")].metadata.labels == {"changed": "yes"}


def test_walking_every_pod_leaves_the_hot_set_alone() -> None:
    store = PodStore(hot=1)
    for name in ("a", "b", "c"):
        store[("ns", name)] = factories.pod("ns", name)
    hot = store[("ns", "c")]
    assert [k for k, _ in store.items()] == [("ns", "a"), ("ns", "b"), ("ns", "c")]
    assert store[("ns", "c")] is hot
    del store[("ns", "c")]
    assert ("ns", "c") not in store and len(store) == 2


def test_views_read_every_pod_as_the_rules_read_the_whole_pod() -> None:
    """A role seeding from a snapshot reads pods through `views()`: the scheduler's price,
    quota's charge and every resource rule give what they give on the decoded pod (streams
    with sidecars, pod-level resources, Infeasible and Deferred resizes, every scope)."""
    stored = _fold(
        ClusterState(pods=PodStore(hot=3)),
        [*factories.every_type_stream(), *factories.scoped_pods_stream()],
    )
    store = stored.pods
    assert isinstance(store, PodStore)
    views = list(store.views())
    kinds = {type(view) for _, view in views}
    assert kinds == {PodResources, Pod}, "cold pods are read as views, hot ones as they are"
    for key, view in views:
        pod = store[key]
        assert pod_demand(view) == pod_demand(pod), key
        assert charge(view) == charge(pod), key
        assert qos_class(view) == qos_class(pod), key
        assert is_resize_infeasible(view) == is_resize_infeasible(pod), key
        for source in ("spec", "allocated", "actual", "max"):
            assert pod_requests(view, source=source) == pod_requests(pod, source=source), key
        for source in ("spec", "actual", "max"):
            assert pod_limits(view, source=source) == pod_limits(pod, source=source), key


def test_a_pod_kept_as_its_resource_fields_is_read_as_the_whole_pod() -> None:
    """`resource_json` (the form of a holder that prices pods) keeps every field the resource
    view reads but the conditions, whose PodResizePending follows status.resize; every
    resource rule gives on the pod decoded from it what it gives on the whole pod."""
    state = _fold(ClusterState(), [*factories.every_type_stream(), *factories.scoped_pods_stream()])
    assert state.pods
    for key, pod in state.pods.items():
        kept = Pod.model_validate_json(resource_json(pod))
        assert len(resource_json(pod)) < len(pod_json(pod)), key
        whole_view = PodResources.model_validate_json(pod_json(pod))
        kept_view = PodResources.model_validate_json(resource_json(pod))
        whole_view.status.conditions = None
        assert kept_view == whole_view, key
        assert charge(kept) == charge(pod), key
        assert pod_demand(kept) == pod_demand(pod), key
        assert qos_class(kept) == qos_class(pod), key
        assert is_resize_infeasible(kept) == is_resize_infeasible(pod), key
        assert kept.spec.containers[0].image == pod.spec.containers[0].image, key
        assert controller_kind(kept) == controller_kind(pod), key


def test_a_private_copy_is_the_pod_as_it_is_now_and_shared_with_nobody() -> None:
    store = PodStore(hot=4)
    pod = factories.pod("ns", "a")
    store[("ns", "a")] = pod
    pod.metadata.labels = {"changed": "yes"}
    store[("ns", "a")] = pod  # changed while hot: its JSON is stale until asked for
    mine = store.private(("ns", "a"))
    assert mine is not None and mine is not store[("ns", "a")]
    assert mine.to_k8s() == store[("ns", "a")].to_k8s()
    mine.spec.containers[0].resources.requests = {}
    assert store[("ns", "a")].spec.containers[0].resources.requests, "the store's pod kept"
    assert store.private(("ns", "b")) is None


def test_taking_newer_pods_keeps_what_is_newer_here() -> None:
    """A kubelet taking nodes over merges their projected pods: each pod from the projection
    only where it is newer than (or unknown to) what the store already folded."""
    here, projected = PodStore(), PodStore()
    for name, rv_here, rv_there in (("a", 5, 3), ("b", 2, 4)):
        pod = factories.pod("ns", name)
        pod.metadata.resource_version = str(rv_here)
        here[("ns", name)] = pod
        there = factories.pod("ns", name)
        there.metadata.labels = {"from": "projection"}
        projected.put_json(("ns", name), pod_json(there), rv=rv_there, node="n1")
    projected.put_json(("ns", "c"), pod_json(factories.pod("ns", "c")), rv=1, node="n1")
    assert sorted(here.take_newer(projected)) == [("ns", "b"), ("ns", "c")]
    assert here[("ns", "a")].metadata.labels is None  # newer here: kept
    assert here[("ns", "b")].metadata.labels == {"from": "projection"}
    assert here.resource_version(("ns", "b")) == 4 and here.node_of(("ns", "c")) == "n1"


def test_a_pod_mid_resize_stays_decoded_past_the_hot_set() -> None:
    """A pod the hot set lets go while its resize is under way is kept decoded for its next
    step (not serialized and decoded again); any other is let go, and up to `held` of them."""
    store = PodStore(hot=1, held=1)
    resizing, idle, other = (
        factories.pod("ns", "a"),
        factories.pod("ns", "b"),
        factories.pod("ns", "c"),
    )
    resizing.status.resize = "Proposed"
    store[("ns", "a")] = resizing
    store[("ns", "b")] = idle  # the hot set's one place: a is held
    store[("ns", "c")] = other  # b is let go
    assert store[("ns", "a")] is resizing
    assert store[("ns", "b")] is not idle and store[("ns", "b")].to_k8s() == idle.to_k8s()
    # One held at most: a second pod mid-resize pushes the older out, serialized.
    other.status.resize = "InProgress"
    store[("ns", "c")] = other
    store[("ns", "b")] = idle  # c held beside a: the older, a, is let go
    store[("ns", "a")] = resizing
    store[("ns", "b")] = idle  # a held now, c let go
    assert store[("ns", "a")] is resizing
    assert store[("ns", "c")] is not other
    assert json.loads(store.json(("ns", "c")) or b"")["status"]["resize"] == "InProgress"
