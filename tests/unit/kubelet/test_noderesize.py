"""KEP-3953 maths: swap limits, OOM score adj, the resync plan, hot-unplug evictions.

Tables: the KEP's swap flow (6G/4G swap, 2G request: 1.33G -> 1G after 8G) exactly, its memory
flow 10G -> 15G -> 5G -> 15G, OOM score adj rows with the clamps, eviction ordering rows.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from schemas.k8s import Pod
from schemas.quantity import Quantity
from services.kubelet.cri import LinuxContainerResources
from services.kubelet.noderesize import (
    BURSTABLE_MIN_OOM_SCORE_ADJ,
    FAILED_NODE_RESIZE,
    RESOURCE_STARVATION,
    ContainerUpdate,
    eviction_message,
    evictions,
    limited_swap,
    node_resize_condition,
    oom_score_adj,
    resync_plan,
    starvation_condition,
    starved_resources,
    swap_limit,
    with_swap_and_oom,
)
from tests.factories import container_json as ctr

G = 10**9
GI = 2**30


def q(values: dict[str, str]) -> dict[str, Quantity]:
    return {k: Quantity(v) for k, v in values.items()}


def mkpod(
    name: str,
    *containers: dict[str, Any],
    init: list[dict[str, Any]] | None = None,
    priority: int | None = None,
    priority_class: str | None = None,
) -> Pod:
    spec: dict[str, Any] = {"containers": list(containers)}
    if init:
        spec["initContainers"] = init
    if priority is not None:
        spec["priority"] = priority
    if priority_class is not None:
        spec["priorityClassName"] = priority_class
    return Pod.model_validate(
        {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"}, "spec": spec}
    )


def burstable(name: str, memory: str, cpu: str = "100m", limit: str | None = None) -> Pod:
    limits = {"memory": limit} if limit else None
    return mkpod(name, ctr("app", {"cpu": cpu, "memory": memory}, limits))


def guaranteed(name: str, memory: str, cpu: str = "500m") -> Pod:
    values = {"cpu": cpu, "memory": memory}
    return mkpod(name, ctr("app", values, values))


def best_effort(name: str) -> Pod:
    return mkpod(name, ctr("app"))


# --- swap: the KEP's flow control table ---------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "request_bytes", "node_memory", "swap", "want"),
    [
        # "Flow Control for updating swap limit for containers", decimal G as the KEP writes it.
        ("T=0 6G memory, 4G swap: 1.33G", 2 * G, 6 * G, 4 * G, 1_333_333_333),
        ("T=1 hotplug to 8G: 1G", 2 * G, 8 * G, 4 * G, 1 * G),
        # The same flow in binary units: 1.33Gi rounds down, 1Gi is exact.
        ("T=0 in Gi", 2 * GI, 6 * GI, 4 * GI, 1_431_655_765),
        ("T=1 in Gi", 2 * GI, 8 * GI, 4 * GI, 1 * GI),
        ("no swap on the node", 2 * G, 8 * G, 0, 0),
        ("no memory requested", 0, 8 * G, 4 * G, 0),
        ("the whole node's memory gets all swap", 8 * G, 8 * G, 4 * G, 4 * G),
        ("rounds down to whole bytes", 1, 3, 2, 0),
        ("rounds down, not to nearest", 2, 3, 2, 1),
    ],
)
def test_swap_limit(case: str, request_bytes: int, node_memory: int, swap: int, want: int) -> None:
    assert swap_limit(request_bytes, node_memory, swap) == want, case


@pytest.mark.parametrize(
    ("request_bytes", "node_memory", "swap", "error"),
    [
        (1, 0, 4 * G, "total node memory is 0"),
        (9 * G, 8 * G, 4 * G, "is larger than total node memory"),
        (-1, 8 * G, 4 * G, "must not be negative"),
    ],
)
def test_swap_limit_errors(request_bytes: int, node_memory: int, swap: int, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        swap_limit(request_bytes, node_memory, swap)


@pytest.mark.parametrize(
    ("case", "qos", "request_bytes", "limit_bytes", "critical", "want"),
    [
        ("Burstable, no limit", "Burstable", 2 * G, 0, False, 1 * G),
        ("Burstable, limit above request", "Burstable", 2 * G, 3 * G, False, 1 * G),
        ("Burstable, request == limit: no swap", "Burstable", 2 * G, 2 * G, False, 0),
        ("Burstable asking no memory", "Burstable", 0, 0, False, 0),
        ("Guaranteed never swaps", "Guaranteed", 2 * G, 2 * G, False, 0),
        ("BestEffort never swaps", "BestEffort", 0, 0, False, 0),
        ("critical pods never swap", "Burstable", 2 * G, 0, True, 0),
    ],
)
def test_limited_swap(
    case: str, qos: Any, request_bytes: int, limit_bytes: int, critical: bool, want: int
) -> None:
    assert limited_swap(qos, request_bytes, limit_bytes, 8 * G, 4 * G, critical=critical) == want, (
        case
    )


def test_the_kep_swap_flow_through_the_resync_plan() -> None:
    pod = mkpod("container1-pod", ctr("container1", {"memory": "2G"}))
    [update] = resync_plan(
        "node-1",
        [pod],
        old_capacity=q({"cpu": "4", "memory": "6G", "swap": "4G"}),
        new_capacity=q({"cpu": "4", "memory": "8G", "swap": "4G"}),
        initial_capacity=q({"cpu": "4", "memory": "6G", "swap": "4G"}),
    )
    assert update.pod == "ns/container1-pod" and update.container == "container1"
    assert update.old_swap_limit_bytes == 1_333_333_333  # memory.swap.max: 1.33G
    assert update.swap_limit_bytes == 1_000_000_000  # memory.swap.max: 1G
    assert update.changed
    # The OOM score adj is against the initial 6G, so the resize does not move it.
    assert update.oom_score_adj == 1000 - (1000 * 2) // 6


def test_a_container_starts_with_the_kep_swap_limit_and_keeps_its_other_settings() -> None:
    # T=0 of the KEP's flow: the swap limit is there from the start, not from a first resize.
    pod = mkpod(
        "p",
        ctr("container1", {"memory": "2G"}, {"memory": "3G"}),
        init=[ctr("sidecar", {"memory": "1G"}, {"memory": "3G"}, sidecar=True)],
    )
    node = q({"cpu": "4", "memory": "6G", "swap": "4G"})
    start = LinuxContainerResources(cpu_shares=102, memory_limit_in_bytes=3 * G)
    out = with_swap_and_oom("n", pod, node, node, {"container1": start, "sidecar": start})
    assert out["container1"].unified["memory.swap.max"] == "1333333333"
    assert out["container1"].memory_swap_limit_in_bytes == 3 * G + 1_333_333_333
    assert out["container1"].oom_score_adj == 1000 - (1000 * 2) // 6
    assert out["container1"].cpu_shares == 102  # cpu and memory limit untouched
    assert out["sidecar"].unified["memory.swap.max"] == str(1 * G * 4 // 6)


def test_with_swap_and_oom_refuses_a_request_larger_than_the_node() -> None:
    pod = burstable("p", "8G")
    with pytest.raises(ValueError, match="larger than total node memory"):
        with_swap_and_oom("n", pod, q({"memory": "6G"}), None, {"app": LinuxContainerResources()})


# --- OOM score adj ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "request_bytes", "initial", "qos", "critical", "want"),
    [
        ("Guaranteed", 2 * G, 10 * G, "Guaranteed", False, -997),
        ("BestEffort", 0, 10 * G, "BestEffort", False, 1000),
        ("Burstable asking 10%", 1 * G, 10 * G, "Burstable", False, 900),
        ("Burstable asking 20%", 2 * G, 10 * G, "Burstable", False, 800),
        ("Burstable truncates like Go", 1, 3, "Burstable", False, 667),
        ("Burstable asking nothing: 1000 lowered to 999", 0, 10 * G, "Burstable", False, 999),
        ("Burstable asking all: 0 raised to 3", 10 * G, 10 * G, "Burstable", False, 3),
        ("Burstable 99.8%: 2 raised to 3", 998, 1000, "Burstable", False, 3),
        ("Burstable 99.7%: 3 kept", 997, 1000, "Burstable", False, 3),
        ("Burstable 99.6%: 4 kept", 996, 1000, "Burstable", False, 4),
        ("Burstable above initial (node grew): raised to 3", 15 * G, 10 * G, "Burstable", False, 3),
        ("node-critical Burstable scores like Guaranteed", 1 * G, 10 * G, "Burstable", True, -997),
        ("no initial capacity known", 1 * G, 0, "Burstable", False, 999),
    ],
)
def test_oom_score_adj(
    case: str, request_bytes: int, initial: int, qos: Any, critical: bool, want: int
) -> None:
    assert oom_score_adj(request_bytes, initial, qos, critical=critical) == want, case
    assert BURSTABLE_MIN_OOM_SCORE_ADJ == 3


def test_sidecar_scores_at_or_below_its_regular_containers() -> None:
    # policy.go: a sidecar's adj "will match or fall below" that of the regular container with
    # the smallest memory request.
    pod = mkpod(
        "web",
        ctr("big", {"memory": "4G"}),
        ctr("small", {"memory": "2G"}),
        init=[ctr("proxy", {"memory": "1G"}, sidecar=True), ctr("setup", {"memory": "1G"})],
    )
    cap = q({"memory": "10G"})
    plan = resync_plan("n", [pod], cap, cap, cap)
    adj = {u.container: u.oom_score_adj for u in plan}
    # The run-to-completion init container is not running; the sidecar starts first.
    assert [u.container for u in plan] == ["proxy", "big", "small"]
    assert adj == {"proxy": 800, "big": 600, "small": 800}


# --- the memory flow 10G -> 15G -> 5G -> 15G ------------------------------------------------------

# Burstable app (2G request, no limit) on a node with 4G of swap, registered with 10G.
FLOW: list[tuple[str, str, int, int]] = [
    # step, node memory, swap limit, OOM score adj (against the initial 10G: never moves)
    ("T=0 initial", "10G", 800_000_000, 800),
    ("T=1 hotplug to 15G", "15G", 533_333_333, 800),
    ("T=2 hot unplug to 5G", "5G", 1_600_000_000, 800),
    ("T=3 hotplug to 15G", "15G", 533_333_333, 800),
]


def test_memory_flow_swap_and_oom_per_step() -> None:
    pod = burstable("app", "2G")
    initial = q({"cpu": "4", "memory": "10G", "swap": "4G"})
    previous = initial
    for step, memory, want_swap, want_adj in FLOW:
        capacity = q({"cpu": "4", "memory": memory, "swap": "4G"})
        [update] = resync_plan("n", [pod], previous, capacity, initial)
        assert update.swap_limit_bytes == want_swap, step
        assert update.oom_score_adj == want_adj, step
        previous = capacity


def test_memory_flow_unplug_evicts_then_replug_keeps_everyone() -> None:
    # 10G node: requests 2G (Guaranteed) + 3G + 2G (Burstable) = 7G; BestEffort requests none.
    pods = [
        guaranteed("g", "2G"),
        burstable("b-over", "3G"),
        burstable("b-under", "2G"),
        best_effort("be"),
    ]
    usage = {
        "ns/b-over": q({"memory": "4G"}),  # 1G over its request
        "ns/b-under": q({"memory": "1G"}),  # 1G under
        "ns/be": q({"memory": "500M"}),
        "ns/g": q({"memory": "1G"}),
    }
    for memory, want in (("10G", []), ("15G", []), ("5G", ["ns/be", "ns/b-over"]), ("15G", [])):
        allocatable = q({"cpu": "4", "memory": memory, "pods": "110"})
        assert evictions(allocatable, pods, usage) == want, memory
    # After the unplug's evictions the survivors fit and the swap plan can be computed.
    small = q({"cpu": "4", "memory": "5G", "swap": "4G"})
    survivors = [p for p in pods if f"ns/{p.metadata.name}" not in ("ns/be", "ns/b-over")]
    assert starved_resources(small, survivors) == []
    plan = resync_plan("n", survivors, q({"memory": "15G", "swap": "4G"}), small, None)
    assert {u.pod: u.swap_limit_bytes for u in plan} == {"ns/b-under": 1_600_000_000, "ns/g": 0}


def test_resync_plan_refuses_a_container_larger_than_the_node() -> None:
    with pytest.raises(ValueError, match="node n: ns/big container app"):
        resync_plan(
            "n",
            [burstable("big", "8G")],
            q({"memory": "15G"}),
            q({"memory": "5G", "swap": "1G"}),
            None,
        )


# --- evictions ----------------------------------------------------------------------------------

EVICTION_CASES: list[
    tuple[str, dict[str, str], list[Pod], dict[str, dict[str, str]], list[str]]
] = [
    (
        "everything fits: nobody evicted",
        {"cpu": "4", "memory": "8G"},
        [guaranteed("g", "2G"), burstable("b", "2G"), best_effort("be")],
        {"ns/be": {"memory": "3G"}},
        [],
    ),
    (
        "BestEffort with usage first, then Burstable until the rest fit",
        {"cpu": "4", "memory": "4G"},
        [guaranteed("g", "2G"), burstable("b", "3G"), best_effort("be")],
        {"ns/be": {"memory": "1G"}},
        ["ns/be", "ns/b"],
    ),
    (
        "unmeasured BestEffort holds nothing short: left alone",
        {"cpu": "4", "memory": "4G"},
        [guaranteed("g", "2G"), burstable("b", "3G"), best_effort("be")],
        {},
        ["ns/b"],
    ),
    (
        "Burstable by usage over request, largest first",
        {"cpu": "8", "memory": "5G"},
        [burstable("b1", "2G"), burstable("b2", "2G"), burstable("b3", "2G")],
        {"ns/b1": {"memory": "1G"}, "ns/b2": {"memory": "4G"}, "ns/b3": {"memory": "2G"}},
        ["ns/b2"],
    ),
    (
        "usage over request beats size: the small overuser goes before the big one",
        {"cpu": "8", "memory": "5G"},
        [burstable("big", "4G"), burstable("small", "2G")],
        {"ns/big": {"memory": "3G"}, "ns/small": {"memory": "2500M"}},
        ["ns/small"],
    ),
    (
        "keeps evicting Burstable until it fits",
        {"cpu": "8", "memory": "2G"},
        [burstable("b1", "2G"), burstable("b2", "2G"), burstable("b3", "2G")],
        {"ns/b1": {"memory": "1G"}, "ns/b2": {"memory": "4G"}, "ns/b3": {"memory": "2G"}},
        ["ns/b2", "ns/b3"],
    ),
    (
        "Guaranteed only after every Burstable",
        {"cpu": "8", "memory": "1G"},
        [guaranteed("g", "2G"), burstable("b", "1G")],
        {"ns/b": {"memory": "100M"}, "ns/g": {"memory": "2G"}},
        ["ns/b", "ns/g"],
    ),
    (
        "ties: lower priority first, then by key",
        {"cpu": "8", "memory": "4G"},
        [
            mkpod("z-low", ctr("app", {"memory": "2G"}), priority=0),
            mkpod("a-high", ctr("app", {"memory": "2G"}), priority=100),
            mkpod("m-low", ctr("app", {"memory": "2G"}), priority=0),
        ],
        {},
        ["ns/m-low"],
    ),
    (
        "a pod holding nothing of the starved resource is skipped",
        {"cpu": "2", "memory": "64G"},
        [
            mkpod("mem-only", ctr("app", {"memory": "1G"})),
            mkpod("cpu-hog", ctr("app", {"cpu": "3", "memory": "1G"})),
        ],
        {"ns/mem-only": {"memory": "2G"}},
        ["ns/cpu-hog"],
    ),
    (
        "cpu starvation ranks by cpu usage over request",
        {"cpu": "3", "memory": "64G"},
        [burstable("c1", "1G", cpu="2"), burstable("c2", "1G", cpu="2")],
        {"ns/c1": {"cpu": "1"}, "ns/c2": {"cpu": "2500m"}},
        ["ns/c2"],
    ),
    (
        "the pods slot counts: with pods allocatable every pod holds one",
        {"cpu": "8", "memory": "64G", "pods": "1"},
        [burstable("b", "1G"), best_effort("be")],
        {},
        ["ns/be"],
    ),
]


@pytest.mark.parametrize(
    ("case", "allocatable", "pods", "usage", "want"),
    EVICTION_CASES,
    ids=[c[0] for c in EVICTION_CASES],
)
def test_evictions(
    case: str,
    allocatable: dict[str, str],
    pods: list[Pod],
    usage: dict[str, dict[str, str]],
    want: list[str],
) -> None:
    got = evictions(q(allocatable), pods, {k: q(v) for k, v in usage.items()})
    assert got == want, case
    # Deterministic: the input order does not matter.
    assert evictions(q(allocatable), reversed(pods), {k: q(v) for k, v in usage.items()}) == got


# --- conditions ---------------------------------------------------------------------------------


def test_starvation_condition_true_then_false() -> None:
    now = datetime(2025, 1, 1, tzinfo=UTC)
    pods = [guaranteed("g", "2G", cpu="1"), burstable("b", "4G", cpu="1")]
    starved = starvation_condition(q({"cpu": "4", "memory": "5G"}), pods, now=now)
    assert starved.type == RESOURCE_STARVATION == "ResourceStarvation"
    assert starved.status == "True"
    assert starved.reason == "KubeletHasInsufficientResources"
    assert starved.message == (
        "requested resources exceed allocatable after a node resize: "
        "memory (requested 6G, allocatable 5G)"
    )
    assert starved.last_transition_time == now
    fine = starvation_condition(q({"cpu": "4", "memory": "6G"}), pods)
    assert (fine.status, fine.reason) == ("False", "KubeletHasSufficientResources")


@pytest.mark.parametrize(
    ("allocatable", "expected"),
    [
        (
            {"cpu": "4", "memory": "5G"},
            "The node was low on resource: memory. After a node resize its pods requested "
            "memory (requested 6G, allocatable 5G).",
        ),
        (
            {"cpu": "1", "memory": "5G"},
            "The node was low on resource: cpu, memory. After a node resize its pods requested "
            "cpu (requested 2, allocatable 1), memory (requested 6G, allocatable 5G).",
        ),
    ],
)
def test_eviction_message_names_each_starved_resource(
    allocatable: dict[str, str], expected: str
) -> None:
    pods = [guaranteed("g", "2G", cpu="1"), burstable("b", "4G", cpu="1")]
    assert eviction_message(q(allocatable), pods) == expected


def test_node_resize_condition() -> None:
    failed = node_resize_condition("UpdateContainerResources ns/a/app: runtime down")
    assert (failed.type, failed.status, failed.reason) == (
        FAILED_NODE_RESIZE,
        "True",
        "FailedNodeResize",
    )
    assert failed.message == "UpdateContainerResources ns/a/app: runtime down"
    ok = node_resize_condition(None)
    assert (ok.type, ok.status) == ("FailedNodeResize", "False")


# --- applying a plan entry ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("memory_limit", "swap", "want_memsw"),
    [(4 * G, 1 * G, 5 * G), (0, 1 * G, 0), (4 * G, 0, 4 * G)],
)
def test_container_update_apply(memory_limit: int, swap: int, want_memsw: int) -> None:
    update = ContainerUpdate(
        pod="ns/a",
        container="app",
        qos="Burstable",
        memory_request_bytes=2 * G,
        swap_limit_bytes=swap,
        oom_score_adj=800,
        old_swap_limit_bytes=0,
    )
    before = LinuxContainerResources(
        cpu_shares=512, memory_limit_in_bytes=memory_limit, unified={"memory.high": "max"}
    )
    after = update.apply(before)
    assert after.oom_score_adj == 800
    assert after.unified == {"memory.high": "max", "memory.swap.max": str(swap)}
    assert after.memory_swap_limit_in_bytes == want_memsw
    assert after.cpu_shares == 512 and after.memory_limit_in_bytes == memory_limit


def test_resync_plan_only_running_containers_in_key_order() -> None:
    pods = [burstable("b", "1G"), guaranteed("a", "1G"), best_effort("c")]
    cap = q({"memory": "8G", "swap": "2G"})
    plan = resync_plan("n", pods, cap, cap, cap, running={"ns/b": {"app"}, "ns/c": set()})
    assert [(u.pod, u.container) for u in plan] == [("ns/b", "app")]
    everyone = resync_plan("n", pods, cap, cap, cap)
    assert [(u.pod, u.qos, u.swap_limit_bytes, u.oom_score_adj) for u in everyone] == [
        ("ns/a", "Guaranteed", 0, -997),
        ("ns/b", "Burstable", 250_000_000, 875),
        ("ns/c", "BestEffort", 0, 1000),
    ]
    assert not any(u.changed for u in everyone)


def test_resync_plan_swap_override_and_critical_pods() -> None:
    critical = mkpod(
        "dns",
        ctr("app", {"memory": "1G"}),
        priority=2_000_001_000,
        priority_class="system-node-critical",
    )
    cap = q({"memory": "8G", "swap": "2G"})
    plan = resync_plan("n", [critical, burstable("b", "2G")], cap, cap, cap, swap_available=4 * G)
    assert [(u.pod, u.swap_limit_bytes, u.oom_score_adj) for u in plan] == [
        ("ns/b", 1 * G, 750),
        ("ns/dns", 0, -997),
    ]
