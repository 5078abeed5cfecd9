# ruff: noqa: E501  (tables of cases read best one per line)
"""kube-scheduler's placement filters (NodeUnschedulable, NodeAffinity, TaintToleration) and
what `schedule` does with them, case by case."""

from __future__ import annotations

from typing import Any

import pytest

from schemas.k8s import Node, Pod, Taint, Toleration
from services.scheduler.cache import SchedulerCache
from services.scheduler.nodeaffinity import (
    AFFINITY_MISMATCH,
    UNSCHEDULABLE,
    NodeFacts,
    filter_reason,
    is_default,
    placement_of,
    tolerates,
)
from services.scheduler.placement import Bound, Unschedulable, schedule
from tests.factories import node, pod

ZONE = "topology.kubernetes.io/zone"


def facts(
    name: str = "n1",
    labels: dict[str, str] | None = None,
    taints: list[dict[str, Any]] | None = None,
    unschedulable: bool = False,
) -> NodeFacts:
    return NodeFacts(
        name,
        labels or {},
        tuple(Taint.model_validate(t) for t in taints or []),
        unschedulable,
    )


def placed(**spec: Any) -> Pod:
    data = pod("default", "p").to_k8s()
    data["spec"].update(spec)
    return Pod.model_validate(data)


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, **({"values": list(values)} if values else {})}


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
        }
    }


EU = {"matchExpressions": [expr(ZONE, "In", "eu-1", "eu-2")]}

