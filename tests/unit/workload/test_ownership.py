"""The controller's index of CloneSet-controlled pods decides what wakes it and what it scans."""

from __future__ import annotations

import pytest

from inplace.core.bus.partitioning import partition_of
from schemas.k8s import OwnerReference, Pod
from schemas.workload import KIND
from services.workload.ownership import OwnedPods, controller_uid, decides
from tests import factories


def _pod(name: str, *refs: OwnerReference) -> Pod:
    pod = factories.pod("default", name)
    pod.metadata.owner_references = list(refs) or None
    return pod


def _ref(
    uid: str, *, kind: str = KIND, controller: bool | None = True, name: str = "web"
) -> OwnerReference:
    return OwnerReference(
        api_version="apps/v1", kind=kind, name=name, uid=uid, controller=controller
    )


@pytest.mark.parametrize(
    ("refs", "expected"),
    [
        ((), None),
        ((_ref("u1"),), "u1"),
        ((_ref("u1", controller=None),), None),  # an owner, but not the controller
        ((_ref("u1", controller=False), _ref("u2")), "u2"),
        ((_ref("u1", kind="ReplicaSet"),), None),
    ],
    ids=["no refs", "controller", "not controller", "second ref controls", "other kind"],
)
def test_controller_uid(refs: tuple[OwnerReference, ...], expected: str | None) -> None:
    assert controller_uid(_pod("p", *refs)) == expected


def test_only_controlled_pods_are_relevant_and_indexed() -> None:
    owned = OwnedPods()
    assert owned.observe(("default", "free"), _pod("free")) is False
    assert owned.observe(("default", "web-0"), _pod("web-0", _ref("u1"))) is True
    assert owned.observe(("other", "web-0"), _pod("web-0", _ref("u2"))) is True
    assert list(owned.in_namespace("default")) == [("default", "web-0")]
    assert len(owned) == 2


def test_a_released_or_deleted_pod_is_relevant_once_then_forgotten() -> None:
    owned = OwnedPods()
    owned.observe(("default", "web-0"), _pod("web-0", _ref("u1")))
    assert owned.observe(("default", "web-0"), _pod("web-0")) is True  # released
    assert owned.observe(("default", "web-0"), _pod("web-0")) is False
    owned.observe(("default", "web-1"), _pod("web-1", _ref("u1")))
    assert owned.observe(("default", "web-1"), None) is True  # deleted
    assert len(owned) == 0


def test_orphans_are_pods_whose_controller_is_gone() -> None:
    owned = OwnedPods()
    owned.observe(("default", "a-0"), _pod("a-0", _ref("alive")))
    owned.observe(("default", "b-1"), _pod("b-1", _ref("gone")))
    owned.observe(("default", "b-0"), _pod("b-0", _ref("gone")))
    assert owned.orphans({"alive"}) == [("default", "b-0"), ("default", "b-1")]
    assert owned.orphans({"alive", "gone"}) == []


def test_orphans_are_collected_by_the_process_that_decided_about_their_clone_set() -> None:
    owned = OwnedPods()
    owned.observe(("default", "b-0"), _pod("b-0", _ref("gone-b", name="b")))
    owned.observe(("default", "c-0"), _pod("c-0", _ref("gone-c", name="c")))
    assert owned.orphans(set(), lambda ns, name: name == "c") == [("default", "c-0")]


def test_a_clone_set_is_decided_by_the_owner_of_its_workloads_partition() -> None:
    names = [f"cs-{i}" for i in range(40)]
    spread = {n: partition_of(f"default/{n}", 4) for n in names}
    assert set(spread.values()) == {0, 1, 2, 3}  # the keys spread over every partition
    for n, partition in spread.items():
        assert decides("default", n, {partition}, 4)
        assert not decides("default", n, {0, 1, 2, 3} - {partition}, 4)
        assert decides("default", n, None, 0)  # no group: one process decides everything
        assert not decides("default", n, set(), 4)  # in a group, before any assignment
