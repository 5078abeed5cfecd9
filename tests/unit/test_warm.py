"""The projector's Warm: the objects its last batches wrote, and pods mid-resize beyond them."""

from __future__ import annotations

from inplace.core.projection.recent import resize_in_flight
from inplace.core.projection.warm import Warm
from schemas.k8s import Pod
from tests import factories


def _pod(name: str, rv: int, resize: str | None = None) -> Pod:
    pod = factories.pod("ns", name)
    pod.metadata.resource_version = str(rv)
    pod.status.resize = resize  # type: ignore[assignment]
    return pod


def test_a_pod_mid_resize_is_remembered_past_the_capacity_and_an_idle_one_is_not() -> None:
    warm: Warm[Pod] = Warm(capacity=1, held=1, holds=resize_in_flight)
    resizing, idle, other = _pod("a", 3, "Proposed"), _pod("b", 4), _pod("c", 5)
    warm.remember(("ns", "a"), resizing)
    warm.remember(("ns", "b"), idle)  # a goes past the capacity: held
    warm.remember(("ns", "c"), other)  # b goes: forgotten, its row is read next time
    assert warm.version(("ns", "a")) == 3 and warm.take(("ns", "a")) is resizing
    assert warm.version(("ns", "b")) == -1
    assert warm.version(("ns", "c")) == 5


def test_held_pods_are_bounded_the_oldest_forgotten_first() -> None:
    warm: Warm[Pod] = Warm(capacity=1, held=1, holds=resize_in_flight)
    warm.remember(("ns", "a"), _pod("a", 1, "InProgress"))
    warm.remember(("ns", "b"), _pod("b", 2, "Proposed"))  # a held
    warm.remember(("ns", "c"), _pod("c", 3))  # b held: a, the older, forgotten
    assert [warm.version(("ns", k)) for k in "abc"] == [-1, 2, 3]


def test_without_holds_only_the_capacity_is_remembered() -> None:
    warm: Warm[Pod] = Warm(capacity=1)
    warm.remember(("ns", "a"), _pod("a", 1, "Proposed"))
    warm.remember(("ns", "b"), _pod("b", 2))
    assert warm.version(("ns", "a")) == -1 and warm.version(("ns", "b")) == 2
    warm.remember(("ns", "b"), None)  # deleted
    assert warm.version(("ns", "b")) == -1
