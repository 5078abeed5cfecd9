"""One look at a pod's resize, as a pure function: the decision, the new allocation, and the
log events and Kubernetes Events the node agent writes for it."""

from __future__ import annotations

from typing import Any

from schemas import events as ev
from schemas.k8s import Pod
from schemas.podview import PodResources
from schemas.quantity import Quantity
from services.kubelet.admission import POD_LEVEL, NodeAllocation
from services.kubelet.resizestep import (
    actuated_event,
    actuated_step,
    completion,
    resize_step,
    resources_of,
    settled,
)


def pod(cpu: str, *, resize: str | None = None, actual: str | None = None, name: str = "p") -> Pod:
    rl = {"cpu": cpu, "memory": "128Mi"}
    resources = {"requests": rl, "limits": rl}
    status: dict[str, Any] = {"phase": "Running"}
    if resize is not None:
        status["resize"] = resize
    if actual is not None:
        a = {"cpu": actual, "memory": "128Mi"}
        status["containerStatuses"] = [
            {
                "name": "c",
                "ready": True,
                "restartCount": 0,
                "resources": {"requests": a, "limits": a},
            }
        ]
    return Pod.model_validate(
        {
            "metadata": {"name": name, "namespace": "ns", "uid": f"u-{name}", "generation": 2},
            "spec": {
                "nodeName": "n1",
                "containers": [{"name": "c", "image": "i", "resources": resources}],
            },
            "status": status,
        }
    )


def node(allocated_cpu: str, cpu: str = "4", *others: Pod) -> NodeAllocation:
    allocation = NodeAllocation(
        name="n1", allocatable={"cpu": Quantity(cpu), "memory": Quantity("8Gi")}
    )
    for p in (pod(allocated_cpu), *others):
        allocation = allocation.with_pod(p)
    return allocation


def kinds(payloads: list[ev.EventPayload]) -> list[tuple[str, str | None]]:
    """(type, the status.resize it sets, "-" when it sets none) per event."""
    return [(p.TYPE, c.resize if (c := ev.resize_change(p)) else "-") for p in payloads]


def test_an_accepted_resize_allocates_and_says_in_progress_in_one_event() -> None:
    step = resize_step(node("1"), pod("2", resize="Proposed", actual="1"), "n1")
    assert step.outcome == "accepted"
    assert (
        step.allocation is not None
        and str(resources_of(step.allocation)["c"].requests["cpu"]) == "2"
    )
    assert kinds(step.writes) == [("Allocated", "InProgress")]
    # Each write says which spec it was decided on (status.observedGeneration, 1.34+).
    assert [getattr(w, "observed_generation", None) for w in step.writes] == [2]
    assert [(n.reason, n.message) for n in step.notices] == [
        (
            "ResizeStarted",
            'Pod resize started: {"containers":[{"name":"c","resources":{"limits":{"cpu":"2",'
            '"memory":"128Mi"},"requests":{"cpu":"2","memory":"128Mi"}}}],"generation":2}',
        )
    ]
    assert not step.frees_room
    assert resize_step(node("2"), pod("1", resize="Proposed"), "n1").frees_room


def test_deferred_is_said_once() -> None:
    crowded = node("1", "4", pod("2500m", name="other"))
    first = resize_step(crowded, pod("2", resize="Proposed", actual="1"), "n1")
    assert first.outcome == "deferred"
    assert kinds(first.writes) == [("ResizeStatusChanged", "Deferred")]
    assert [(n.reason, n.type) for n in first.notices] == [("ResizeDeferred", "Warning")]
    again = resize_step(crowded, pod("2", resize="Deferred", actual="1"), "n1")
    assert (again.outcome, again.writes, again.notices) == ("deferred", [], [])


def test_infeasible_names_the_node_capacity() -> None:
    step = resize_step(node("1"), pod("8", resize="Proposed", actual="1"), "n1")
    assert step.outcome == "infeasible"
    [status] = step.writes
    assert isinstance(status, ev.ResizeStatusChanged) and status.resize == "Infeasible"
    assert status.message is not None and "Node didn't have enough capacity: cpu" in status.message


def test_a_restart_between_allocated_and_in_progress_resumes() -> None:
    resumed = resize_step(node("2"), pod("2", resize="Proposed", actual="1"), "n1")
    assert (resumed.outcome, kinds(resumed.writes)) == (
        "resume",
        [("ResizeStatusChanged", "InProgress")],
    )
    settled = resize_step(node("2"), pod("2", actual="2"), "n1")
    assert (settled.outcome, settled.writes) == ("unchanged", [])


