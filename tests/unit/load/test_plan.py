"""The load plan is pure and repeatable: the same seed gives the same workload, every planned
outcome follows from the node sizes, and a pod's Deferred/Infeasible resize is its last."""

from __future__ import annotations

from collections import Counter

import pytest

from inplace.load.plan import (
    MAX_CPU_M,
    MAX_MEMORY_MI,
    MIN_CPU_M,
    MIN_MEMORY_MI,
    SIMULATED,
    Mix,
    Resources,
    make_plan,
)


def test_the_same_seed_gives_the_same_plan_and_another_seed_another() -> None:
    a = make_plan(nodes=10, pods=200, resizes=500, seed=7)
    b = make_plan(nodes=10, pods=200, resizes=500, seed=7)
    c = make_plan(nodes=10, pods=200, resizes=500, seed=8)
    assert a == b
    assert a.resizes != c.resizes


def test_counts_and_even_spread() -> None:
    plan = make_plan(nodes=7, pods=100, resizes=321, seed=1)
    assert len(plan.nodes) == 7 and len(plan.pods) == 100 and len(plan.resizes) == 321
    per_node = Counter(p.node for p in plan.pods)
    assert max(per_node.values()) - min(per_node.values()) <= 1
    assert [r.index for r in plan.resizes] == list(range(321))


def test_nodes_fit_every_pod_at_its_largest() -> None:
    plan = make_plan(nodes=3, pods=100, resizes=1000, seed=2)
    per_node = Counter(p.node for p in plan.pods)
    for node in plan.nodes:
        assert per_node[node.name] * MAX_CPU_M <= node.capacity.cpu_m
        assert per_node[node.name] * MAX_MEMORY_MI <= node.capacity.memory_mi
        assert per_node[node.name] < node.pods


def test_chains_follow_each_other_and_end_at_deferred_or_infeasible() -> None:
    plan = make_plan(nodes=5, pods=40, resizes=400, seed=3, mix=Mix(deferred=0.1, infeasible=0.1))
    start = {p.name: p.resources for p in plan.pods}
    for pod, chain in plan.chains().items():
        current = start[pod]
        for i, resize in enumerate(chain):
            assert resize.before == current
            assert resize.after != resize.before
            if resize.kind in ("deferred", "infeasible"):
                assert i == len(chain) - 1, "a Deferred/Infeasible resize is its pod's last"
            else:
                current = resize.after


def test_normal_resizes_stay_within_bounds_and_go_the_way_they_say() -> None:
    plan = make_plan(nodes=4, pods=50, resizes=2000, seed=4)
    for r in plan.resizes:
        if r.kind not in ("increase", "decrease"):
            continue
        assert MIN_CPU_M <= r.after.cpu_m <= MAX_CPU_M
        assert MIN_MEMORY_MI <= r.after.memory_mi <= MAX_MEMORY_MI
        sign = 1 if r.kind == "increase" else -1
        assert sign * (r.after.cpu_m - r.before.cpu_m) >= 0
        assert sign * (r.after.memory_mi - r.before.memory_mi) >= 0
        if r.dimension == "cpu":
            assert r.after.memory_mi == r.before.memory_mi
        if r.dimension == "memory":
            assert r.after.cpu_m == r.before.cpu_m


def test_deferred_fit_the_node_alone_but_not_beside_its_pods_and_infeasible_never() -> None:
    plan = make_plan(nodes=5, pods=60, resizes=600, seed=5, mix=Mix(deferred=0.1, infeasible=0.1))
    node_of = {p.name: p.node for p in plan.pods}
    capacity = {n.name: n.capacity.cpu_m for n in plan.nodes}
    population = Counter(node_of.values())
    kinds = Counter(r.kind for r in plan.resizes)
    assert kinds["deferred"] and kinds["infeasible"]
    for r in plan.resizes:
        cap = capacity[node_of[r.pod]]
        if r.kind == "deferred":
            assert r.after.cpu_m <= cap
            others = (population[node_of[r.pod]] - 1) * MIN_CPU_M
            assert r.after.cpu_m + others > cap
        if r.kind == "infeasible":
            assert r.after.cpu_m > cap


def test_the_mix_is_honoured_roughly() -> None:
    plan = make_plan(nodes=100, pods=2000, resizes=5000, seed=0)
    kinds = Counter(r.kind for r in plan.resizes)
    assert 50 <= kinds["deferred"] <= 150
    assert 50 <= kinds["infeasible"] <= 150
    assert kinds["increase"] > 1500 and kinds["decrease"] > 1500
    dims = Counter(r.dimension for r in plan.resizes if r.kind in ("increase", "decrease"))
    assert set(dims) == {"cpu", "memory", "both"}
    assert plan.expected() == Counter(r.expect for r in plan.resizes)


def test_no_deferred_without_neighbours_and_never_every_pod_retired() -> None:
    lonely = make_plan(nodes=10, pods=10, resizes=200, seed=6, mix=Mix(deferred=1.0, infeasible=0))
    assert not [r for r in lonely.resizes if r.kind == "deferred"]
    greedy = make_plan(nodes=1, pods=5, resizes=50, seed=6, mix=Mix(infeasible=1.0, deferred=0))
    assert Counter(r.kind for r in greedy.resizes)["infeasible"] == 4  # one pod stays active
    assert len(greedy.resizes) == 50


def test_objects_and_patch_are_what_the_api_takes() -> None:
    plan = make_plan(nodes=2, pods=3, resizes=3, seed=9, namespace="load-x")
    node = plan.nodes[0].to_k8s("load-x")
    assert node["metadata"]["annotations"] == {SIMULATED: "true"}
    assert node["status"]["allocatable"]["pods"] == str(plan.nodes[0].pods)
    pod = plan.pods[0].to_k8s()
    assert pod["spec"]["nodeName"] == plan.nodes[0].name
    resources = pod["spec"]["containers"][0]["resources"]
    assert resources["requests"] == resources["limits"]  # Guaranteed
    patch = plan.resizes[0].patch()
    assert patch["spec"]["containers"][0]["resources"]["limits"] == plan.resizes[0].after.to_k8s()
    assert Resources(150, 256).to_k8s() == {"cpu": "150m", "memory": "256Mi"}


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError):
        make_plan(nodes=0, pods=1, resizes=1)
    with pytest.raises(ValueError):
        make_plan(nodes=1, pods=1, resizes=-1)
    with pytest.raises(ValueError):
        Mix(deferred=0.7, infeasible=0.7)
    with pytest.raises(ValueError):
        Mix(cpu=1.5)