FILTER_CASES: list[tuple[str, dict[str, Any], NodeFacts, str | None]] = [
    ("no placement fields", {}, facts(), None),
    ("nodeSelector matches", {"nodeSelector": {"disk": "ssd"}}, facts(labels={"disk": "ssd"}), None),
    ("nodeSelector value differs", {"nodeSelector": {"disk": "ssd"}}, facts(labels={"disk": "hdd"}), AFFINITY_MISMATCH),
    ("nodeSelector label absent", {"nodeSelector": {"disk": "ssd"}}, facts(), AFFINITY_MISMATCH),
    ("In", {"affinity": required(EU)}, facts(labels={ZONE: "eu-2"}), None),
    ("In, other value", {"affinity": required(EU)}, facts(labels={ZONE: "us-1"}), AFFINITY_MISMATCH),
    ("NotIn, absent label passes", {"affinity": required({"matchExpressions": [expr(ZONE, "NotIn", "eu-1")]})}, facts(), None),
    ("NotIn, listed value", {"affinity": required({"matchExpressions": [expr(ZONE, "NotIn", "eu-1")]})}, facts(labels={ZONE: "eu-1"}), AFFINITY_MISMATCH),
    ("Exists", {"affinity": required({"matchExpressions": [expr("gpu", "Exists")]})}, facts(labels={"gpu": ""}), None),
    ("DoesNotExist", {"affinity": required({"matchExpressions": [expr("gpu", "DoesNotExist")]})}, facts(labels={"gpu": "a"}), AFFINITY_MISMATCH),
    ("Gt", {"affinity": required({"matchExpressions": [expr("cores", "Gt", "8")]})}, facts(labels={"cores": "16"}), None),
    ("Gt, not greater", {"affinity": required({"matchExpressions": [expr("cores", "Gt", "8")]})}, facts(labels={"cores": "8"}), AFFINITY_MISMATCH),
    ("Lt", {"affinity": required({"matchExpressions": [expr("cores", "Lt", "8")]})}, facts(labels={"cores": "4"}), None),
    ("Gt on a non-integer label", {"affinity": required({"matchExpressions": [expr("cores", "Gt", "8")]})}, facts(labels={"cores": "many"}), AFFINITY_MISMATCH),
    ("matchFields metadata.name", {"affinity": required({"matchFields": [expr("metadata.name", "In", "n1")]})}, facts("n1"), None),
    ("matchFields other node", {"affinity": required({"matchFields": [expr("metadata.name", "In", "n2")]})}, facts("n1"), AFFINITY_MISMATCH),
    ("terms are ORed", {"affinity": required({"matchExpressions": [expr("a", "Exists")]}, {"matchExpressions": [expr("b", "Exists")]})}, facts(labels={"b": "1"}), None),
    ("expressions are ANDed", {"affinity": required({"matchExpressions": [expr("a", "Exists"), expr("b", "Exists")]})}, facts(labels={"b": "1"}), AFFINITY_MISMATCH),
    ("an empty term matches nothing", {"affinity": required({})}, facts(), AFFINITY_MISMATCH),
    ("nodeSelector AND affinity", {"nodeSelector": {"disk": "ssd"}, "affinity": required(EU)}, facts(labels={ZONE: "eu-1"}), AFFINITY_MISMATCH),
    ("untolerated NoSchedule taint", {}, facts(taints=[{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]), "node(s) had untolerated taint {dedicated: db}"),
    ("PreferNoSchedule never filters", {}, facts(taints=[{"key": "k", "effect": "PreferNoSchedule"}]), None),
    ("Equal toleration", {"tolerations": [{"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoSchedule"}]}, facts(taints=[{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]), None),
    ("Equal toleration, other value", {"tolerations": [{"key": "dedicated", "value": "web"}]}, facts(taints=[{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]), "node(s) had untolerated taint {dedicated: db}"),
    ("Exists without key tolerates everything", {"tolerations": [{"operator": "Exists"}]}, facts(taints=[{"key": "x", "effect": "NoExecute"}]), None),
    ("untolerated NoExecute", {}, facts(taints=[{"key": "x", "value": "1", "effect": "NoExecute"}]), "node(s) had untolerated taint {x: 1}"),
    ("not-ready NoExecute is tolerated by default", {}, facts(taints=[{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]), None),
    ("cordoned", {}, facts(unschedulable=True), UNSCHEDULABLE),
    ("cordoned, tolerated", {"tolerations": [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]}, facts(unschedulable=True), None),
    ("cordon is checked before affinity", {"nodeSelector": {"a": "b"}}, facts(unschedulable=True), UNSCHEDULABLE),
]  # fmt: skip


@pytest.mark.parametrize(
    ("spec", "node_facts", "reason"),
    [c[1:] for c in FILTER_CASES],
    ids=[c[0] for c in FILTER_CASES],
)
def test_filter_reason(spec: dict[str, Any], node_facts: NodeFacts, reason: str | None) -> None:
    assert filter_reason(placement_of(placed(**spec)), node_facts) == reason


@pytest.mark.parametrize(
    ("toleration", "taint", "ok"),
    [
        ({"key": "k", "operator": "Exists"}, {"key": "k", "value": "v", "effect": "NoSchedule"}, True),
        ({"key": "k", "value": "v"}, {"key": "k", "value": "v", "effect": "NoSchedule"}, True),
        ({"key": "k", "value": "v", "effect": "NoExecute"}, {"key": "k", "value": "v", "effect": "NoSchedule"}, False),
        ({"key": "k", "effect": ""}, {"key": "k", "effect": "NoExecute"}, True),
        ({"key": "other", "operator": "Exists"}, {"key": "k", "effect": "NoSchedule"}, False),
    ],
)  # fmt: skip
def test_tolerates(toleration: dict[str, Any], taint: dict[str, Any], ok: bool) -> None:
    assert tolerates([Toleration.model_validate(toleration)], Taint.model_validate(taint)) is ok


def test_defaulted_tolerations_keep_the_fast_path() -> None:
    defaults = [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
    ]  # fmt: skip
    assert is_default(placement_of(placed(tolerations=defaults)))
    assert not is_default(placement_of(placed(tolerations=[{"operator": "Exists"}])))
    assert not is_default(placement_of(placed(nodeSelector={"a": "b"})))


def labelled(name: str, **labels: str) -> Node:
    data = node(name).to_k8s()
    data["metadata"]["labels"] = {"kubernetes.io/hostname": name, **labels}
    return Node.model_validate(data)


def cluster(*nodes: Node) -> SchedulerCache:
    cache = SchedulerCache()
    for n in nodes:
        cache.upsert_node(n)
    return cache


def test_schedule_honours_the_hostname_selector() -> None:
    cache = cluster(labelled("n0"), labelled("n1"), labelled("n2"))
    outcome = schedule(cache, placed(nodeSelector={"kubernetes.io/hostname": "n1"}))
    assert isinstance(outcome, Bound) and outcome.node_name == "n1"


def test_schedule_prefers_the_preferred_term() -> None:
    cache = cluster(labelled("a"), labelled("b", tier="gold"))
    affinity = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 50, "preference": {"matchExpressions": [expr("tier", "In", "gold")]}}
            ]
        }
    }
    outcome = schedule(cache, placed(affinity=affinity))
    assert isinstance(outcome, Bound) and outcome.node_name == "b"


def test_failed_scheduling_message_counts_each_filter() -> None:
    small = Node.model_validate(
        {
            **labelled("small", disk="ssd").to_k8s(),
            "status": {"allocatable": {"cpu": "50m", "memory": "1Gi", "pods": "10"}},
        }
    )
    tainted = labelled("tainted", disk="ssd").to_k8s()
    tainted["spec"] = {"taints": [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]}
    cache = cluster(labelled("hdd", disk="hdd"), small, Node.model_validate(tainted))
    outcome = schedule(cache, placed(nodeSelector={"disk": "ssd"}))
    assert isinstance(outcome, Unschedulable)
    assert outcome.message == (
        "0/3 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match Pod's node "
        "affinity/selector, 1 node(s) had untolerated taint {dedicated: db}."
    )  # fmt: skip