def test_completion_when_desired_allocated_and_actual_agree() -> None:
    allocated = resources_of(pod("2"))
    done = completion(pod("2", resize="InProgress", actual="2"), allocated)
    assert done is not None and kinds(done.writes) == [("ResizeStatusChanged", None)]
    assert [n.reason for n in done.notices] == ["ResizeCompleted"]
    assert completion(pod("2", resize="InProgress", actual="1"), allocated) is None
    assert completion(pod("2", actual="2"), allocated) is None


def test_the_actuation_that_completes_a_resize_clears_its_status_in_the_same_event() -> None:
    allocated = resources_of(pod("2"))
    in_progress = pod("2", resize="InProgress", actual="1")  # the log before the actuation
    event = ev.Actuated(namespace="ns", name="p", uid="u-p", node_name="n1")
    done = actuated_step(in_progress, allocated, resources_of(pod("2")), event)
    assert (done.outcome, kinds(done.writes)) == ("completed", [("Actuated", None)])
    assert [n.reason for n in done.notices] == ["ResizeCompleted"]
    # Short of the allocation, or with no resize open, or desired moved on: just the report.
    for before, actual in (
        (in_progress, resources_of(pod("1500m"))),
        (pod("2", actual="1"), allocated),
        (pod("3", resize="Proposed", actual="1"), allocated),
    ):
        step = actuated_step(before, allocated, actual, event)
        assert (step.outcome, kinds(step.writes), step.notices) == (
            "unchanged",
            [("Actuated", "-")],
            [],
        )


def test_what_the_runtime_applied_is_reported_only_when_the_status_says_otherwise() -> None:
    applied = resources_of(pod("2"))
    assert actuated_event(pod("2", actual="2"), "n1", 3, applied) is None
    report = actuated_event(pod("2", actual="1"), "n1", 3, applied)
    assert report is not None
    assert (report.name, report.node_name, report.observed_generation) == ("p", "n1", 3)
    assert [(c.name, c.resources) for c in report.containers] == list(applied.items())
    # A status without resources gets them even when the values would agree (kube-apiserver
    # reads their absence as a node that cannot resize).
    assert actuated_event(pod("2"), "n1", 3, applied) is not None


def test_sidecars_are_reported_as_init_containers_and_the_pod_level_apart() -> None:
    rl = {"cpu": "1", "memory": "64Mi"}
    resources = {"requests": rl, "limits": rl}
    with_sidecar = Pod.model_validate(
        {
            "metadata": {"name": "p", "namespace": "ns", "uid": "u-p", "generation": 2},
            "spec": {
                "nodeName": "n1",
                "resources": resources,
                "initContainers": [
                    {"name": "log", "image": "i", "restartPolicy": "Always", "resources": resources}
                ],
                "containers": [{"name": "c", "image": "i", "resources": resources}],
            },
            "status": {"phase": "Running"},
        }
    )
    applied = resources_of(with_sidecar)
    report = actuated_event(with_sidecar, "n1", 2, applied)
    assert report is not None
    assert [c.name for c in report.init_containers] == ["log"]
    assert [c.name for c in report.containers] == ["c"]
    assert report.pod_resources == applied[POD_LEVEL]


def test_settled_only_when_nothing_is_open_and_all_three_agree() -> None:
    """After a restart only unsettled pods are reconciled: anything open or out of step is."""
    allocated = resources_of(pod("2"))
    done = pod("2", actual="2")
    done.status.observed_generation = 2
    assert settled(done, allocated)
    assert settled(PodResources.of(done), allocated)  # the view re-admission reads
    unobserved = done.model_copy(deep=True)
    unobserved.status.observed_generation = 1  # a spec change not looked at yet
    stopped = done.model_copy(deep=True)
    stopped.status.phase = "Pending"
    for open_or_behind in (
        pod("2", resize="InProgress", actual="2"),
        pod("2", resize="Deferred", actual="2"),
        pod("3", actual="2"),  # desired moved on from the allocation
        pod("2", actual="1"),  # the status says the runtime is behind
        pod("2"),  # no actual reported at all
        unobserved,
        stopped,
    ):
        open_or_behind.status.observed_generation = open_or_behind.status.observed_generation or 2
        assert not settled(open_or_behind, allocated), open_or_behind.status
