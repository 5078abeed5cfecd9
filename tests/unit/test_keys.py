"""A pod goes by one key everywhere: its events' partition key on the log, the kubelet's
checkpoint, the scheduler's cache (issue 16: keys live once, in `schemas.keys`)."""

from __future__ import annotations

from schemas import events as ev
from schemas.keys import object_key, pod_key
from schemas.podview import PodResources
from services.kubelet.admission import Admit, NodeAllocation, admit_pod
from services.scheduler.cache import SchedulerCache
from tests.factories import kube_event, node, pod, resize_flow


def test_a_pods_events_are_keyed_on_the_log_by_the_key_every_role_holds_it_under() -> None:
    web = pod("team-a", "web-0")
    keys = {e.partition_key() for e in resize_flow("team-a", "web-0", "node-1", "200m", "256Mi")}
    keys.add(ev.KubeEventRecorded(event=kube_event("team-a", "web-0")).partition_key())

    assert keys == {pod_key(web)} == {pod_key(PodResources.of(web))} == {"team-a/web-0"}


def test_the_kubelet_and_the_scheduler_hold_a_bound_pod_under_its_key() -> None:
    web = pod("team-a", "web-0").model_copy(deep=True)
    web.spec.node_name = "node-1"
    admitted = admit_pod(NodeAllocation.from_node(node("node-1")), web)
    assert isinstance(admitted, Admit)
    checkpoint = NodeAllocation.from_node(node("node-1")).with_pod(admitted.pod)
    cache = SchedulerCache()
    cache.upsert_node(node("node-1"))
    cache.upsert_pod(web)

    assert list(checkpoint.pods) == ["team-a/web-0"]
    assert list(cache.placed_keys()) == ["team-a/web-0"]
    assert cache.placed_node("team-a/web-0") == "node-1"


def test_a_pod_without_a_namespace_is_keyed_in_default_as_the_apiserver_files_it() -> None:
    web = pod("default", "web-0").model_copy(deep=True)
    web.metadata.namespace = None

    assert pod_key(web) == object_key(None, "web-0") == "default/web-0"
