"""The checkpoint holds allocated pods as JSON (allocatedpods.py): what it gives back is what was
allocated, whatever happens to the pod it was given, in admission order, past the few kept
decoded."""

from __future__ import annotations

from schemas.k8s import PodCondition
from schemas.podview import PodResources
from schemas.quantity import Quantity
from services.kubelet.admission import NodeAllocation
from services.kubelet.allocatedpods import RECENT
from tests import factories

NS = "ns"


def _cpu(checkpoint: NodeAllocation, name: str) -> str:
    pod = checkpoint.allocated(f"{NS}/{name}")
    assert pod is not None
    return str((pod.spec.containers[0].resources.requests or {})["cpu"])


def test_the_checkpoint_keeps_what_was_allocated_not_the_pod_it_was_given() -> None:
    node = factories.node("n1", cpu="64", memory="64Gi")
    checkpoint = NodeAllocation.from_node(node)
    pods = [factories.pod(NS, f"p{i}", cpu=f"{i + 1}00m") for i in range(RECENT * 2)]
    for pod in pods:
        checkpoint = checkpoint.with_pod(pod)
    # The read model changes its pods in place as events arrive: the allocation stays.
    for pod in pods:
        (pod.spec.containers[0].resources.requests or {})["cpu"] = Quantity("9")
    assert [_cpu(checkpoint, f"p{i}") for i in range(len(pods))] == [
        f"{i + 1}00m" for i in range(len(pods))
    ]
    assert checkpoint.allocated(f"{NS}/p0") == PodResources.of(factories.pod(NS, "p0", cpu="100m"))
    assert checkpoint.used()["cpu"] == Quantity(f"{sum(range(1, len(pods) + 1)) * 100}m")

    # A resize replaces a pod in its place; a release removes it; older checkpoints stay.
    resized = checkpoint.with_pod(factories.pod(NS, "p1", cpu="2"))
    released = resized.without_pod(f"{NS}/p2")
    assert _cpu(resized, "p1") == "2" and _cpu(checkpoint, "p1") == "200m"
    assert list(released.pods)[:3] == [f"{NS}/p0", f"{NS}/p1", f"{NS}/p3"]
    assert released.allocated(f"{NS}/p2") is None and _cpu(resized, "p2") == "300m"
    assert [_cpu(released, "p1") for _ in range(2)] == ["2", "2"]


def test_pods_put_back_at_once_are_each_held_as_allocated() -> None:
    node = factories.node("n1", cpu="64", memory="64Gi")
    pods = [factories.pod(NS, f"p{i}", cpu=f"{i + 1}") for i in range(RECENT + 2)]
    one_by_one = NodeAllocation.from_node(node)
    for pod in pods:
        one_by_one = one_by_one.with_pod(pod)
    at_once = NodeAllocation.from_node(node).with_pods(list(pods))
    assert list(at_once.pods) == list(one_by_one.pods)
    assert at_once.used() == one_by_one.used()
    assert all(at_once.allocated(k) == one_by_one.allocated(k) for k in one_by_one.pods)


def test_the_checkpoint_keeps_no_conditions_or_resource_version_of_a_pod() -> None:
    node = factories.node("n1", cpu="64", memory="64Gi")
    pod = factories.pod(NS, "p0")
    pod.metadata.resource_version = "4242"
    pod.status.phase = "Running"
    pod.status.conditions = [PodCondition(type="Ready", status="True")]
    checkpoint = NodeAllocation.from_node(node).with_pod(pod)
    fresh = checkpoint.allocated(f"{NS}/p0")  # still decoded (one of the recent ones)
    # Pushed out of the recent ones: read back from the JSON.
    for i in range(1, RECENT + 1):
        checkpoint = checkpoint.with_pod(factories.pod(NS, f"p{i}"))
    stored = checkpoint.allocated(f"{NS}/p0")
    for held in (fresh, stored):
        assert held is not None
        assert (held.status.conditions, held.metadata.resource_version) == (None, None)
        assert (held.status.phase, held.metadata.uid) == ("Running", pod.metadata.uid)
    assert fresh == stored
    # The pod given is left as it was.
    assert pod.status.conditions and pod.metadata.resource_version == "4242"


def test_pods_of_one_shape_share_their_cached_requests_and_copies_stay_private() -> None:
    node = factories.node("n1", cpu="64", memory="64Gi")
    checkpoint = NodeAllocation.from_node(node)
    for name, cpu in (("a", "1"), ("b", "1"), ("c", "2")):
        checkpoint = checkpoint.with_pod(factories.pod(NS, name, cpu=cpu))
    cached = checkpoint._requests
    assert cached[f"{NS}/a"] is cached[f"{NS}/b"]
    assert cached[f"{NS}/c"] is not cached[f"{NS}/a"]
    mine = checkpoint.requests_of(f"{NS}/a")
    mine["cpu"] = Quantity("9")
    assert str(checkpoint.requests_of(f"{NS}/b")["cpu"]) == "1"
    assert checkpoint.used()["cpu"] == Quantity("4")


def test_each_pod_is_held_packed_and_comes_back_whole() -> None:
    node = factories.node("n1", cpu="64", memory="64Gi")
    odd = factories.pod(NS, "two-containers", cpu="1500m", memory="3Gi")
    second = odd.spec.containers[0].model_copy(update={"name": "sidecar"})
    odd.spec.containers.append(second)
    pods = [factories.pod(NS, f"web-{i}", cpu=f"{i + 1}00m") for i in range(RECENT + 2)]
    checkpoint = NodeAllocation.from_node(node).with_pods([odd, *pods])
    for pod in [odd, *pods]:
        view = PodResources.of(pod)
        assert checkpoint.allocated(f"{NS}/{pod.metadata.name}") == view
        raw = view.__pydantic_serializer__.to_json(view, by_alias=True, exclude_none=True)
        held = checkpoint.pods._raw[f"{NS}/{pod.metadata.name}"]  # type: ignore[attr-defined]
        assert len(held) < len(raw) / 3, pod.metadata.name
