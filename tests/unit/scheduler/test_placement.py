"""Scheduler maths: what a placed pod counts for, filter, score, the FailedScheduling message,
retries after capacity frees up, and the incremental cache sums.

Tables in the style of kube-scheduler's fit_test.go: every row is named, with its input and the
exact expected outcome. The KEP-1287 rows follow "Scheduler and API Server Interaction".
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.demand import _granted_anywhere, _non_zero_requests, demand_json, priced_row
from schemas.k8s import Node, Pod, ResourceList
from schemas.quantity import ZERO
from schemas.resources import is_resize_infeasible, resize_aware_containers
from services.scheduler.cache import (
    CapacityFreed,
    PendingPodShrunk,
    PodDemand,
    SchedulerCache,
    amount,
    effective_requests,
    pod_demand,
)
from services.scheduler.placement import (
    Bound,
    Unschedulable,
    failed_scheduling_message,
    filter_nodes,
    node_reasons,
    pending_to_retry,
    schedule,
    score,
)
from tests import factories
from tests.factories import resource_list as rl

# --- builders -------------------------------------------------------------------------------------


def ctr(
    name: str,
    cpu: str | None = None,
    memory: str | None = None,
    *,
    limits: dict[str, str] | None = None,
    extra: dict[str, str] | None = None,
    sidecar: bool = False,
) -> dict[str, Any]:
    requests = {**({"cpu": cpu} if cpu else {}), **({"memory": memory} if memory else {})}
    resources: dict[str, Any] = {}
    if requests or extra:
        resources["requests"] = {**requests, **(extra or {})}
    if limits:
        resources["limits"] = limits
    out: dict[str, Any] = {"name": name, "image": "busybox", "resources": resources}
    if sidecar:
        out["restartPolicy"] = "Always"
    return out


def cs(
    name: str, allocated: dict[str, str] | None = None, actual: dict[str, str] | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name}
    if allocated is not None:
        out["allocatedResources"] = allocated
    if actual is not None:
        out["resources"] = {"requests": actual}
    return out


def mkpod(
    name: str,
    containers: list[dict[str, Any]],
    *,
    init: list[dict[str, Any]] | None = None,
    statuses: list[dict[str, Any]] | None = None,
    init_statuses: list[dict[str, Any]] | None = None,
    resize: str | None = None,
    conditions: list[dict[str, Any]] | None = None,
    overhead: dict[str, str] | None = None,
    node: str | None = None,
    phase: str | None = None,
    priority: int | None = None,
) -> Pod:
    spec: dict[str, Any] = {"containers": containers}
    if init is not None:
        spec["initContainers"] = init
    if overhead is not None:
        spec["overhead"] = overhead
    if node is not None:
        spec["nodeName"] = node
    if priority is not None:
        spec["priority"] = priority
    status: dict[str, Any] = {}
    if statuses is not None:
        status["containerStatuses"] = statuses
    if init_statuses is not None:
        status["initContainerStatuses"] = init_statuses
    if resize is not None:
        status["resize"] = resize
    if conditions is not None:
        status["conditions"] = conditions
    if phase is not None:
        status["phase"] = phase
    return Pod.from_k8s(
        {"metadata": {"name": name, "namespace": "ns"}, "spec": spec, "status": status}
    )


def simple(name: str, cpu: str, memory: str | None = None, **kwargs: Any) -> Pod:
    """A one-container pod requesting `cpu` (and `memory` when given)."""
    return mkpod(name, [ctr("app", cpu, memory)], **kwargs)


def mknode(
    name: str,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: str | None = "110",
    *,
    extra: dict[str, str] | None = None,
    unschedulable: bool = False,
    taints: list[dict[str, str]] | None = None,
) -> Node:
    allocatable = {"cpu": cpu, "memory": memory, **(extra or {})}
    if pods is not None:
        allocatable["pods"] = pods
    spec: dict[str, Any] = {}
    if unschedulable:
        spec["unschedulable"] = True
    if taints is not None:
        spec["taints"] = taints
    return Node.from_k8s(
        {
            "metadata": {"name": name},
            "spec": spec,
            "status": {"capacity": allocatable, "allocatable": allocatable},
        }
    )


def cache_with(*nodes: Node, pods: tuple[Pod, ...] = ()) -> SchedulerCache:
    cache = SchedulerCache()
    for node in nodes:
        cache.upsert_node(node)
    for pod in pods:
        cache.upsert_pod(pod)
    return cache


MI = 1024 * 1024
GI = 1024 * MI

# --- KEP-1287: what a placed pod counts for -------------------------------------------------------

EFFECTIVE_CASES: list[tuple[str, Pod, ResourceList]] = [
    (
        "no-resize-not-yet-admitted-uses-spec",
        mkpod("p", [ctr("app", "1", "1Gi")]),
        rl(cpu="1", memory="1Gi"),
    ),
    (
        "no-resize-allocated-equals-spec",
        mkpod(
            "p",
            [ctr("app", "1", "1Gi")],
            statuses=[cs("app", {"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"})],
        ),
        rl(cpu="1", memory="1Gi"),
    ),
    (
        "proposed-upsize-counts-desired-spec",
        mkpod(
            "p",
            [ctr("app", "3", "1Gi")],
            statuses=[cs("app", {"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"})],
            resize="Proposed",
        ),
        rl(cpu="3", memory="1Gi"),
    ),
    (
        "proposed-downsize-keeps-allocated",
        mkpod(
            "p",
            [ctr("app", "500m", "1Gi")],
            statuses=[cs("app", {"cpu": "2", "memory": "1Gi"}, {"cpu": "2", "memory": "1Gi"})],
            resize="Proposed",
        ),
        rl(cpu="2", memory="1Gi"),
    ),
    (
        "in-progress-upsize-allocated-ahead-of-actual",
        mkpod(
            "p",
            [ctr("app", "3", "1Gi")],
            statuses=[cs("app", {"cpu": "3", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"})],
            resize="InProgress",
        ),
        rl(cpu="3", memory="1Gi"),
    ),
    (
        "in-progress-downsize-counts-actual-until-applied",
        mkpod(
            "p",
            [ctr("app", "500m", "1Gi")],
            statuses=[cs("app", {"cpu": "500m", "memory": "1Gi"}, {"cpu": "2", "memory": "1Gi"})],
            resize="InProgress",
        ),
        rl(cpu="2", memory="1Gi"),
    ),
    (
        "deferred-upsize-assumed-accepted",
        mkpod(
            "p",
            [ctr("app", "3", "2Gi")],
            statuses=[cs("app", {"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"})],
            resize="Deferred",
        ),
        rl(cpu="3", memory="2Gi"),
    ),
    (
        "infeasible-counts-allocated-only",
        mkpod(
            "p",
            [ctr("app", "64", "1Gi")],
            statuses=[cs("app", {"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"})],
            resize="Infeasible",
        ),
        rl(cpu="1", memory="1Gi"),
    ),
    (
        "infeasible-from-pod-resize-pending-condition",
        mkpod(
            "p",
            [ctr("app", "64", "1Gi")],
            statuses=[cs("app", {"cpu": "1", "memory": "1Gi"})],
            conditions=[{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}],
        ),
        rl(cpu="1", memory="1Gi"),
    ),
    (
        "infeasible-keeps-actual-above-allocated",
        mkpod(
            "p",
            [ctr("app", "64", "1Gi")],
            statuses=[cs("app", {"cpu": "1", "memory": "1Gi"}, {"cpu": "2", "memory": "1Gi"})],
            resize="Infeasible",
        ),
        rl(cpu="2", memory="1Gi"),
    ),
    (
        "deferred-condition-is-not-infeasible",
        mkpod(
            "p",
            [ctr("app", "3", "1Gi")],
            statuses=[cs("app", {"cpu": "1", "memory": "1Gi"})],
            conditions=[{"type": "PodResizePending", "status": "True", "reason": "Deferred"}],
        ),
        rl(cpu="3", memory="1Gi"),
    ),
    (
        "allocated-above-spec-without-status",
        mkpod("p", [ctr("app", "1", "1Gi")], statuses=[cs("app", {"cpu": "2", "memory": "2Gi"})]),
        rl(cpu="2", memory="2Gi"),
    ),
    (
        "allocated-below-spec-without-status",
        mkpod("p", [ctr("app", "2", "2Gi")], statuses=[cs("app", {"cpu": "1", "memory": "1Gi"})]),
        rl(cpu="2", memory="2Gi"),
    ),
    (
        "max-is-per-resource-cpu-up-memory-down",
        mkpod(
            "p",
            [ctr("app", "2", "512Mi")],
            statuses=[cs("app", {"cpu": "1", "memory": "1Gi"})],
            resize="Proposed",
        ),
        rl(cpu="2", memory="1Gi"),
    ),
    (
        "max-is-per-container-then-summed",
        mkpod(
            "p",
            [ctr("a", "2", "1Gi"), ctr("b", "1", "1Gi")],
            statuses=[
                cs("a", {"cpu": "1", "memory": "1Gi"}),
                cs("b", {"cpu": "2", "memory": "1Gi"}),
            ],
            resize="Proposed",
        ),
        rl(cpu="4", memory="2Gi"),
    ),
    (
        "limits-default-missing-requests",
        mkpod("p", [ctr("app", limits={"cpu": "1", "memory": "1Gi"})]),
        rl(cpu="1", memory="1Gi"),
    ),
    # Sidecars (KEP-753), init containers and overhead, as Kubernetes aggregates them.
    (
        "init-container-peak-above-containers",
        mkpod("p", [ctr("app", "1", "1Gi")], init=[ctr("setup", "2", "512Mi")]),
        rl(cpu="2", memory="1Gi"),
    ),
    (
        "sidecar-runs-next-to-containers",
        mkpod("p", [ctr("app", "1", "1Gi")], init=[ctr("proxy", "500m", "256Mi", sidecar=True)]),
        rl(cpu="1500m", memory="1280Mi"),
    ),
    (
        "init-after-sidecar-runs-alongside-it",
        mkpod(
            "p",
            [ctr("app", "1", "1Gi")],
            init=[ctr("proxy", "500m", "256Mi", sidecar=True), ctr("migrate", "2", "256Mi")],
        ),
        rl(cpu="2500m", memory="1280Mi"),
    ),
    (
        "sidecar-pending-resize-counts-max",
        mkpod(
            "p",
            [ctr("app", "1", "1Gi")],
            init=[ctr("proxy", "1", "256Mi", sidecar=True)],
            statuses=[cs("app", {"cpu": "1", "memory": "1Gi"})],
            init_statuses=[cs("proxy", {"cpu": "500m", "memory": "512Mi"})],
            resize="InProgress",
        ),
        rl(cpu="2", memory="1536Mi"),
    ),
    (
        "classic-init-container-counts-its-spec",
        mkpod(
            "p",
            [ctr("app", "1", "1Gi")],
            init=[ctr("setup", "2", "128Mi")],
            init_statuses=[cs("setup", {"cpu": "3", "memory": "128Mi"})],
        ),
        rl(cpu="2", memory="1Gi"),
    ),
    (
        "overhead-added-on-top",
        mkpod("p", [ctr("app", "1", "1Gi")], overhead={"cpu": "250m", "memory": "120Mi"}),
        rl(cpu="1250m", memory="1144Mi"),
    ),
    (
        "overhead-added-after-the-resize-rule",
        mkpod(
            "p",
            [ctr("app", "2", "1Gi")],
            statuses=[cs("app", {"cpu": "1", "memory": "1Gi"})],
            resize="Proposed",
            overhead={"cpu": "100m"},
        ),
        rl(cpu="2100m", memory="1Gi"),
    ),
]


@pytest.mark.parametrize(
    ("pod", "expected"),
    [case[1:] for case in EFFECTIVE_CASES],
    ids=[case[0] for case in EFFECTIVE_CASES],
)
def test_effective_requests(pod: Pod, expected: ResourceList) -> None:
    assert effective_requests(pod) == expected


DEMAND_CASES: list[tuple[str, Pod, PodDemand]] = [
    (
        "cpu-in-milli-memory-in-bytes",
        mkpod("p", [ctr("app", "1500m", "1Gi")]),
        PodDemand(1500, GI, (), 1500, GI),
    ),
    (
        "best-effort-scores-as-100m-200Mi",
        mkpod("p", [ctr("app")]),
        PodDemand(0, 0, (), 100, 200 * MI),
    ),
    (
        "defaults-per-container-missing-key",
        mkpod("p", [ctr("a", "1"), ctr("b", memory="1Gi")]),
        PodDemand(1000, GI, (), 1100, GI + 200 * MI),
    ),
    (
        "extended-resources-kept-zero-dropped",
        mkpod("p", [ctr("app", "1", extra={"example.com/gpu": "2", "example.com/fpga": "0"})]),
        PodDemand(1000, 0, (("example.com/gpu", 2),), 1000, 200 * MI),
    ),
    (
        "fractional-milli-cpu-rounds-up",
        mkpod("p", [ctr("app", "100.5m", "1")]),
        PodDemand(101, 1, (), 101, 1),
    ),
]


@pytest.mark.parametrize(
    ("pod", "expected"),
    [case[1:] for case in DEMAND_CASES],
    ids=[case[0] for case in DEMAND_CASES],
)
def test_pod_demand(pod: Pod, expected: PodDemand) -> None:
    assert pod_demand(pod) == expected


def test_scoring_requests_are_the_defaulted_pods_whichever_way_they_are_found() -> None:
    """A granted pod whose containers all set cpu and memory (and with no pod-level requests)
    skips building the defaulted copy: its scoring requests are the same either way."""
    folded = factories.fold(*(e.payload for e in factories.every_type_stream()))
    no_memory = mkpod("no-memory", [ctr("app", "500m")], statuses=[cs("app", {"cpu": "1"})])
    sidecar_without = mkpod(
        "sidecar-without",
        [ctr("app", "1", "1Gi")],
        init=[ctr("log", sidecar=True)],
        statuses=[cs("app", {"cpu": "2", "memory": "1Gi"})],
    )
    pods = [case[1] for case in DEMAND_CASES] + list(folded.pods.values())
    pods += [no_memory, sidecar_without]
    checked = 0
    for pod in pods:
        if not _granted_anywhere(pod):
            continue
        slow = _non_zero_requests(pod, resize_aware_containers(pod))
        demand = pod_demand(pod)
        assert (demand.non_zero_cpu, demand.non_zero_memory) == (
            amount("cpu", slow.get("cpu", ZERO)),
            amount("memory", slow.get("memory", ZERO)),
        ), pod.metadata.name
        checked += 1
    assert checked > 20


# --- KEP-1287 end to end: does a 2-cpu pod still fit next to a resizing pod? ----------------------

# The node has 4 cpu; the pod already there holds 1 cpu (allocated and actual) and may be
# resizing. The newcomer asks for 2 cpu.
RESIZING = [cs("app", {"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"})]
NEIGHBOUR_CASES: list[tuple[str, Pod, bool]] = [
    ("no-resize", mkpod("old", [ctr("app", "1", "1Gi")], statuses=RESIZING, node="n"), True),
    (
        "proposed-upsize-to-3-blocks",
        mkpod("old", [ctr("app", "3", "1Gi")], statuses=RESIZING, resize="Proposed", node="n"),
        False,
    ),
    (
        "in-progress-upsize-to-3-blocks",
        mkpod("old", [ctr("app", "3", "1Gi")], statuses=RESIZING, resize="InProgress", node="n"),
        False,
    ),
    (
        "deferred-upsize-to-3-blocks",
        mkpod("old", [ctr("app", "3", "1Gi")], statuses=RESIZING, resize="Deferred", node="n"),
        False,
    ),
    (
        "infeasible-upsize-to-3-leaves-room",
        mkpod("old", [ctr("app", "3", "1Gi")], statuses=RESIZING, resize="Infeasible", node="n"),
        True,
    ),
    (
        "allocated-3-above-spec-1-blocks",
        mkpod(
            "old",
            [ctr("app", "1", "1Gi")],
            statuses=[cs("app", {"cpu": "3", "memory": "1Gi"})],
            resize="Proposed",
            node="n",
        ),
        False,
    ),
    (
        "allocated-1-below-spec-2-fits-exactly",
        mkpod(
            "old",
            [ctr("app", "2", "1Gi")],
            statuses=[cs("app", {"cpu": "1", "memory": "1Gi"})],
            resize="Proposed",
            node="n",
        ),
        True,
    ),
    (
        "sidecar-upsize-blocks",
        mkpod(
            "old",
            [ctr("app", "1", "1Gi")],
            init=[ctr("proxy", "2", "64Mi", sidecar=True)],
            statuses=RESIZING,
            init_statuses=[cs("proxy", {"cpu": "500m", "memory": "64Mi"})],
            resize="Proposed",
            node="n",
        ),
        False,
    ),
    (
        "overhead-tips-it-over",
        mkpod(
            "old", [ctr("app", "1", "1Gi")], statuses=RESIZING, overhead={"cpu": "1001m"}, node="n"
        ),
        False,
    ),
    (
        "terminal-pod-holds-nothing",
        mkpod("old", [ctr("app", "4")], node="n", phase="Succeeded"),
        True,
    ),
]


@pytest.mark.parametrize(
    ("neighbour", "fits"),
    [case[1:] for case in NEIGHBOUR_CASES],
    ids=[case[0] for case in NEIGHBOUR_CASES],
)
def test_kep1287_neighbour_counts(neighbour: Pod, fits: bool) -> None:
    cache = cache_with(mknode("n", cpu="4", memory="8Gi"), pods=(neighbour,))
    outcome = schedule(cache, simple("new", "2", "1Gi"))
    if fits:
        assert isinstance(outcome, Bound) and outcome.node_name == "n"
    else:
        assert outcome == Unschedulable(
            "0/1 nodes are available: 1 Insufficient cpu.", {"n": ("Insufficient cpu",)}
        )


# --- filter ---------------------------------------------------------------------------------------

FILTER_CASES: list[tuple[str, Node, tuple[Pod, ...], Pod, tuple[str, ...]]] = [
    ("fits", mknode("n"), (), simple("p", "1", "1Gi"), ()),
    ("fits-exactly", mknode("n", cpu="1", memory="1Gi"), (), simple("p", "1", "1Gi"), ()),
    (
        "insufficient-cpu",
        mknode("n", cpu="1"),
        (simple("a", "500m", node="n"),),
        simple("p", "600m"),
        ("Insufficient cpu",),
    ),
    (
        "insufficient-memory",
        mknode("n", memory="1Gi"),
        (),
        simple("p", "1", "2Gi"),
        ("Insufficient memory",),
    ),
    (
        "every-insufficient-resource-reported",
        mknode("n", cpu="1", memory="1Gi", pods="1"),
        (simple("a", "1", node="n"),),
        simple("p", "1", "2Gi"),
        ("Too many pods", "Insufficient cpu", "Insufficient memory"),
    ),
    (
        "too-many-pods",
        mknode("n", pods="1"),
        (simple("a", "1", node="n"),),
        simple("p", "1"),
        ("Too many pods",),
    ),
    (
        "no-pods-allocatable-takes-no-pods",
        mknode("n", pods=None),
        (),
        simple("p", "1"),
        ("Too many pods",),
    ),
    (
        "extended-resource-missing-on-node",
        mknode("n"),
        (),
        mkpod("p", [ctr("app", "1", extra={"example.com/gpu": "1"})]),
        ("Insufficient example.com/gpu",),
    ),
    (
        "extended-resource-present",
        mknode("n", extra={"example.com/gpu": "2"}),
        (),
        mkpod("p", [ctr("app", "1", extra={"example.com/gpu": "2"})]),
        (),
    ),
    (
        "zero-request-fits-overcommitted-node",
        mknode("n", cpu="1"),
        (simple("a", "2", node="n"),),
        mkpod("p", [ctr("app")]),
        (),
    ),
    (
        "unschedulable-node-stops-at-first-filter",
        mknode("n", cpu="1", unschedulable=True),
        (),
        simple("p", "2"),
        ("node(s) were unschedulable",),
    ),
    (
        "no-schedule-taint",
        mknode("n", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]),
        (),
        simple("p", "1"),
        ("node(s) had untolerated taint {dedicated: gpu}",),
    ),
    (
        "prefer-no-schedule-taint-does-not-filter",
        mknode("n", taints=[{"key": "spot", "effect": "PreferNoSchedule"}]),
        (),
        simple("p", "1"),
        (),
    ),
    (
        "not-ready-no-execute-tolerated-by-default",
        mknode("n", taints=[{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]),
        (),
        simple("p", "1"),
        (),
    ),
]


@pytest.mark.parametrize(
    ("node", "placed", "pod", "reasons"),
    [case[1:] for case in FILTER_CASES],
    ids=[case[0] for case in FILTER_CASES],
)
def test_node_reasons(
    node: Node, placed: tuple[Pod, ...], pod: Pod, reasons: tuple[str, ...]
) -> None:
    cache = cache_with(node, pods=placed)
    info = cache.node("n")
    assert info is not None
    assert node_reasons(info, pod_demand(pod)) == reasons
    feasible, why = filter_nodes(cache, pod)
    assert (feasible, why) == (([], {"n": reasons}) if reasons else (["n"], {}))
    assert isinstance(schedule(cache, pod), Unschedulable if reasons else Bound)


# --- the FailedScheduling message -----------------------------------------------------------------

MESSAGE_CASES: list[tuple[str, dict[str, tuple[str, ...]], int, str]] = [
    (
        "all-insufficient-cpu",
        {"a": ("Insufficient cpu",), "b": ("Insufficient cpu",), "c": ("Insufficient cpu",)},
        3,
        "0/3 nodes are available: 3 Insufficient cpu.",
    ),
    (
        "sorted-as-strings-not-by-count",
        {"a": ("Insufficient cpu",), "b": ("Insufficient cpu",), "c": ("Insufficient memory",)},
        3,
        "0/3 nodes are available: 1 Insufficient memory, 2 Insufficient cpu.",
    ),
    (
        "a-node-counts-once-per-reason",
        {"a": ("Insufficient cpu", "Insufficient memory"), "b": ("Insufficient cpu",)},
        2,
        "0/2 nodes are available: 1 Insufficient memory, 2 Insufficient cpu.",
    ),
    (
        "ten-sorts-before-two",
        {
            **{f"c{i}": ("Insufficient cpu",) for i in range(10)},
            "m0": ("Insufficient memory",),
            "m1": ("Insufficient memory",),
        },
        12,
        "0/12 nodes are available: 10 Insufficient cpu, 2 Insufficient memory.",
    ),
    (
        "pods-taints-and-cordons",
        {
            "a": ("Too many pods",),
            "b": ("node(s) were unschedulable",),
            "c": ("node(s) had untolerated taint {dedicated: gpu}",),
        },
        3,
        "0/3 nodes are available: 1 Too many pods, 1 node(s) had untolerated taint "
        "{dedicated: gpu}, 1 node(s) were unschedulable.",
    ),
    ("no-nodes-at-all", {}, 0, "no nodes available to schedule pods"),
]


@pytest.mark.parametrize(
    ("reasons", "num_nodes", "message"),
    [case[1:] for case in MESSAGE_CASES],
    ids=[case[0] for case in MESSAGE_CASES],
)
def test_failed_scheduling_message(
    reasons: dict[str, tuple[str, ...]], num_nodes: int, message: str
) -> None:
    assert failed_scheduling_message(num_nodes, reasons) == message


def test_unschedulable_message_from_schedule() -> None:
    cache = cache_with(
        mknode("a", cpu="1"),
        mknode("b", cpu="1"),
        mknode("c", cpu="8", memory="1Gi"),
        mknode("d", cpu="8", unschedulable=True),
    )
    outcome = schedule(cache, simple("p", "2", "2Gi"))
    assert isinstance(outcome, Unschedulable)
    assert outcome.message == (
        "0/4 nodes are available: 1 Insufficient memory, 1 node(s) were unschedulable, "
        "2 Insufficient cpu."
    )


def test_unschedulable_carries_its_inputs() -> None:
    """The record the PodUnschedulable event carries (issue 19): the reasons counted, and the
    nodes closest to fitting (most free CPU first), with what was free and why they failed."""
    nodes = [mknode(f"n{i}", cpu="2") for i in range(7)]
    holders = tuple(simple(f"h{i}", f"{1900 - i * 100}m", node=f"n{i}") for i in range(7))
    outcome = schedule(cache_with(*nodes, pods=holders), simple("p", "1", "1Gi"))
    assert isinstance(outcome, Unschedulable) and outcome.record is not None
    record = outcome.record
    assert (record.nodes, record.requested) == (7, {"cpu": "1000m", "memory": str(GI)})
    assert record.reasons == {"Insufficient cpu": 7}
    assert [n.node for n in record.closest] == ["n6", "n5", "n4", "n3", "n2"]
    assert record.closest[0].free["cpu"] == "700m"
    assert record.closest[0].reasons == ["Insufficient cpu"]


def test_ghost_nodes_are_not_counted() -> None:
    # A pod bound to a node whose NodeRegistered has not arrived yet: its node is not offered.
    cache = cache_with(mknode("a", cpu="1"), pods=(simple("early", "1", node="ghost"),))
    outcome = schedule(cache, simple("p", "2"))
    assert isinstance(outcome, Unschedulable)
    assert outcome.message == "0/1 nodes are available: 1 Insufficient cpu."


# --- score ----------------------------------------------------------------------------------------

SCORE_CASES: list[tuple[str, Node, tuple[Pod, ...], Pod, int]] = [
    ("empty-node-small-pod", mknode("n", cpu="4", memory="8Gi"), (), simple("p", "1", "2Gi"), 75),
    (
        "average-of-cpu-and-memory",
        mknode("n", cpu="4", memory="8Gi"),
        (),
        simple("p", "2", "2Gi"),
        62,  # cpu 50, memory 75 → (50 + 75) // 2
    ),
    (
        "placed-pods-count",
        mknode("n", cpu="4", memory="8Gi"),
        (simple("a", "2", "4Gi", node="n"),),
        simple("p", "1", "2Gi"),
        25,
    ),
    (
        "integer-truncation-per-resource",
        mknode("n", cpu="3", memory="3Gi"),
        (),
        simple("p", "1", "1Gi"),
        66,  # (2000 * 100) // 3000 = 66 for both
    ),
    (
        "best-effort-counts-default-request",
        mknode("n", cpu="1", memory="1000Mi"),
        (),
        mkpod("p", [ctr("app")]),
        85,  # cpu (1000-100)*100//1000 = 90, memory (1000-200)*100//1000 = 80
    ),
    (
        "over-requested-resource-scores-zero",
        mknode("n", cpu="1", memory="8Gi"),
        (simple("a", "2", node="n"),),
        mkpod("p", [ctr("app", memory="4Gi")]),
        23,  # cpu 0 (over); memory: 4Gi + 200Mi scored for `a` → 47
    ),
    (
        "resource-the-node-lacks-is-left-out",
        mknode("n", cpu="4", memory="0"),
        (),
        simple("p", "1"),
        75,
    ),
]


@pytest.mark.parametrize(
    ("node", "placed", "pod", "expected"),
    [case[1:] for case in SCORE_CASES],
    ids=[case[0] for case in SCORE_CASES],
)
def test_least_allocated_score(
    node: Node, placed: tuple[Pod, ...], pod: Pod, expected: int
) -> None:
    cache = cache_with(node, pods=placed)
    info = cache.node("n")
    assert info is not None
    assert score(info, pod_demand(pod)) == expected


def test_best_score_wins() -> None:
    cache = cache_with(
        mknode("a"),
        mknode("b"),
        mknode("c"),
        pods=(simple("x", "2", node="a"), simple("y", "1", node="c")),
    )
    # b: cpu (4000 - 1000) * 100 // 4000 = 75, memory (8Gi - 200Mi scored) → 97: (75 + 97) // 2.
    assert schedule(cache, simple("p", "1")) == Bound("b", 86)


def test_tie_break_is_the_smallest_node_name() -> None:
    cache = cache_with(mknode("node-c"), mknode("node-a"), mknode("node-b"))
    assert schedule(cache, simple("p", "1", "1Gi")) == Bound("node-a", 81)


def test_tie_break_after_truncation() -> None:
    # 398900m and 398700m free out of 400 cpu both truncate to 99: the smaller name wins.
    cache = cache_with(
        mknode("b", cpu="400"),
        mknode("a", cpu="400"),
        pods=(simple("x", "1", node="b"), simple("y", "1200m", node="a")),
    )
    outcome = schedule(cache, simple("p", "100m"))
    assert outcome == Bound("a", 97)  # cpu 99, memory (8Gi - 2 * 200Mi scored) → 95


def test_placements_spread_and_replay_identically() -> None:
    def run() -> list[str]:
        cache = cache_with(*(mknode(f"n{i}", cpu="4", memory="8Gi") for i in range(3)))
        placed = []
        for i in range(9):
            pod = simple(f"p{i}", "1", "1Gi")
            outcome = schedule(cache, pod)
            assert isinstance(outcome, Bound)
            cache.assume(pod, outcome.node_name)
            placed.append(outcome.node_name)
        return placed

    first = run()
    assert first == ["n0", "n1", "n2"] * 3
    assert run() == first


# --- retries after capacity frees up --------------------------------------------------------------


def pending_cache(
    *nodes: Node, placed: tuple[Pod, ...], pending: tuple[Pod, ...]
) -> SchedulerCache:
    cache = cache_with(*nodes, pods=placed)
    for pod in pending:
        assert isinstance(schedule(cache, pod), Unschedulable)
        cache.mark_unschedulable(pod)
    return cache


def test_node_growth_retries_the_pending_pod_and_it_schedules() -> None:
    # KEP-3953: hotplug grows a node's allocatable; the pending pod is placed right after.
    cache = pending_cache(mknode("n", cpu="2"), placed=(), pending=(simple("big", "3"),))
    change = cache.upsert_node(mknode("n", cpu="4"))
    assert change == CapacityFreed("n", "NodeCapacityChanged")
    assert pending_to_retry(cache, change) == ["ns/big"]
    pod = cache.pending("ns/big")
    assert pod is not None
    outcome = schedule(cache, pod.pod)
    assert outcome == Bound("n", 61)  # cpu 25, memory (8Gi - 200Mi scored) → 97
    cache.assume(pod.pod, "n")
    assert cache.pending_count() == 0


def test_growth_too_small_retries_nothing() -> None:
    cache = pending_cache(mknode("n", cpu="2"), placed=(), pending=(simple("big", "8"),))
    change = cache.upsert_node(mknode("n", cpu="4"))
    assert change is not None
    assert pending_to_retry(cache, change) == []


def test_node_shrink_is_no_change() -> None:
    cache = pending_cache(mknode("n", cpu="4"), placed=(), pending=(simple("big", "8"),))
    assert cache.upsert_node(mknode("n", cpu="2")) is None


def test_a_label_or_taint_change_retries_the_pending_pod() -> None:
    # kubectl label / taint: kube-scheduler's UpdateNodeLabel and UpdateNodeTaint hints.
    wants_ssd = simple("db", "1")
    wants_ssd.spec.node_selector = {"disk": "ssd"}
    cache = pending_cache(mknode("n"), placed=(), pending=(wants_ssd,))
    labelled = mknode("n")
    labelled.metadata.labels = {"disk": "ssd"}
    change = cache.upsert_node(labelled)
    assert change == CapacityFreed("n", "NodeLabelOrTaintChanged")
    assert pending_to_retry(cache, change) == ["ns/db"]
    placed = schedule(cache, wants_ssd)
    assert isinstance(placed, Bound) and placed.node_name == "n"
    # A new taint: blocked for pods without tolerations, maybe not for a pending one with.
    tainted = mknode("n", taints=[{"key": "k", "effect": "NoExecute"}])
    tainted.metadata.labels = {"disk": "ssd"}
    assert cache.upsert_node(tainted) == CapacityFreed("n", "NodeLabelOrTaintChanged")
    assert cache.upsert_node(tainted) is None  # the same node again


def test_a_cordon_is_no_change_and_its_end_frees_the_node() -> None:
    cache = cache_with(mknode("n"))
    assert cache.upsert_node(mknode("n", unschedulable=True)) is None
    uncordoned = mknode("n")
    assert cache.upsert_node(uncordoned) == CapacityFreed("n", "NodeCapacityChanged")


def test_same_node_again_is_no_change() -> None:
    cache = cache_with(mknode("n"))
    assert cache.upsert_node(mknode("n")) is None


def test_pod_deletion_frees_room() -> None:
    cache = pending_cache(
        mknode("n", cpu="4"),
        placed=(simple("old", "3", node="n"),),
        pending=(simple("fits", "2"), simple("too-big", "5")),
    )
    change = cache.remove_pod("ns/old")
    assert change == CapacityFreed("n", "PodDeleted")
    assert pending_to_retry(cache, change) == ["ns/fits"]


def test_pod_turning_terminal_frees_room() -> None:
    cache = pending_cache(
        mknode("n", cpu="4"), placed=(simple("job", "3", node="n"),), pending=(simple("p", "2"),)
    )
    change = cache.upsert_pod(simple("job", "3", node="n", phase="Succeeded"))
    assert change == CapacityFreed("n", "PodDeleted")
    assert pending_to_retry(cache, change) == ["ns/p"]


def test_actuated_shrink_frees_room() -> None:
    # The resize shrinks 3 → 1 cpu: nothing frees while the node still holds 3 (Proposed,
    # InProgress with actual 3); room appears once actual = allocated = 1.
    statuses_before = [cs("app", {"cpu": "3"}, {"cpu": "3"})]
    cache = pending_cache(
        mknode("n", cpu="4"),
        placed=(mkpod("old", [ctr("app", "3")], statuses=statuses_before, node="n"),),
        pending=(simple("p", "2"),),
    )
    proposed = mkpod(
        "old", [ctr("app", "1")], statuses=statuses_before, resize="Proposed", node="n"
    )
    assert cache.upsert_pod(proposed) is None
    in_progress = mkpod(
        "old",
        [ctr("app", "1")],
        statuses=[cs("app", {"cpu": "1"}, {"cpu": "3"})],
        resize="InProgress",
        node="n",
    )
    assert cache.upsert_pod(in_progress) is None
    done = mkpod(
        "old", [ctr("app", "1")], statuses=[cs("app", {"cpu": "1"}, {"cpu": "1"})], node="n"
    )
    change = cache.upsert_pod(done)
    assert change == CapacityFreed("n", "PodScaledDown")
    assert pending_to_retry(cache, change) == ["ns/p"]


def test_resize_turning_infeasible_frees_room() -> None:
    granted = [cs("app", {"cpu": "1"}, {"cpu": "1"})]
    cache = pending_cache(
        mknode("n", cpu="4"),
        placed=(mkpod("old", [ctr("app", "3")], statuses=granted, resize="Proposed", node="n"),),
        pending=(simple("p", "2"),),
    )
    change = cache.upsert_pod(
        mkpod("old", [ctr("app", "3")], statuses=granted, resize="Infeasible", node="n")
    )
    assert change == CapacityFreed("n", "PodScaledDown")
    assert pending_to_retry(cache, change) == ["ns/p"]


def test_upsize_is_no_change() -> None:
    cache = cache_with(mknode("n"), pods=(simple("old", "1", node="n"),))
    assert cache.upsert_pod(simple("old", "2", node="n")) is None


def test_retry_fills_the_freed_room_by_priority_then_arrival() -> None:
    cache = pending_cache(
        mknode("n", cpu="4"),
        placed=(simple("old", "4", node="n"),),
        pending=(
            simple("first", "2"),
            simple("second", "2"),
            simple("urgent", "2", priority=1000),
            simple("third", "2"),
        ),
    )
    change = cache.remove_pod("ns/old")
    assert change is not None
    # Room for two: the high-priority pod, then the earliest arrival; the rest could not fit.
    assert pending_to_retry(cache, change) == ["ns/urgent", "ns/first"]


def test_new_node_retries_what_it_can_host() -> None:
    cache = pending_cache(
        mknode("a", cpu="1"), placed=(), pending=(simple("p", "2"), simple("q", "9"))
    )
    change = cache.upsert_node(mknode("b", cpu="4"))
    assert change == CapacityFreed("b", "NodeAdded")
    assert pending_to_retry(cache, change) == ["ns/p"]


def test_uncordon_retries() -> None:
    cache = pending_cache(mknode("n", unschedulable=True), placed=(), pending=(simple("p", "1"),))
    change = cache.upsert_node(mknode("n"))
    assert change == CapacityFreed("n", "NodeCapacityChanged")
    assert pending_to_retry(cache, change) == ["ns/p"]


def test_pending_pod_that_shrinks_is_retried() -> None:
    cache = pending_cache(mknode("n", cpu="2"), placed=(), pending=(simple("p", "4"),))
    change = cache.upsert_pod(simple("p", "1"))
    assert change == PendingPodShrunk("ns/p")
    assert pending_to_retry(cache, change) == ["ns/p"]
    assert cache.upsert_pod(simple("p", "3")) is None


def test_freed_room_on_a_ghost_or_cordoned_node_retries_nothing() -> None:
    cache = pending_cache(
        mknode("n", cpu="1"), placed=(simple("g", "1", node="ghost"),), pending=(simple("p", "2"),)
    )
    change = cache.remove_pod("ns/g")
    assert change is None  # the ghost held only that pod and is gone
    cordoned = pending_cache(
        mknode("c", cpu="4", unschedulable=True),
        placed=(simple("x", "4", node="c"),),
        pending=(simple("p", "1"),),
    )
    freed = cordoned.remove_pod("ns/x")
    assert freed is not None
    assert pending_to_retry(cordoned, freed) == []


def test_binding_or_deleting_a_pending_pod_forgets_it() -> None:
    cache = pending_cache(
        mknode("n", cpu="1"), placed=(), pending=(simple("a", "2"), simple("b", "2"))
    )
    cache.upsert_node(mknode("n", cpu="8"))
    cache.upsert_pod(simple("a", "2", node="n"))
    cache.remove_pod("ns/b")
    assert cache.pending_count() == 0
    assert cache.pending_up_to_cpu(10_000) == []


# --- the cache itself -----------------------------------------------------------------------------


def test_pod_before_its_node_counts_once_the_node_registers() -> None:
    cache = cache_with(pods=(simple("early", "3", node="late"),))
    assert cache.nodes() == []
    cache.upsert_node(mknode("late", cpu="4"))
    info = cache.node("late")
    assert info is not None and info.requested() == {"cpu": 3000} and info.pod_count == 1


def test_deleted_node_keeps_counting_bound_pods_until_they_go() -> None:
    cache = cache_with(mknode("n"), pods=(simple("a", "1", node="n"),))
    cache.remove_node("n")
    assert cache.nodes() == []
    info = cache.node("n")
    assert info is not None and info.pod_count == 1
    cache.remove_pod("ns/a")
    assert cache.node("n") is None


def test_assume_then_bound_event_is_a_no_op() -> None:
    cache = cache_with(mknode("n"))
    pod = simple("p", "1", "1Gi")
    cache.assume(pod, "n")
    assert cache.upsert_pod(simple("p", "1", "1Gi", node="n")) is None
    info = cache.node("n")
    assert info is not None and info.requested() == {"cpu": 1000, "memory": GI}
    assert info.pod_count == 1


# --- property: incremental sums equal a from-scratch recomputation --------------------------------

NODE_NAMES = ["n0", "n1", "n2"]
POD_NAMES = [f"p{i}" for i in range(6)]
CPU = st.sampled_from(["0", "100m", "250m", "1", "1500m", "3"])
MEM = st.sampled_from(["0", "64Mi", "1Gi", "3Gi"])


@st.composite
def pods(draw: st.DrawFn) -> Pod:
    name = draw(st.sampled_from(POD_NAMES))
    containers = [ctr(f"c{i}", draw(CPU), draw(MEM)) for i in range(draw(st.integers(1, 2)))]
    init = None
    init_statuses = None
    if draw(st.booleans()):
        init = [ctr("side", draw(CPU), draw(MEM), sidecar=True), ctr("setup", draw(CPU))]
        init_statuses = [cs("side", {"cpu": draw(CPU)})] if draw(st.booleans()) else None
    statuses = None
    if draw(st.booleans()):
        statuses = [
            cs(c["name"], {"cpu": draw(CPU), "memory": draw(MEM)}, {"cpu": draw(CPU)})
            for c in containers
        ]
    return mkpod(
        name,
        containers,
        init=init,
        statuses=statuses,
        init_statuses=init_statuses,
        resize=draw(st.sampled_from([None, "Proposed", "InProgress", "Deferred", "Infeasible"])),
        overhead=draw(st.sampled_from([None, {"cpu": "100m", "memory": "64Mi"}])),
        node=draw(st.sampled_from([None, *NODE_NAMES])),
        phase=draw(st.sampled_from(["Running", "Pending", "Succeeded"])),
    )


@settings(max_examples=200, deadline=None)
@given(pods())
def test_the_projected_demand_reads_back_as_priced(pod: Pod) -> None:
    """What the projection stores beside each pod (`pods.demand`, what a starting scheduler
    counts) is what pricing the pod gives, Infeasible flag included."""
    assert priced_row(demand_json(pod)) == (pod_demand(pod), is_resize_infeasible(pod))


@pytest.mark.parametrize("case", DEMAND_CASES, ids=[case[0] for case in DEMAND_CASES])
def test_the_projected_demand_keeps_extended_resources(case: tuple[str, Pod, PodDemand]) -> None:
    _, pod, expected = case
    assert priced_row(demand_json(pod))[0] == expected


OPS = st.one_of(
    st.tuples(st.just("upsert"), pods()),
    st.tuples(st.just("remove"), st.sampled_from(POD_NAMES)),
    st.tuples(st.just("node"), st.sampled_from(NODE_NAMES), st.sampled_from(["1", "4", "16"])),
    st.tuples(st.just("remove-node"), st.sampled_from(NODE_NAMES)),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(OPS, max_size=40))
def test_incremental_sums_equal_recomputation(ops: list[tuple[Any, ...]]) -> None:
    cache = SchedulerCache()
    model: dict[str, Pod] = {}  # pods the cache must count, by key
    registered: set[str] = set()
    for op in ops:
        if op[0] == "upsert":
            pod: Pod = op[1]
            key = f"ns/{pod.metadata.name}"
            cache.upsert_pod(pod)
            if pod.spec.node_name is not None and pod.status.phase != "Succeeded":
                model[key] = pod
            elif pod.status.phase == "Succeeded":
                model.pop(key, None)
        elif op[0] == "remove":
            cache.remove_pod(f"ns/{op[1]}")
            model.pop(f"ns/{op[1]}", None)
        elif op[0] == "node":
            cache.upsert_node(mknode(op[1], cpu=op[2]))
            registered.add(op[1])
        else:
            cache.remove_node(op[1])
            registered.discard(op[1])

        expected: dict[str, tuple[dict[str, int], int, int, int]] = {}
        for pod in model.values():
            node = pod.spec.node_name
            assert node is not None
            demand = pod_demand(pod)
            requested, count, nz_cpu, nz_mem = expected.get(node, ({}, 0, 0, 0))
            for name, value in demand.requests().items():
                requested[name] = requested.get(name, 0) + value
            expected[node] = (
                {k: v for k, v in requested.items() if v},
                count + 1,
                nz_cpu + demand.non_zero_cpu,
                nz_mem + demand.non_zero_memory,
            )
        for name in NODE_NAMES:
            info = cache.node(name)
            if name not in expected:
                # Nothing counted: present only if registered; ghosts vanish with their last pod.
                assert (info is not None and info.present) == (name in registered)
                if info is not None:
                    assert (info.requested(), info.pod_count) == ({}, 0)
                    assert (info.non_zero_cpu, info.non_zero_memory) == (0, 0)
                continue
            assert info is not None
            got = (info.requested(), info.pod_count, info.non_zero_cpu, info.non_zero_memory)
            assert got == expected[name]
            assert info.present == (name in registered)
            allocatable = info.allocatable()
            assert (info.free_cpu, info.free_memory, info.free_pods) == (
                allocatable["cpu"] - info.requested_cpu,
                allocatable["memory"] - info.requested_memory,
                allocatable["pods"] - info.pod_count,
            )
            assert (info.non_zero_free_cpu, info.non_zero_free_memory) == (
                allocatable["cpu"] - info.non_zero_cpu,
                allocatable["memory"] - info.non_zero_memory,
            )
        assert [n.name for n in cache.nodes()] == sorted(registered)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["1", "2", "4"]), st.sampled_from(["1Gi", "4Gi"])),
        min_size=1,
        max_size=5,
    ),
    st.lists(st.tuples(st.integers(0, 4), CPU, MEM), max_size=12),
    st.tuples(CPU, MEM),
)
def test_schedule_matches_the_reference_rules(
    shapes: list[tuple[str, str]],
    placed: list[tuple[int, str, str]],
    incoming: tuple[str, str],
) -> None:
    """`schedule`'s inlined loop picks what node_reasons() + score() + smallest name pick."""
    nodes = [mknode(f"n{i}", cpu, memory, pods="3") for i, (cpu, memory) in enumerate(shapes)]
    cache = cache_with(*nodes)
    for i, (index, cpu, memory) in enumerate(placed):
        cache.upsert_pod(simple(f"x{i}", cpu, memory, node=f"n{index % len(nodes)}"))
    pod = simple("p", *incoming)
    demand = pod_demand(pod)
    feasible = [n for n in cache.nodes() if not node_reasons(n, demand)]
    outcome = schedule(cache, pod)
    if not feasible:
        assert isinstance(outcome, Unschedulable)
        return
    best = min(feasible, key=lambda n: (-score(n, demand), n.name))
    assert outcome == Bound(best.name, score(best, demand))
