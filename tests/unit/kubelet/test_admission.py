"""Admission of new pods and of resizes (KEP-1287 "Kubelet and API Server Interaction").

Tables in the style of Kubernetes' validation tests: every row is named and states its input and
the exact decision, messages included.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schemas.k8s import Pod, ResourceRequirements
from schemas.keys import pod_key
from schemas.podview import PodResources
from schemas.quantity import Quantity
from schemas.resources import pod_requests
from services.kubelet.admission import (
    POD_LEVEL,
    Accept,
    Admit,
    CPUManagerPolicy,
    Decision,
    Deferred,
    Infeasible,
    MemoryManagerPolicy,
    NodeAllocation,
    Reject,
    UnknownPodError,
    Waiting,
    admit_pod,
    allocated_resources,
    decide_resize,
    retry_order,
    with_resources,
)


def res(
    requests: dict[str, str] | None = None, limits: dict[str, str] | None = None
) -> ResourceRequirements:
    return ResourceRequirements.model_validate(
        {k: v for k, v in {"requests": requests, "limits": limits}.items() if v is not None}
    )


def g(cpu: str, memory: str) -> dict[str, Any]:
    """Guaranteed resources: requests == limits."""
    values = {"cpu": cpu, "memory": memory}
    return {"requests": values, "limits": values}


def ctr(
    name: str, resources: dict[str, Any] | None = None, *, sidecar: bool = False
) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "image": "busybox", "resources": resources or {}}
    if sidecar:
        out["restartPolicy"] = "Always"
    return out


def mkpod(
    name: str,
    *containers: dict[str, Any],
    init: list[dict[str, Any]] | None = None,
    overhead: dict[str, str] | None = None,
) -> Pod:
    spec: dict[str, Any] = {"containers": list(containers)}
    if init:
        spec["initContainers"] = init
    if overhead:
        spec["overhead"] = overhead
    return Pod.model_validate(
        {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"}, "spec": spec}
    )


def burstable(name: str, cpu: str, memory: str = "128Mi") -> Pod:
    return mkpod(name, ctr("app", {"requests": {"cpu": cpu, "memory": memory}}))


def node(
    cpu: str = "8",
    memory: str = "32Gi",
    pods: str | None = "110",
    *admitted: Pod,
    cpu_policy: CPUManagerPolicy = "none",
    memory_policy: MemoryManagerPolicy = "None",
    extra: dict[str, str] | None = None,
) -> NodeAllocation:
    allocatable = {"cpu": Quantity(cpu), "memory": Quantity(memory)}
    if pods is not None:
        allocatable["pods"] = Quantity(pods)
    for name, value in (extra or {}).items():
        allocatable[name] = Quantity(value)
    allocation = NodeAllocation(
        name="node-1",
        allocatable=allocatable,
        cpu_manager_policy=cpu_policy,
        memory_manager_policy=memory_policy,
    )
    for p in admitted:
        allocation = allocation.with_pod(p)
    return allocation


# --- new pods ----------------------------------------------------------------------------------

ADMIT_CASES: list[tuple[str, NodeAllocation, Pod, Admit | Reject | None]] = [
    ("fits", node("8", "32Gi", "110", burstable("a", "6")), burstable("new", "2"), None),
    (
        "cpu short",
        node("8", "32Gi", "110", burstable("a", "7")),
        burstable("new", "2"),
        Reject(
            "OutOfcpu",
            "Node didn't have enough resource: cpu, requested: 2000, used: 7000, capacity: 8000",
        ),
    ),
    (
        "memory short",
        node("8", "1Gi", "110", burstable("a", "1", "768Mi")),
        burstable("new", "1", "512Mi"),
        Reject(
            "OutOfmemory",
            "Node didn't have enough resource: memory, requested: 536870912, "
            "used: 805306368, capacity: 1073741824",
        ),
    ),
    (
        "cpu reported before memory",
        node("1", "1Gi", "110", burstable("a", "1", "1Gi")),
        burstable("new", "1", "1Gi"),
        Reject(
            "OutOfcpu",
            "Node didn't have enough resource: cpu, requested: 1000, used: 1000, capacity: 1000",
        ),
    ),
    (
        "pod count",
        node("8", "32Gi", "1", burstable("a", "1")),
        burstable("new", "1"),
        Reject(
            "OutOfpods",
            "Node didn't have enough resource: pods, requested: 1, used: 1, capacity: 1",
        ),
    ),
    (
        "best effort fits a full node",
        node("1", "1Gi", "110", burstable("a", "1", "1Gi")),
        mkpod("new", ctr("app")),
        None,
    ),
    (
        "overhead counts",
        node("2", "32Gi", "110", burstable("a", "1")),
        mkpod("new", ctr("app", g("900m", "64Mi")), overhead={"cpu": "250m"}),
        Reject(
            "OutOfcpu",
            "Node didn't have enough resource: cpu, requested: 1150, used: 1000, capacity: 2000",
        ),
    ),
    (
        "sidecars run next to the containers",
        node("2", "32Gi", "110"),
        mkpod(
            "new",
            ctr("app", {"requests": {"cpu": "1500m"}}),
            init=[ctr("proxy", {"requests": {"cpu": "600m"}}, sidecar=True)],
        ),
        Reject(
            "OutOfcpu",
            "Node didn't have enough resource: cpu, requested: 2100, used: 0, capacity: 2000",
        ),
    ),
    (
        "an init container runs alone: its peak, not the sum",
        node("2", "32Gi", "110"),
        mkpod(
            "new",
            ctr("app", {"requests": {"cpu": "1500m"}}),
            init=[ctr("setup", {"requests": {"cpu": "2"}})],
        ),
        None,
    ),
    (
        "extended resource the node does not advertise is skipped",
        node("8", "32Gi", "110"),
        mkpod("new", ctr("app", {"requests": {"cpu": "1", "example.com/fpga": "1"}})),
        None,
    ),
    (
        "extended resource the node advertises is checked",
        node("8", "32Gi", "110", extra={"example.com/fpga": "1"}),
        mkpod("new", ctr("app", {"requests": {"cpu": "1", "example.com/fpga": "2"}})),
        Reject(
            "OutOfexample.com/fpga",
            "Node didn't have enough resource: example.com/fpga, requested: 2, used: 0, "
            "capacity: 1",
        ),
    ),
]


@pytest.mark.parametrize(
    ("the_node", "the_pod", "expected"),
    [pytest.param(n, p, e, id=name) for name, n, p, e in ADMIT_CASES],
)
def test_admit_pod(the_node: NodeAllocation, the_pod: Pod, expected: Admit | Reject | None) -> None:
    got = admit_pod(the_node, the_pod)
    assert got == (expected if expected is not None else Admit(the_pod))


def test_readmission_uses_the_allocated_checkpoint() -> None:
    # Kubelet Restart Tolerance: the spec already asks for 7 CPUs (a pending resize), but the
    # pod is re-admitted with the 1 CPU it was allocated, so it still fits.
    allocated = burstable("a", "1")
    checkpoint = node("8", "32Gi", "110", allocated, burstable("b", "6"))
    got = admit_pod(checkpoint, burstable("a", "7"))
    assert isinstance(got, Admit)
    assert allocated_resources(got.pod) == allocated_resources(allocated)


# --- resizes -----------------------------------------------------------------------------------

A = mkpod("a", ctr("app", g("1", "1Gi")))
B = burstable("b", "800m")


def resize_of(pod: Pod, **per_container: dict[str, Any]) -> dict[str, ResourceRequirements]:
    return {name: ResourceRequirements.model_validate(r) for name, r in per_container.items()}


RESIZE_CASES: list[tuple[str, NodeAllocation, Pod, dict[str, Any], Decision | type]] = [
    ("increase fits", node("4", "8Gi", "110", A, B), A, {"app": g("2", "1Gi")}, Accept),
    ("decrease always fits", node("4", "8Gi", "110", A, B), A, {"app": g("500m", "512Mi")}, Accept),
    (
        "increase fits in theory, not now",
        node("2500m", "8Gi", "110", A, B),
        A,
        {"app": g("2", "1Gi")},
        Deferred(
            "Node didn't have enough resource: cpu, requested: 2000, used: 800, capacity: 2500"
        ),
    ),
    (
        "larger than the node",
        node("4", "8Gi", "110", A, B),
        A,
        {"app": g("100", "1Gi")},
        Infeasible("Node didn't have enough capacity: cpu, requested: 100000, capacity: 4000"),
    ),
    (
        "memory is reported first when both are too large",
        node("4", "8Gi", "110", A, B),
        A,
        {"app": g("100", "100Gi")},
        Infeasible(
            "Node didn't have enough capacity: memory, requested: 107374182400, "
            "capacity: 8589934592"
        ),
    ),
]


@pytest.mark.parametrize(
    ("the_node", "the_pod", "desired", "expected"),
    [pytest.param(n, p, d, e, id=name) for name, n, p, d, e in RESIZE_CASES],
)
def test_decide_resize(
    the_node: NodeAllocation, the_pod: Pod, desired: dict[str, Any], expected: Decision | type
) -> None:
    wanted = resize_of(the_pod, **desired)
    got = decide_resize(the_node, the_pod, wanted)
    if expected is Accept:
        # The checkpoint keeps a pod's resource fields (PodResources), and so does its Accept.
        assert got == Accept(PodResources.of(with_resources(the_pod, wanted)))
    else:
        assert got == expected


def test_desired_equal_to_allocated_is_an_unchanged_accept() -> None:
    got = decide_resize(node("4", "8Gi", "110", A), A, {})
    assert got == Accept(PodResources.of(A), changed=False)


def test_unknown_pod_raises() -> None:
    with pytest.raises(UnknownPodError):
        decide_resize(node("4", "8Gi", "110", A), B, {})


def test_resize_of_all_containers_is_atomic() -> None:
    # c1 shrinks by 1 CPU, c2 grows by 2: the net +1 CPU does not fit, so neither change is
    # taken, although c1's shrink alone would always fit.
    two = mkpod("two", ctr("c1", g("2", "1Gi")), ctr("c2", g("1", "1Gi")))
    checkpoint = node("4", "8Gi", "110", two, burstable("other", "1"))
    desired = resize_of(two, c1=g("1", "1Gi"), c2=g("3", "1Gi"))
    got = decide_resize(checkpoint, two, desired)
    assert got == Deferred(
        "Node didn't have enough resource: cpu, requested: 4000, used: 1000, capacity: 4000"
    )
    # Net zero fits.
    desired = resize_of(two, c1=g("1", "1Gi"), c2=g("2", "1Gi"))
    assert isinstance(decide_resize(checkpoint, two, desired), Accept)


def test_overhead_is_added_to_the_resize() -> None:
    # KEP-1287 Notes: "Kubelet adds Pod Overhead to the resize request".
    withoh = mkpod("oh", ctr("app", g("1", "1Gi")), overhead={"cpu": "500m"})
    checkpoint = node("3", "8Gi", "110", withoh, burstable("other", "1"))
    got = decide_resize(checkpoint, withoh, resize_of(withoh, app=g("1600m", "1Gi")))
    assert got == Deferred(
        "Node didn't have enough resource: cpu, requested: 2100, used: 1000, capacity: 3000"
    )
    assert isinstance(
        decide_resize(checkpoint, withoh, resize_of(withoh, app=g("1500m", "1Gi"))), Accept
    )


def test_sidecar_resizes_like_a_regular_container() -> None:
    sc = mkpod(
        "sc",
        ctr("app", {"requests": {"cpu": "1"}}),
        init=[ctr("proxy", {"requests": {"cpu": "500m"}}, sidecar=True)],
    )
    checkpoint = node("2", "8Gi", "110", sc)
    grown = decide_resize(checkpoint, sc, resize_of(sc, proxy={"requests": {"cpu": "1"}}))
    assert isinstance(grown, Accept)
    assert allocated_resources(grown.pod)["proxy"] == res({"cpu": "1"})
    too_much = decide_resize(checkpoint, sc, resize_of(sc, proxy={"requests": {"cpu": "1500m"}}))
    assert too_much == Infeasible(
        "Node didn't have enough capacity: cpu, requested: 2500, capacity: 2000"
    )


def test_pod_level_resources_resize_with_the_containers() -> None:
    # KEP-2837 pod-level resources: the pod-level request, not the containers' sum, is what
    # the node holds, and its resize is decided, checkpointed and taken whole.
    shared = mkpod("shared", ctr("a", {}), ctr("b", {}))
    shared.spec.resources = res({"cpu": "1", "memory": "1Gi"}, {"cpu": "2", "memory": "1Gi"})
    checkpoint = node("4", "8Gi", "110", shared, burstable("other", "1"))
    assert checkpoint.requests_of(pod_key(shared))["cpu"] == Quantity("1")
    grown = res({"cpu": "3", "memory": "1Gi"}, {"cpu": "3", "memory": "1Gi"})
    accepted = decide_resize(checkpoint, shared, {POD_LEVEL: grown})
    assert isinstance(accepted, Accept)
    assert accepted.pod.spec.resources == grown
    assert allocated_resources(accepted.pod)[POD_LEVEL] == grown
    too_much = res({"cpu": "3500m", "memory": "1Gi"}, {"cpu": "4", "memory": "1Gi"})
    assert decide_resize(checkpoint, shared, {POD_LEVEL: too_much}) == Deferred(
        "Node didn't have enough resource: cpu, requested: 3500, used: 1000, capacity: 4000"
    )
    storage = res({"cpu": "1", "memory": "1Gi", "ephemeral-storage": "1Gi"})
    assert decide_resize(checkpoint, shared, {POD_LEVEL: storage}) == Infeasible(
        "only cpu and memory can be resized, not ephemeral-storage of the pod"
    )


def test_non_restartable_init_container_cannot_be_resized() -> None:
    p = mkpod(
        "i", ctr("app", {"requests": {"cpu": "1"}}), init=[ctr("setup", {"requests": {"cpu": "1"}})]
    )
    got = decide_resize(
        node("8", "8Gi", "110", p), p, resize_of(p, setup={"requests": {"cpu": "2"}})
    )
    assert got == Infeasible("init container 'setup' is not restartable and cannot be resized")


def test_unknown_container_and_other_resources_are_infeasible() -> None:
    p = burstable("p", "1")
    checkpoint = node("8", "8Gi", "110", p)
    assert decide_resize(checkpoint, p, resize_of(p, ghost={"requests": {"cpu": "1"}})) == (
        Infeasible("container 'ghost' is not part of the pod")
    )
    storage = {"requests": {"cpu": "1", "memory": "128Mi", "ephemeral-storage": "1Gi"}}
    assert decide_resize(checkpoint, p, resize_of(p, app=storage)) == Infeasible(
        "only cpu and memory can be resized, not ephemeral-storage of 'app'"
    )


STATIC_CPU = "Resize is infeasible for Guaranteed Pods alongside CPU Manager static policy"
STATIC_MEMORY = "Resize is infeasible for Guaranteed Pods alongside Memory Manager static policy"
CPU_ONLY_2 = {"requests": {"cpu": "2"}, "limits": {"cpu": "2"}}
CPU_ONLY_3 = {"requests": {"cpu": "3"}, "limits": {"cpu": "3"}}
STATIC_CASES: list[tuple[str, dict[str, Any], dict[str, Any], str, str, Decision | type]] = [
    ("guaranteed integral, static", g("2", "1Gi"), g("3", "1Gi"), "static", "None",
     Infeasible(STATIC_CPU)),
    ("to integral, static", g("1500m", "1Gi"), g("2", "1Gi"), "static", "None",
     Infeasible(STATIC_CPU)),
    ("guaranteed integral, none policy", g("2", "1Gi"), g("3", "1Gi"), "none", "None", Accept),
    # As the 1.35 kubelet: fractional CPUs and memory-only resizes too (the KEP text spared them).
    ("guaranteed shared pool", g("500m", "1Gi"), g("700m", "1Gi"), "static", "None",
     Infeasible(STATIC_CPU)),
    ("memory only with static cpu", g("2", "1Gi"), g("2", "2Gi"), "static", "None",
     Infeasible(STATIC_CPU)),
    ("burstable (no memory limit), static", CPU_ONLY_2, CPU_ONLY_3, "static", "None", Accept),
    ("guaranteed memory, static memory manager", g("2", "1Gi"), g("2", "2Gi"), "none", "Static",
     Infeasible(STATIC_MEMORY)),
]  # fmt: skip


@pytest.mark.parametrize(
    ("current", "desired", "cpu_policy", "memory_policy", "expected"),
    [pytest.param(*row, id=name) for name, *row in STATIC_CASES],
)
def test_static_cpu_and_memory_policy(
    current: dict[str, Any],
    desired: dict[str, Any],
    cpu_policy: CPUManagerPolicy,
    memory_policy: MemoryManagerPolicy,
    expected: Decision | type,
) -> None:
    p = mkpod("s", ctr("app", current))
    checkpoint = node("8", "8Gi", "110", p, cpu_policy=cpu_policy, memory_policy=memory_policy)
    got = decide_resize(checkpoint, p, resize_of(p, app=desired))
    if expected is Accept:
        assert isinstance(got, Accept) and got.changed
    else:
        assert got == expected
    # InPlacePodVerticalScalingExclusiveCPUs on: the node's policies no longer refuse.
    opted_in = replace(checkpoint, exclusive_cpus_resize=True)
    assert isinstance(decide_resize(opted_in, p, resize_of(p, app=desired)), Accept)


@pytest.mark.parametrize(
    ("qos", "pod"),
    [
        ("Guaranteed", mkpod("q", ctr("app", g("1", "1Gi")))),
        ("Burstable", mkpod("q", ctr("app", {"requests": {"cpu": "1"}, "limits": {"cpu": "2"}}))),
    ],
)
def test_qos_classes_resize_against_allocated_sums(qos: str, pod: Pod) -> None:
    # BestEffort neighbours take nothing; the Guaranteed/Burstable pod fills the rest exactly.
    be = mkpod("be", ctr("app"))
    checkpoint = node("4", "8Gi", "110", pod, be, burstable("b", "1"))
    desired = (
        g("3", "1Gi") if qos == "Guaranteed" else {"requests": {"cpu": "3"}, "limits": {"cpu": "3"}}
    )
    assert isinstance(decide_resize(checkpoint, pod, resize_of(pod, app=desired)), Accept)
    desired = (
        g("3100m", "1Gi")
        if qos == "Guaranteed"
        else {"requests": {"cpu": "3100m"}, "limits": {"cpu": "4"}}
    )
    assert isinstance(decide_resize(checkpoint, pod, resize_of(pod, app=desired)), Deferred)


def test_kep_flow_t3_to_t12_decisions() -> None:
    # KEP-1287 Flow Control: 1 → 1.5 accepted, 2 deferred, 1.6 accepted, 100 infeasible.
    p = mkpod("flow", ctr("app", {"requests": {"cpu": "1"}}))
    checkpoint = node("2500m", "8Gi", "110", p, burstable("other", "800m"))
    steps: list[tuple[str, type]] = [
        ("1.5", Accept),
        ("2", Deferred),
        ("1.6", Accept),
        ("100", Infeasible),
    ]
    for cpu, kind in steps:
        decision = decide_resize(checkpoint, p, resize_of(p, app={"requests": {"cpu": cpu}}))
        assert isinstance(decision, kind), (cpu, decision)
        if isinstance(decision, Accept):
            checkpoint = checkpoint.with_pod(decision.pod)
    allocated = checkpoint.allocated(pod_key(p))
    assert allocated is not None
    assert allocated_resources(allocated)["app"] == res({"cpu": "1.6"})


# --- deferred resizes --------------------------------------------------------------------------


def want(pod: Pod, cpu: str, *, priority: int | None = None, guaranteed: bool = False) -> Pod:
    """`pod` as desired: `cpu` requested (and limited too when `guaranteed`)."""
    amounts = {"cpu": cpu, "memory": "128Mi"}
    resources = {"requests": amounts, **({"limits": amounts} if guaranteed else {})}
    desired = with_resources(pod, resize_of(pod, app=resources))
    desired.spec.priority = priority
    return desired


def test_retry_order_is_the_kubelets() -> None:
    """Non-increasing resizes first, then higher priority, then QoS, then waiting longest."""
    names = ["grow-old", "grow-new", "shrink", "vip", "guaranteed", "gone"]
    pods = {n: burstable(n, "1") for n in names}
    pods["guaranteed"] = mkpod("guaranteed", ctr("app", g("1", "128Mi")))
    checkpoint = node("16", "8Gi", "110", *(p for n, p in pods.items() if n != "gone"))
    waiting = [
        Waiting(want(pods["grow-old"], "2"), since=1),
        Waiting(want(pods["grow-new"], "2"), since=2),
        Waiting(want(pods["shrink"], "500m"), since=9),
        Waiting(want(pods["vip"], "2", priority=1000), since=8),
        Waiting(want(pods["guaranteed"], "2", guaranteed=True), since=7),
        Waiting(want(pods["gone"], "2"), since=0),  # no longer on the node: dropped
    ]
    assert retry_order(checkpoint, waiting) == [
        "ns/shrink",
        "ns/vip",
        "ns/guaranteed",
        "ns/grow-old",
        "ns/grow-new",
    ]


def test_retry_order_then_decisions_in_turn_never_double_book() -> None:
    """What the node agent does with the order: decide each in turn, allocating every
    acceptance before the next decision."""
    p1, p2 = burstable("p1", "1"), burstable("p2", "1")
    checkpoint = node("4", "8Gi", "110", p1, p2).with_pod(burstable("big", "1"))
    waiting = [Waiting(want(p1, "2"), since=1), Waiting(want(p2, "1500m"), since=2)]
    accepted = []
    for key in retry_order(checkpoint, waiting):
        item = next(w for w in waiting if w.key == key)
        decision = decide_resize(checkpoint, item.pod)
        if isinstance(decision, Accept):
            checkpoint = checkpoint.with_pod(decision.pod)
            accepted.append(key)
    assert accepted == ["ns/p1"]  # first come took the one free CPU; p2 stays Deferred
    assert checkpoint.used()["cpu"] == Quantity("4")


def test_node_allocation_is_immutable() -> None:
    empty = node("4", "8Gi", "110")
    one = empty.with_pod(burstable("a", "1"))
    assert empty.pods == {} and empty.used() == {}
    assert one.used() == {"cpu": Quantity("1"), "memory": Quantity("128Mi")}
    assert one.without_pod("ns/a").used() == {}
    assert one.used(excluding="ns/a") == {}
    assert one.requests_of("ns/a") == {"cpu": Quantity("1"), "memory": Quantity("128Mi")}


# --- the checkpoint's running total ------------------------------------------------------------

_SIZES = st.sampled_from(["0", "100m", "250m", "1", "1500m"])
_MEMORY = st.sampled_from(["0", "64Mi", "1G", "128Mi", "3Gi"])
_STEPS = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c", "d"]), st.booleans(), _SIZES, _MEMORY),
    max_size=30,
)


def _units(resources: dict[str, Quantity]) -> dict[str, int]:
    return {k: v.milli_value() for k, v in resources.items() if v.milli_value() != 0}


@given(steps=_STEPS)
def test_used_is_always_the_sum_of_the_other_pods(
    steps: list[tuple[str, bool, str, str]],
) -> None:
    """The total carried across with_pod / without_pod equals summing every pod afresh."""
    allocation = node("8", "32Gi", "110")
    for name, keep, cpu, memory in steps:
        key = f"ns/{name}"
        if keep:
            allocation = allocation.with_pod(burstable(name, cpu, memory))
        else:
            allocation = allocation.without_pod(key)
        for excluding in (None, "ns/a", "ns/b", "ns/zz"):
            naive: dict[str, Quantity] = {}
            for other, pod in allocation.pods.items():
                if other != excluding:
                    for resource, q in pod_requests(pod).items():
                        naive[resource] = naive.get(resource, Quantity("0")) + q
            assert _units(allocation.used(excluding=excluding)) == _units(naive)


# --- decision records (issue 19): what each Deferred / Infeasible was decided on -----------------


def test_a_deferred_resize_records_the_node_and_the_largest_holders() -> None:
    holders = [burstable(f"h{i}", f"{(i + 1) * 100}m") for i in range(7)]
    small = mkpod("small", ctr("app", g("500m", "1Gi")))
    checkpoint = node("4", "8Gi", "110", small, *holders)  # 2.8 CPU held by h0..h6
    got = decide_resize(checkpoint, small, resize_of(small, app=g("1500m", "1Gi")))
    assert isinstance(got, Deferred)
    record = got.record
    assert record is not None
    assert (record.node, record.short) == (checkpoint.name, ["cpu"])
    assert record.allocatable == {"cpu": "4", "memory": "8Gi"}
    assert record.allocated["cpu"] == "2800m"
    assert record.requested == {"cpu": "1500m", "memory": "1Gi"}
    # At most five holders, largest first, never the pod itself.
    assert [h.pod for h in record.holders] == ["ns/h6", "ns/h5", "ns/h4", "ns/h3", "ns/h2"]
    assert record.holders[0].requests == {"cpu": "700m", "memory": "128Mi"}
    assert got.explained == (
        "Node didn't have enough resource: cpu, requested: 1500, used: 2800, capacity: 4000"
        "; most held by ns/h6 (cpu 700m), ns/h5 (cpu 600m), ns/h4 (cpu 500m), ns/h3 (cpu 400m), "
        "ns/h2 (cpu 300m)"
    )


def test_an_infeasible_resize_records_the_allocatable_and_the_policy() -> None:
    checkpoint = node("4", "8Gi", "110", A, B)
    too_big = decide_resize(checkpoint, A, resize_of(A, app=g("6", "1Gi")))
    assert isinstance(too_big, Infeasible) and too_big.record is not None
    assert too_big.record.short == ["cpu"] and too_big.record.allocatable["cpu"] == "4"
    static = node("4", "8Gi", "110", A, B, cpu_policy="static")
    pinned = decide_resize(static, A, resize_of(A, app=g("2", "1Gi")))
    assert isinstance(pinned, Infeasible) and pinned.record is not None
    assert pinned.record.policy == "cpuManagerPolicy=static"
    assert pinned.record.holders == [] and pinned.explained == pinned.message
