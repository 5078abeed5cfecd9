"""PodDisruptionBudget rules: the disruption controller's status (budget_status) and the
eviction API's check (evict_check), as kube-controller-manager and kube-apiserver decide them."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from schemas.k8s import ObjectMeta, OwnerReference, Pod, PodCondition, PodPhase
from schemas.policy import (
    Condition,
    LabelSelector,
    PodDisruptionBudget,
    PodDisruptionBudgetSpec,
    PodDisruptionBudgetStatus,
)
from services.apiserver.disruption import (
    DELETION_TIMEOUT,
    Notice,
    budget_sync,
    evict_check,
)
from tests import factories

NS = "default"
NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
EARLIER = NOW - timedelta(hours=1)
APP = {"app": "web"}
WOULD_VIOLATE = "Cannot evict pod as it would violate the pod's disruption budget."


def budget_status(
    pdb: PodDisruptionBudget,
    pods: list[Pod],
    now: datetime,
    scale_of: Callable[[str, str], int | None],
) -> PodDisruptionBudgetStatus:
    """The status one sync writes (what most tests here look at)."""
    return budget_sync(pdb, pods, now, scale_of).status


def sync_notices(
    pdb: PodDisruptionBudget, pods: list[Pod], scale_of: Callable[[str, str], int | None]
) -> list[Notice]:
    return budget_sync(pdb, pods, NOW, scale_of).notices


def _pod(
    name: str,
    *,
    ready: bool = True,
    phase: PodPhase = "Running",
    owner: str | None = "web",
    deleted: bool = False,
    labels: dict[str, str] | None = None,
) -> Pod:
    pod = factories.pod(NS, name)
    pod.metadata.labels = dict(APP if labels is None else labels)
    if owner is not None:
        pod.metadata.owner_references = [
            OwnerReference(
                api_version="apps.inplace.dev/v1alpha1",
                kind="CloneSet",
                name=owner,
                uid=f"uid-{owner}",
                controller=True,
            )
        ]
    pod.metadata.deletion_timestamp = NOW - timedelta(seconds=5) if deleted else None
    pod.status.phase = phase
    pod.status.conditions = [PodCondition(type="Ready", status="True" if ready else "False")]
    return pod


def _pdb(
    name: str = "web",
    *,
    min_available: int | str | None = None,
    max_unavailable: int | str | None = None,
    policy: str | None = None,
    generation: int = 1,
    status: PodDisruptionBudgetStatus | None = None,
) -> PodDisruptionBudget:
    return PodDisruptionBudget(
        metadata=ObjectMeta(name=name, namespace=NS, generation=generation),
        spec=PodDisruptionBudgetSpec(
            min_available=min_available,
            max_unavailable=max_unavailable,
            selector=LabelSelector(match_labels=APP),
            unhealthy_pod_eviction_policy=policy,
        ),
        status=status or PodDisruptionBudgetStatus(),
    )


def _scales(**replicas: int) -> Callable[[str, str], int | None]:
    return lambda kind, name: replicas.get(name) if kind == "CloneSet" else None


def _condition(status: PodDisruptionBudgetStatus) -> tuple[str, str, str, datetime, int | None]:
    assert status.conditions is not None and len(status.conditions) == 1
    c = status.conditions[0]
    assert c.type == "DisruptionAllowed"
    return c.status, c.reason, c.message, c.last_transition_time, c.observed_generation


def _counts(status: PodDisruptionBudgetStatus) -> tuple[int, int, int, int]:
    """(currentHealthy, desiredHealthy, expectedPods, disruptionsAllowed)."""
    return (
        status.current_healthy,
        status.desired_healthy,
        status.expected_pods,
        status.disruptions_allowed,
    )


def _healthy_status(allowed: int, current: int = 3, desired: int = 2) -> PodDisruptionBudgetStatus:
    return PodDisruptionBudgetStatus(
        observed_generation=1,
        disruptions_allowed=allowed,
        current_healthy=current,
        desired_healthy=desired,
        expected_pods=3,
        conditions=[
            Condition(
                type="DisruptionAllowed",
                status="True" if allowed > 0 else "False",
                reason="SufficientPods" if allowed > 0 else "InsufficientPods",
                observed_generation=1,
                last_transition_time=EARLIER,
            )
        ],
    )


# --- budget_status ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("min_available", "expected"),
    [
        (1, (3, 1, 3, 2)),
        (2, (3, 2, 3, 1)),
        (3, (3, 3, 3, 0)),
        (5, (3, 5, 3, 0)),
        (0, (3, 0, 3, 3)),
    ],
)
def test_integer_min_available_counts_the_selected_pods(
    min_available: int, expected: tuple[int, int, int, int]
) -> None:
    pods = [_pod("web-0"), _pod("web-1"), _pod("web-2"), _pod("db-0", labels={"app": "db"})]
    pdb = _pdb(min_available=min_available, generation=4)
    status = budget_status(pdb, pods, NOW, _scales())
    assert _counts(status) == expected
    assert status.observed_generation == 4
    assert status.disrupted_pods is None
    want = ("True", "SufficientPods") if expected[3] > 0 else ("False", "InsufficientPods")
    assert _condition(status) == (*want, "", NOW, 4)


@pytest.mark.parametrize(
    ("min_available", "max_unavailable", "replicas", "ready", "expected"),
    [
        # maxUnavailable 50% of 4 replicas: 2 may be down, 2 must stay.
        (None, "50%", 4, 4, (4, 2, 4, 2)),
        # Percentages round up for maxUnavailable too (as the controller calls intstr): 50% of 3
        # is 2 down, so only 1 must stay.
        (None, "50%", 3, 3, (3, 1, 3, 2)),
        ("50%", None, 3, 3, (3, 2, 3, 1)),
        ("100%", None, 4, 4, (4, 4, 4, 0)),
        # The scale is the controller's replicas, not the pods found: 2 of 4 replicas exist.
        (None, 1, 4, 2, (2, 3, 4, 0)),
        # maxUnavailable above the scale: desiredHealthy is clamped at 0.
        (None, 9, 2, 2, (2, 0, 2, 2)),
        # maxUnavailable wins when both are set.
        (4, "50%", 4, 4, (4, 2, 4, 2)),
    ],
)
def test_percentages_and_max_unavailable_scale_by_the_controllers_replicas(
    min_available: int | str | None,
    max_unavailable: int | str | None,
    replicas: int,
    ready: int,
    expected: tuple[int, int, int, int],
) -> None:
    pods = [_pod(f"web-{i}") for i in range(ready)]
    pdb = _pdb(min_available=min_available, max_unavailable=max_unavailable)
    status = budget_status(pdb, pods, NOW, _scales(web=replicas))
    assert _counts(status) == expected


def test_each_controller_counts_once_and_unmanaged_pods_are_left_out() -> None:
    pods = [
        _pod("web-0"),
        _pod("web-1"),
        _pod("canary-0", owner="canary"),
        _pod("debug", owner=None),  # no controller: only a warning Event in Kubernetes
    ]
    status = budget_status(_pdb(max_unavailable="25%"), pods, NOW, _scales(web=4, canary=2))
    # expectedPods 4 + 2; maxUnavailable ceil(1.5) = 2; the unmanaged pod still counts healthy.
    assert _counts(status) == (4, 4, 6, 0)


def test_a_controller_with_unknown_scale_fails_the_sync_safe() -> None:
    previous = _healthy_status(allowed=1)
    previous.disrupted_pods = {"web-1": NOW - timedelta(seconds=10)}
    pdb = _pdb(max_unavailable=1, generation=2, status=previous)
    status = budget_status(pdb, [_pod("web-0"), _pod("web-1")], NOW, _scales())
    # failSafe keeps the previous status but allows nothing.
    assert _counts(status) == (3, 2, 3, 0)
    assert status.disrupted_pods == previous.disrupted_pods
    assert status.observed_generation == 1
    assert _condition(status) == (
        "False",
        "SyncFailed",
        'found no controllers for pod "web-0"',
        NOW,
        1,
    )


def test_a_percentage_that_does_not_parse_fails_the_sync_safe() -> None:
    status = budget_status(_pdb(min_available="half%"), [_pod("web-0")], NOW, _scales(web=1))
    assert status.disruptions_allowed == 0
    assert _condition(status)[:3] == (
        "False",
        "SyncFailed",
        'invalid value for IntOrString: invalid value "half%": '
        'strconv.Atoi: parsing "half": invalid syntax',
    )


def test_unready_and_deleted_pods_are_not_healthy() -> None:
    pods = [
        _pod("web-0"),
        _pod("web-1", ready=False),
        _pod("web-2", deleted=True),
        _pod("web-3", phase="Succeeded", ready=False),
    ]
    status = budget_status(_pdb(min_available=1), pods, NOW, _scales())
    # All four are selected (expectedPods), one is healthy.
    assert _counts(status) == (1, 1, 4, 0)
    assert _condition(status)[:2] == ("False", "InsufficientPods")


def test_no_pods_allow_no_disruption() -> None:
    status = budget_status(_pdb(min_available=0), [], NOW, _scales())
    assert _counts(status) == (0, 0, 0, 0)
    status = budget_status(_pdb(max_unavailable="50%"), [], NOW, _scales())
    assert _counts(status) == (0, 0, 0, 0)


def test_disrupted_pods_keep_evicted_pods_out_until_deleted_or_expired() -> None:
    recent = NOW - timedelta(seconds=30)
    previous = PodDisruptionBudgetStatus(
        observed_generation=1,
        disrupted_pods={
            "web-0": recent,  # evicted, not deleted yet: kept, not healthy
            "web-1": NOW - DELETION_TIMEOUT - timedelta(seconds=1),  # never deleted: expired
            "web-2": recent,  # now being deleted: dropped
            "gone": recent,  # no longer exists: dropped
            "web-3": NOW - DELETION_TIMEOUT,  # at the deadline: kept, but healthy again
        },
    )
    pods = [_pod("web-0"), _pod("web-1"), _pod("web-2", deleted=True), _pod("web-3")]
    status = budget_status(_pdb(min_available=1, status=previous), pods, NOW, _scales())
    assert status.disrupted_pods == {"web-0": recent, "web-3": NOW - DELETION_TIMEOUT}
    assert _counts(status) == (2, 1, 4, 1)
    later = budget_status(
        _pdb(min_available=1, status=status), pods, NOW + DELETION_TIMEOUT, _scales()
    )
    assert later.disrupted_pods is None
    assert _counts(later) == (3, 1, 4, 2)


def test_condition_keeps_its_transition_time_while_its_status_holds() -> None:
    pods = [_pod("web-0"), _pod("web-1"), _pod("web-2")]
    pdb = _pdb(min_available=1, generation=2, status=_healthy_status(allowed=1))
    status = budget_status(pdb, pods, NOW, _scales())
    assert _counts(status) == (3, 1, 3, 2)
    assert _condition(status) == ("True", "SufficientPods", "", EARLIER, 2)

    flipped = budget_status(_pdb(min_available=3, status=status), pods, NOW, _scales())
    assert _condition(flipped) == ("False", "InsufficientPods", "", NOW, 1)


def test_a_sync_after_a_failure_replaces_the_sync_failed_condition() -> None:
    failed = budget_status(_pdb(max_unavailable=1), [_pod("web-0")], EARLIER, _scales())
    assert _condition(failed)[:2] == ("False", "SyncFailed")
    pods = [_pod("web-0"), _pod("web-1")]
    status = budget_status(_pdb(max_unavailable=1, status=failed), pods, NOW, _scales(web=2))
    assert _counts(status) == (2, 1, 2, 1)
    assert _condition(status) == ("True", "SufficientPods", "", NOW, 1)


def test_budget_status_leaves_the_budget_alone() -> None:
    previous = _healthy_status(allowed=1)
    previous.disrupted_pods = {"web-0": NOW - timedelta(minutes=5)}
    pdb = _pdb(min_available=1, status=previous)
    before = pdb.model_dump()
    budget_status(pdb, [_pod("web-0")], NOW, _scales())
    assert pdb.model_dump() == before


# --- evict_check --------------------------------------------------------------------------------


def test_eviction_within_the_budget_takes_one_disruption() -> None:
    pdb = _pdb(min_available=2, status=_healthy_status(allowed=2, current=4))
    verdict = evict_check(_pod("web-0"), [pdb], NOW)
    assert (verdict.allowed, verdict.code, verdict.message, verdict.causes) == (True, 201, "", [])
    assert verdict.budget is not None and verdict.budget.metadata.name == "web"
    written = verdict.budget.status
    assert written.disruptions_allowed == 1
    assert written.disrupted_pods == {"web-0": NOW}
    assert _condition(written) == ("True", "SufficientPods", "", EARLIER, 1)
    assert pdb.status.disruptions_allowed == 2 and pdb.status.disrupted_pods is None


def test_eviction_taking_the_last_disruption_turns_the_condition_false() -> None:
    pdb = _pdb(min_available=2, status=_healthy_status(allowed=1))
    verdict = evict_check(_pod("web-0"), [pdb], NOW)
    assert verdict.allowed and verdict.budget is not None
    written = verdict.budget.status
    assert (written.disruptions_allowed, written.disrupted_pods) == (0, {"web-0": NOW})
    assert _condition(written) == ("False", "InsufficientPods", "", NOW, 1)


def test_eviction_past_the_budget_is_a_429_naming_the_budget() -> None:
    pdb = _pdb(min_available=2, status=_healthy_status(allowed=0, current=2, desired=2))
    verdict = evict_check(_pod("web-0"), [pdb], NOW)
    assert not verdict.allowed and verdict.budget is None
    assert (verdict.code, verdict.reason) == (429, "TooManyRequests")
    assert verdict.message == WOULD_VIOLATE
    assert verdict.causes == [
        ("DisruptionBudget", "The disruption budget web needs 2 healthy pods and has 2 currently")
    ]
    assert verdict.retry_after_seconds == 0


def test_a_pod_under_two_budgets_is_a_500() -> None:
    budgets = [
        _pdb("web", min_available=1, status=_healthy_status(allowed=2)),
        _pdb("web-too", max_unavailable=1, status=_healthy_status(allowed=1)),
    ]
    verdict = evict_check(_pod("web-0"), budgets, NOW)
    assert (verdict.allowed, verdict.code, verdict.causes, verdict.budget) == (
        False,
        500,
        [],
        None,
    )
    assert verdict.message == (
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does "
        "not support."
    )


def test_a_budget_the_controller_has_not_seen_yet_is_a_429() -> None:
    pdb = _pdb(min_available=1, generation=3, status=_healthy_status(allowed=2))
    verdict = evict_check(_pod("web-0"), [pdb], NOW)
    assert (verdict.allowed, verdict.code, verdict.message) == (False, 429, WOULD_VIOLATE)
    assert verdict.causes == [
        ("DisruptionBudget", "The disruption budget web is still being processed by the server.")
    ]
    assert verdict.retry_after_seconds == 10 and verdict.budget is None


def test_a_negative_budget_is_forbidden() -> None:
    pdb = _pdb(min_available=1, status=_healthy_status(allowed=-1))
    verdict = evict_check(_pod("web-0"), [pdb], NOW)
    assert (verdict.allowed, verdict.code, verdict.reason) == (False, 403, "Forbidden")
    assert verdict.message == (
        'poddisruptionbudget.policy "web" is forbidden: pdb disruptions allowed is negative'
    )


@pytest.mark.parametrize(
    "pod",
    [
        _pod("web-0", phase="Succeeded", ready=False),
        _pod("web-0", phase="Failed", ready=False),
        _pod("web-0", phase="Pending", ready=False),
        _pod("web-0", deleted=True),
    ],
)
def test_pods_that_disrupt_nothing_more_ignore_the_budget(pod: Pod) -> None:
    pdb = _pdb(min_available=3, status=_healthy_status(allowed=0))
    verdict = evict_check(pod, [pdb], NOW)
    assert (verdict.allowed, verdict.code, verdict.budget) == (True, 201, None)


def test_a_pod_no_budget_selects_may_go() -> None:
    pdb = _pdb(min_available=3, status=_healthy_status(allowed=0))
    verdict = evict_check(_pod("db-0", labels={"app": "db"}), [pdb], NOW)
    assert (verdict.allowed, verdict.budget) == (True, None)


def test_always_allow_lets_an_unready_pod_go_without_using_the_budget() -> None:
    pdb = _pdb(min_available=3, policy="AlwaysAllow", status=_healthy_status(0, 2, 3))
    verdict = evict_check(_pod("web-0", ready=False), [pdb], NOW)
    assert (verdict.allowed, verdict.budget) == (True, None)
    # A Ready pod is still held to the budget.
    assert evict_check(_pod("web-1"), [pdb], NOW).code == 429


def test_if_healthy_budget_lets_an_unready_pod_go_only_while_the_budget_is_met() -> None:
    met = _pdb(min_available=2, policy="IfHealthyBudget", status=_healthy_status(0, 2, 2))
    verdict = evict_check(_pod("web-0", ready=False), [met], NOW)
    assert (verdict.allowed, verdict.budget) == (True, None)

    disrupted = _pdb(min_available=3, status=_healthy_status(0, 2, 3))  # unset: IfHealthyBudget
    verdict = evict_check(_pod("web-0", ready=False), [disrupted], NOW)
    assert (verdict.allowed, verdict.code) == (False, 429)
    assert verdict.causes == [
        ("DisruptionBudget", "The disruption budget web needs 3 healthy pods and has 2 currently")
    ]


def test_a_sync_tells_no_pods_and_a_failed_count_on_the_budget() -> None:
    nothing = sync_notices(_pdb(min_available=1), [], _scales())
    assert [(n.type, n.reason, n.message) for n in nothing] == [
        ("Normal", "NoPods", "No matching pods found")
    ]
    unknown_owner = _pod("web-0", owner="gone")
    failed = sync_notices(_pdb(max_unavailable=1), [unknown_owner], _scales())
    assert [(n.type, n.reason, n.message) for n in failed] == [
        (
            "Warning",
            "CalculateExpectedPodCountFailed",
            'Failed to calculate the number of expected pods: found no controllers for pod "web-0"',
        )
    ]
    assert sync_notices(_pdb(min_available=1), [_pod("web-0")], _scales()) == []
