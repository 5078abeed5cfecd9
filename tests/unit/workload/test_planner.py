"""The CloneSet reconcile as a pure function: pacing, partition, paused, recreate, the
feature gate, failure handling (no broker)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from schemas.k8s import Pod
from schemas.workload import CloneSet, CloneSetUpdateStrategy
from services.workload import lifecycle
from services.workload.pacing import max_concurrent
from services.workload.planner import (
    CreatePod,
    DeletePod,
    Emit,
    Inputs,
    Relabel,
    Resize,
    new_pod,
    reconcile,
    refused,
)
from services.workload.revisions import update_revision

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def make_set(cpu: str = "100m", image: str = "nginx:1.27", **strategy: Any) -> CloneSet:
    res = {"cpu": cpu}
    return CloneSet.model_validate(
        {
            "metadata": {"name": "web", "namespace": "default", "uid": "u1", "generation": 1},
            "spec": {
                "replicas": 4,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {
                        "containers": [
                            {
                                "name": "app",
                                "image": image,
                                "resources": {"requests": res, "limits": dict(res)},
                            }
                        ]
                    },
                },
                "updateStrategy": strategy,
            },
        }
    )


def running_pods(cs: CloneSet, n: int = 4, ready: bool = True) -> list[Pod]:
    pods = []
    for i in range(n):
        pod = new_pod(cs, cs.spec.template, update_revision(cs))
        pod.metadata.name = f"web-{i}"
        pod.metadata.resource_version = "1"
        cpu = cs.spec.template.spec.containers[0].resources
        pod.status = Pod.model_validate(
            {
                "status": {
                    "phase": "Running",
                    "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
                    "containerStatuses": [{"name": "app", "resources": cpu.to_k8s()}],
                }
            }
        ).status
        pods.append(pod)
    return pods


def rolled(pods: list[Pod], new: CloneSet, old: CloneSet, **status: Any) -> tuple[Inputs, CloneSet]:
    new = new.model_copy(deep=True)
    new.status.current_revision = update_revision(old)
    for key, value in status.items():
        setattr(new.status, key, value)
    history = {update_revision(old): old.spec.template, update_revision(new): new.spec.template}
    return Inputs(clone_set=new, pods=pods, history=history, now=NOW), new


def kinds(actions: list[Any]) -> list[tuple[str, str]]:
    out = []
    for a in actions:
        if isinstance(a, Relabel | Resize):
            out.append((type(a).__name__, a.pod.metadata.name or ""))
        elif isinstance(a, DeletePod):
            out.append(("DeletePod", a.name))
        elif isinstance(a, CreatePod):
            out.append(("CreatePod", ""))
    return out


@pytest.mark.parametrize(
    ("value", "replicas", "expected"),
    [(1, 10, 1), (3, 10, 3), ("30%", 10, 3), ("25%", 10, 3), ("1%", 10, 1), ("100%", 4, 4)],
)
def test_max_concurrent(value: int | str, replicas: int, expected: int) -> None:
    strategy = CloneSetUpdateStrategy(max_concurrent_resizes=value)
    assert max_concurrent(strategy, replicas) == expected


def test_creates_missing_pods_at_the_update_revision() -> None:
    cs = make_set()
    plan = reconcile(Inputs(clone_set=cs, pods=[], history={}, now=NOW))
    creates = [a for a in plan.actions if isinstance(a, CreatePod)]
    assert len(creates) == 4
    assert all(lifecycle.revision(a.pod) == update_revision(cs) for a in creates)
    assert plan.status.update_revision == plan.status.current_revision == update_revision(cs)


def test_a_template_change_before_the_first_status_keeps_the_pods_revision_current() -> None:
    old, new = make_set(), make_set(cpu="200m")
    assert new.status.current_revision is None, "the controller never wrote a status"
    history = {update_revision(old): old.spec.template, update_revision(new): new.spec.template}
    plan = reconcile(Inputs(clone_set=new, pods=running_pods(old), history=history, now=NOW))
    assert plan.status.current_revision == update_revision(old)
    assert plan.status.update_revision == update_revision(new)
    assert kinds(plan.actions)[:1] == [("Relabel", "web-0")], "the rollout starts"


@pytest.mark.parametrize("phase", ["Failed", "Succeeded"])
def test_a_terminal_pod_is_replaced_and_left_in_place(phase: str) -> None:
    cs = make_set()
    pods = running_pods(cs)
    pods[1].status.phase = phase  # e.g. evicted by a hot unplug: Failed/Evicted
    plan = reconcile(Inputs(clone_set=cs, pods=pods, history={}, now=NOW))
    assert kinds(plan.actions) == [("CreatePod", "")]
    assert plan.status.replicas == 3


@pytest.mark.parametrize(
    ("name", "strategy", "expected"),
    [
        ("one at a time", {}, [("Relabel", "web-0")]),
        (
            "three at a time",
            {"maxConcurrentResizes": 3},
            [("Relabel", f"web-{i}") for i in range(3)],
        ),
        ("partition 3", {"maxConcurrentResizes": 3, "partition": 3}, [("Relabel", "web-0")]),
        ("partition all", {"maxConcurrentResizes": 3, "partition": 4}, []),
        ("paused", {"paused": True}, []),
    ],
)
def test_first_batch(name: str, strategy: dict[str, Any], expected: list[Any]) -> None:
    old = make_set(**strategy)
    inputs, _ = rolled(running_pods(old), make_set("200m", **strategy), old)
    assert kinds(reconcile(inputs).actions) == expected, name


def test_a_batch_event_carries_its_inputs() -> None:
    strategy = {"maxConcurrentResizes": 3, "partition": 3}
    old = make_set(**strategy)
    inputs, _ = rolled(running_pods(old), make_set("200m", **strategy), old)
    [batch] = [
        a for a in reconcile(inputs).actions if isinstance(a, Emit) and a.reason == "BatchStarted"
    ]
    assert batch.message.endswith(
        "(batch of 1: maxConcurrent 3, 0/4 pods at the revision, 1 wanted there (partition 3), "
        "4 behind)"
    )


def test_not_ready_pods_go_first() -> None:
    old = make_set()
    pods = running_pods(old)
    pods[2].status.conditions[0].status = "False"  # type: ignore[index]
    inputs, _ = rolled(pods, make_set("200m"), old)
    assert kinds(reconcile(inputs).actions) == [("Relabel", "web-2")]


def test_lifecycle_steps_and_no_new_batch_while_in_flight() -> None:
    old = make_set()
    new = make_set("200m", maxConcurrentResizes=2)
    target = update_revision(new)
    pods = running_pods(old)
    labels, annotations = lifecycle.relabel(pods[0], "PreparingUpdate", target=target)
    pods[0].metadata.labels, pods[0].metadata.annotations = labels, annotations
    inputs, _ = rolled(pods, new, old)
    plan = reconcile(inputs)
    assert kinds(plan.actions) == [("Relabel", "web-0")]
    step = plan.actions[0]
    assert isinstance(step, Relabel) and step.labels[lifecycle.REVISION_LABEL] == target
    assert step.labels[lifecycle.LIFECYCLE_STATE_LABEL] == "Updating"

    pods[0].metadata.labels, pods[0].metadata.annotations = step.labels, step.annotations
    plan = reconcile(rolled(pods, new, old)[0])
    assert kinds(plan.actions) == [("Resize", "web-0")]


def test_image_change_recreates_and_feature_gate_off_recreates_resources_too() -> None:
    old = make_set()
    inputs, _ = rolled(running_pods(old), make_set(image="nginx:1.28"), old)
    assert kinds(reconcile(inputs).actions) == [("DeletePod", "web-0")]
    inputs, _ = rolled(running_pods(old), make_set("200m"), old)
    gate_off = Inputs(inputs.clone_set, inputs.pods, inputs.history, NOW, vertical_enabled=False)
    assert kinds(reconcile(gate_off).actions) == [("DeletePod", "web-0")]


@pytest.mark.parametrize(
    ("on_infeasible", "reason"), [("Report", "Infeasible"), ("Rollback", "RollingBack")]
)
def test_infeasible_pod_fails_the_revision(on_infeasible: str, reason: str) -> None:
    old = make_set(onInfeasible=on_infeasible)
    new = make_set("200m", onInfeasible=on_infeasible)
    target = update_revision(new)
    pods = running_pods(old)
    labels, annotations = lifecycle.relabel(pods[0], "Updating", revision=target, target=target)
    pods[0].metadata.labels, pods[0].metadata.annotations = labels, annotations
    pods[0].spec.containers[0].resources = new.spec.template.spec.containers[0].resources
    pods[0].status.resize = "Infeasible"
    plan = reconcile(rolled(pods, new, old)[0])
    condition = (plan.status.conditions or [])[0]
    assert plan.status.failed_revision == target
    assert (condition.reason, condition.status) == (reason, "True")
    assert "web-0: Infeasible" in (condition.message or "")
    assert kinds(plan.actions) == []

    # Next round, with the failure in status: Report holds, Rollback re-targets the pod.
    inputs, _ = rolled(pods, new, old, failed_revision=target, conditions=[condition])
    after = kinds(reconcile(inputs).actions)
    assert after == ([] if on_infeasible == "Report" else [("Relabel", "web-0")])


@pytest.mark.parametrize(
    ("on_infeasible", "reason"), [("Report", "Infeasible"), ("Rollback", "RollingBack")]
)
def test_a_refused_resize_fails_the_revision_and_settles_the_pod(
    on_infeasible: str, reason: str
) -> None:
    old, new = make_set("100m"), make_set("200m", onInfeasible=on_infeasible)
    pod = running_pods(old, 1)[0]
    labels, annotations = lifecycle.relabel(pod, "Updating", target=update_revision(new))
    pod.metadata.labels, pod.metadata.annotations = labels, annotations
    status = new.status.model_copy(
        update={"update_revision": update_revision(new), "current_revision": update_revision(old)}
    )
    plan = refused(new, status, pod, 'Pod "web-0" is invalid: quota exceeded', NOW)
    assert plan.status.failed_revision == update_revision(new)
    (condition,) = plan.status.conditions or []
    assert (condition.type, condition.status, condition.reason) == (
        "VerticalUpdateFailed",
        "True",
        reason,
    )
    assert "pod web-0: the apiserver refused the resize: " in (condition.message or "")
    relabel, emit = plan.actions
    assert (
        isinstance(relabel, Relabel) and relabel.labels[lifecycle.LIFECYCLE_STATE_LABEL] == "Normal"
    )
    assert lifecycle.TARGET_ANNOTATION not in relabel.annotations
    assert emit.type == "Warning" and emit.reason == reason  # type: ignore[union-attr]
