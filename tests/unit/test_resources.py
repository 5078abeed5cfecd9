"""Kubernetes' resource rules: QoS class, effective pod requests/limits, ResourceList arithmetic.

Tables in the style of Kubernetes' qos_test.go and helpers_test.go: each row is named and has
its input and exact expected output.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schemas.k8s import Container, ContainerStatus, Pod, ResourceList
from schemas.quantity import Quantity
from schemas.resources import (
    LimitSource,
    RequestSource,
    add,
    aggregate_container_limits,
    aggregate_container_requests,
    container_limits,
    container_requests,
    fits,
    is_sidecar,
    max_per_resource,
    pod_limits,
    pod_requests,
    qos_class,
    scheduling_requests,
    subtract,
)
from tests.factories import container_json as ctr
from tests.factories import resource_list as rl


def pod(
    containers: list[dict[str, Any]],
    init: list[dict[str, Any]] | None = None,
    *,
    overhead: dict[str, str] | None = None,
    status: dict[str, Any] | None = None,
    pod_level: dict[str, Any] | None = None,
) -> Pod:
    spec: dict[str, Any] = {"containers": containers}
    if init is not None:
        spec["initContainers"] = init
    if overhead is not None:
        spec["overhead"] = overhead
    if pod_level is not None:
        spec["resources"] = pod_level
    return Pod.from_k8s(
        {"metadata": {"name": "p", "namespace": "ns"}, "spec": spec, "status": status or {}}
    )


GUARANTEED = {"cpu": "1", "memory": "1Gi"}

# --- QoS class ----------------------------------------------------------------------------------

QOS_CASES: list[tuple[str, Pod, str]] = [
    ("best-effort-no-resources", pod([ctr("a")]), "BestEffort"),
    ("best-effort-two-containers", pod([ctr("a"), ctr("b", {}, {})]), "BestEffort"),
    ("best-effort-zero-requests", pod([ctr("a", {"cpu": "0", "memory": "0"})]), "BestEffort"),
    (
        "best-effort-extended-resources-only",
        pod([ctr("a", {"nvidia.com/gpu": "1"}, {"nvidia.com/gpu": "1"})]),
        "BestEffort",
    ),
    (
        "best-effort-hugepages-and-storage-only",
        pod([ctr("a", {"hugepages-2Mi": "1Gi", "ephemeral-storage": "1Gi"})]),
        "BestEffort",
    ),
    ("guaranteed-requests-equal-limits", pod([ctr("a", GUARANTEED, GUARANTEED)]), "Guaranteed"),
    ("guaranteed-limits-default-requests", pod([ctr("a", None, GUARANTEED)]), "Guaranteed"),
    (
        "guaranteed-partial-requests-defaulted-from-limits",
        pod([ctr("a", {"cpu": "1"}, GUARANTEED)]),
        "Guaranteed",
    ),
    (
        "guaranteed-equal-values-different-notation",
        pod([ctr("a", {"cpu": "1000m", "memory": "1024Mi"}, {"cpu": "1", "memory": "1Gi"})]),
        "Guaranteed",
    ),
    (
        "guaranteed-multiple-containers",
        pod(
            [
                ctr("a", GUARANTEED, GUARANTEED),
                ctr("b", None, {"cpu": "250m", "memory": "64Mi"}),
            ]
        ),
        "Guaranteed",
    ),
    (
        "guaranteed-extended-resource-ignored",
        pod([ctr("a", GUARANTEED, {**GUARANTEED, "nvidia.com/gpu": "2"})]),
        "Guaranteed",
    ),
    (
        "guaranteed-with-init-and-sidecar",
        pod(
            [ctr("app", GUARANTEED, GUARANTEED)],
            [ctr("init", None, GUARANTEED), ctr("side", GUARANTEED, GUARANTEED, sidecar=True)],
        ),
        "Guaranteed",
    ),
    ("burstable-requests-only", pod([ctr("a", {"cpu": "100m"})]), "Burstable"),
    (
        "burstable-requests-below-limits",
        pod([ctr("a", {"cpu": "500m", "memory": "1Gi"}, GUARANTEED)]),
        "Burstable",
    ),
    ("burstable-cpu-limit-only", pod([ctr("a", None, {"cpu": "1"})]), "Burstable"),
    (
        "burstable-memory-limit-zero",
        pod([ctr("a", {"cpu": "1"}, {"cpu": "1", "memory": "0"})]),
        "Burstable",
    ),
    (
        "burstable-one-guaranteed-one-best-effort",
        pod([ctr("a", GUARANTEED, GUARANTEED), ctr("b")]),
        "Burstable",
    ),
    (
        "burstable-init-container-without-limits",
        pod([ctr("app", GUARANTEED, GUARANTEED)], [ctr("init")]),
        "Burstable",
    ),
    (
        "burstable-init-container-requests-below-limits",
        pod(
            [ctr("app", GUARANTEED, GUARANTEED)],
            [ctr("init", {"cpu": "100m", "memory": "1Gi"}, GUARANTEED)],
        ),
        "Burstable",
    ),
    (
        "burstable-sidecar-requests-only",
        pod([ctr("app", GUARANTEED, GUARANTEED)], [ctr("side", {"cpu": "50m"}, sidecar=True)]),
        "Burstable",
    ),
    (
        "burstable-only-init-container-has-requests",
        pod([ctr("app")], [ctr("init", {"memory": "64Mi"})]),
        "Burstable",
    ),
]


@pytest.mark.parametrize(
    ("p", "expected"), [c[1:] for c in QOS_CASES], ids=[c[0] for c in QOS_CASES]
)
def test_qos_class(p: Pod, expected: str) -> None:
    assert qos_class(p) == expected


# --- effective pod requests from the spec -------------------------------------------------------

REQUEST_CASES: list[tuple[str, Pod, ResourceList]] = [
    ("no-containers", pod([]), {}),
    ("no-requests", pod([ctr("a")]), {}),
    ("single-container", pod([ctr("a", {"cpu": "1", "memory": "1Gi"})]), rl(cpu="1", memory="1Gi")),
    (
        "containers-are-summed",
        pod([ctr("a", {"cpu": "1", "memory": "1Gi"}), ctr("b", {"cpu": "500m"})]),
        rl(cpu="1500m", memory="1Gi"),
    ),
    (
        "limits-default-requests",
        pod(
            [ctr("a", None, {"cpu": "2", "memory": "512Mi"}), ctr("b", {"cpu": "1"}, {"cpu": "3"})]
        ),
        rl(cpu="3", memory="512Mi"),
    ),
    (
        "init-container-larger-than-sum",
        pod([ctr("a", {"cpu": "1"}), ctr("b", {"cpu": "1"})], [ctr("init", {"cpu": "3"})]),
        rl(cpu="3"),
    ),
    (
        "init-containers-take-max-not-sum",
        pod([ctr("a", {"cpu": "1"})], [ctr("i1", {"cpu": "2"}), ctr("i2", {"cpu": "2500m"})]),
        rl(cpu="2500m"),
    ),
    (
        "init-container-smaller-than-sum",
        pod([ctr("a", {"cpu": "1"}), ctr("b", {"cpu": "1"})], [ctr("init", {"cpu": "1500m"})]),
        rl(cpu="2"),
    ),
    (
        "max-is-per-resource",
        pod(
            [ctr("a", {"cpu": "1", "memory": "2Gi"})],
            [ctr("init", {"cpu": "4", "memory": "100Mi"})],
        ),
        rl(cpu="4", memory="2Gi"),
    ),
    (
        "resource-only-in-init-container",
        pod([ctr("a", {"cpu": "1"})], [ctr("init", {"ephemeral-storage": "1Gi"})]),
        rl(cpu="1", **{"ephemeral-storage": "1Gi"}),
    ),
    (
        "sidecar-added-to-regular-containers",
        pod([ctr("a", {"cpu": "1"})], [ctr("side", {"cpu": "200m"}, sidecar=True)]),
        rl(cpu="1200m"),
    ),
    (
        "sidecar-before-init-runs-alongside-it",
        pod(
            [ctr("a", {"cpu": "1"})],
            [ctr("side", {"cpu": "500m"}, sidecar=True), ctr("init", {"cpu": "2"})],
        ),
        rl(cpu="2500m"),
    ),
    (
        "sidecar-after-init-does-not-run-alongside-it",
        pod(
            [ctr("a", {"cpu": "1"})],
            [ctr("init", {"cpu": "2"}), ctr("side", {"cpu": "500m"}, sidecar=True)],
        ),
        rl(cpu="2"),
    ),
    (
        "sidecars-accumulate-in-declaration-order",
        pod(
            [ctr("a", {"memory": "100Mi"})],
            [
                ctr("s1", {"memory": "200Mi"}, sidecar=True),
                ctr("i1", {"memory": "1Gi"}),
                ctr("s2", {"memory": "300Mi"}, sidecar=True),
                ctr("i2", {"memory": "700Mi"}),
            ],
        ),
        # i1: 1Gi + s1 200Mi = 1224Mi; i2: 700Mi + 500Mi = 1200Mi; run: 600Mi.
        rl(memory="1224Mi"),
    ),
    (
        "sidecars-only-no-regular-requests",
        pod(
            [ctr("a")],
            [ctr("s1", {"cpu": "100m"}, sidecar=True), ctr("s2", {"cpu": "100m"}, sidecar=True)],
        ),
        rl(cpu="200m"),
    ),
    (
        "overhead-added",
        pod([ctr("a", {"cpu": "1", "memory": "1Gi"})], overhead={"cpu": "250m", "memory": "120Mi"}),
        rl(cpu="1250m", memory="1144Mi"),
    ),
    (
        "overhead-added-after-init-max",
        pod([ctr("a", {"cpu": "1"})], [ctr("init", {"cpu": "2"})], overhead={"cpu": "100m"}),
        rl(cpu="2100m"),
    ),
    (
        "overhead-adds-resource-without-requests",
        pod([ctr("a", {"cpu": "1"})], overhead={"memory": "64Mi"}),
        rl(cpu="1", memory="64Mi"),
    ),
]


@pytest.mark.parametrize(
    ("p", "expected"), [c[1:] for c in REQUEST_CASES], ids=[c[0] for c in REQUEST_CASES]
)
def test_pod_requests_from_spec(p: Pod, expected: ResourceList) -> None:
    assert pod_requests(p) == expected
    assert pod_requests(p, source="spec") == expected


# --- effective pod requests during an in-place resize (KEP-1287) --------------------------------


def cstatus(
    name: str,
    allocated: dict[str, str] | None = None,
    actual: dict[str, str] | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "ready": True, "restartCount": 0}
    if allocated is not None:
        out["allocatedResources"] = allocated
    if actual is not None:
        out["resources"] = {"requests": actual}
    return out


def resizing(
    spec: dict[str, str],
    allocated: dict[str, str] | None,
    actual: dict[str, str] | None,
    resize: str | None,
    *,
    overhead: dict[str, str] | None = None,
) -> Pod:
    status: dict[str, Any] = {
        "phase": "Running",
        "containerStatuses": [cstatus("app", allocated, actual)],
    }
    if resize is not None:
        status["resize"] = resize
    return pod([ctr("app", spec)], overhead=overhead, status=status)


SOURCE_CASES: list[tuple[str, Pod, dict[str, ResourceList]]] = [
    (
        "steady-state",
        resizing({"cpu": "1"}, {"cpu": "1"}, {"cpu": "1"}, None),
        {"spec": rl(cpu="1"), "allocated": rl(cpu="1"), "actual": rl(cpu="1"), "max": rl(cpu="1")},
    ),
    (
        "proposed-upsize-counts-desired",
        resizing({"cpu": "2"}, {"cpu": "1"}, {"cpu": "1"}, "Proposed"),
        {"spec": rl(cpu="2"), "allocated": rl(cpu="1"), "actual": rl(cpu="1"), "max": rl(cpu="2")},
    ),
    (
        "proposed-downsize-keeps-allocated",
        resizing({"cpu": "500m"}, {"cpu": "1"}, {"cpu": "1"}, "Proposed"),
        {
            "spec": rl(cpu="500m"),
            "allocated": rl(cpu="1"),
            "actual": rl(cpu="1"),
            "max": rl(cpu="1"),
        },
    ),
    (
        "deferred-upsize-counts-desired",
        resizing({"cpu": "4"}, {"cpu": "1"}, {"cpu": "1"}, "Deferred"),
        {"spec": rl(cpu="4"), "allocated": rl(cpu="1"), "actual": rl(cpu="1"), "max": rl(cpu="4")},
    ),
    (
        "in-progress-actual-lags",
        resizing({"cpu": "2"}, {"cpu": "2"}, {"cpu": "1"}, "InProgress"),
        {"spec": rl(cpu="2"), "allocated": rl(cpu="2"), "actual": rl(cpu="1"), "max": rl(cpu="2")},
    ),
    (
        "infeasible-ignores-desired",
        resizing({"cpu": "64"}, {"cpu": "1"}, {"cpu": "1"}, "Infeasible"),
        {"spec": rl(cpu="64"), "allocated": rl(cpu="1"), "actual": rl(cpu="1"), "max": rl(cpu="1")},
    ),
    (
        "max-is-per-resource",
        resizing(
            {"cpu": "2", "memory": "1Gi"},
            {"cpu": "1", "memory": "2Gi"},
            {"cpu": "1", "memory": "2Gi"},
            "Proposed",
        ),
        {
            "spec": rl(cpu="2", memory="1Gi"),
            "allocated": rl(cpu="1", memory="2Gi"),
            "actual": rl(cpu="1", memory="2Gi"),
            "max": rl(cpu="2", memory="2Gi"),
        },
    ),
    (
        "not-yet-admitted-falls-back-to-spec",
        pod([ctr("app", {"cpu": "1"})]),
        {"spec": rl(cpu="1"), "allocated": rl(cpu="1"), "actual": rl(cpu="1"), "max": rl(cpu="1")},
    ),
    (
        "no-actual-yet-falls-back-to-allocated",
        resizing({"cpu": "2"}, {"cpu": "1"}, None, "Proposed"),
        {"spec": rl(cpu="2"), "allocated": rl(cpu="1"), "actual": rl(cpu="1"), "max": rl(cpu="2")},
    ),
    (
        "overhead-added-for-every-source",
        resizing({"cpu": "2"}, {"cpu": "1"}, {"cpu": "1"}, "Proposed", overhead={"cpu": "100m"}),
        {
            "spec": rl(cpu="2100m"),
            "allocated": rl(cpu="1100m"),
            "actual": rl(cpu="1100m"),
            "max": rl(cpu="2100m"),
        },
    ),
    (
        "sidecar-resize-uses-init-container-statuses",
        pod(
            [ctr("app", {"cpu": "1"})],
            [ctr("init", {"cpu": "1"}), ctr("side", {"cpu": "1"}, sidecar=True)],
            status={
                "resize": "Proposed",
                "initContainerStatuses": [
                    cstatus("init", {"cpu": "1"}, {"cpu": "1"}),
                    cstatus("side", {"cpu": "250m"}, {"cpu": "250m"}),
                ],
                "containerStatuses": [cstatus("app", {"cpu": "1"}, {"cpu": "1"})],
            },
        ),
        {
            "spec": rl(cpu="2"),
            "allocated": rl(cpu="1250m"),
            "actual": rl(cpu="1250m"),
            "max": rl(cpu="2"),
        },
    ),
]
SOURCE_ROWS = [
    (name, p, source, expected[source])
    for name, p, expected in SOURCE_CASES
    for source in ("spec", "allocated", "actual", "max")
]


@pytest.mark.parametrize(
    ("p", "source", "expected"),
    [r[1:] for r in SOURCE_ROWS],
    ids=[f"{r[0]}-{r[2]}" for r in SOURCE_ROWS],
)
def test_pod_requests_by_source(p: Pod, source: RequestSource, expected: ResourceList) -> None:
    assert pod_requests(p, source=source) == expected


def test_pod_requests_does_not_mutate_pod() -> None:
    p = SOURCE_CASES[-1][1]
    before = p.model_copy(deep=True)
    for source in ("spec", "allocated", "actual", "max"):
        result = pod_requests(p, source=source)
        result["cpu"] = Quantity.parse("99")
    assert p == before


# --- effective pod limits -----------------------------------------------------------------------

LIMIT_CASES: list[tuple[str, Pod, LimitSource, ResourceList]] = [
    ("no-limits", pod([ctr("a", {"cpu": "1"})]), "spec", {}),
    (
        "containers-are-summed",
        pod([ctr("a", None, {"cpu": "1", "memory": "1Gi"}), ctr("b", None, {"cpu": "2"})]),
        "spec",
        rl(cpu="3", memory="1Gi"),
    ),
    (
        "init-max-and-sidecar-sum",
        pod(
            [ctr("a", None, {"cpu": "1"})],
            [ctr("side", None, {"cpu": "1"}, sidecar=True), ctr("init", None, {"cpu": "4"})],
        ),
        "spec",
        rl(cpu="5"),
    ),
    (
        "overhead-only-on-set-limits",
        pod([ctr("a", None, {"cpu": "1"})], overhead={"cpu": "100m", "memory": "64Mi"}),
        "spec",
        rl(cpu="1100m"),
    ),
    (
        "actual-limits",
        pod(
            [ctr("app", None, {"cpu": "2"})],
            status={
                "resize": "InProgress",
                "containerStatuses": [
                    {"name": "app", "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "1"}}}
                ],
            },
        ),
        "actual",
        rl(cpu="1"),
    ),
    (
        "max-of-spec-and-actual",
        pod(
            [ctr("app", None, {"cpu": "2", "memory": "1Gi"})],
            status={
                "resize": "InProgress",
                "containerStatuses": [
                    {"name": "app", "resources": {"limits": {"cpu": "1", "memory": "2Gi"}}}
                ],
            },
        ),
        "max",
        rl(cpu="2", memory="2Gi"),
    ),
    (
        "max-infeasible-uses-actual",
        pod(
            [ctr("app", None, {"cpu": "64"})],
            status={
                "resize": "Infeasible",
                "containerStatuses": [{"name": "app", "resources": {"limits": {"cpu": "1"}}}],
            },
        ),
        "max",
        rl(cpu="1"),
    ),
]


@pytest.mark.parametrize(
    ("p", "source", "expected"), [c[1:] for c in LIMIT_CASES], ids=[c[0] for c in LIMIT_CASES]
)
def test_pod_limits(p: Pod, source: LimitSource, expected: ResourceList) -> None:
    assert pod_limits(p, source=source) == expected


# --- containers ---------------------------------------------------------------------------------


def test_is_sidecar() -> None:
    p = pod([ctr("app")], [ctr("init"), ctr("side", sidecar=True)])
    assert [is_sidecar(c) for c in p.spec.init_containers or []] == [False, True]
    assert not is_sidecar(p.spec.containers[0])


CONTAINER_CASES: list[tuple[str, dict[str, Any], ResourceList | None, ResourceList]] = [
    ("spec-requests", ctr("a", {"cpu": "1"}), None, rl(cpu="1")),
    ("no-resources", ctr("a"), None, {}),
    (
        "limits-default-requests",
        ctr("a", {"cpu": "1"}, {"cpu": "2", "memory": "1Gi"}),
        None,
        rl(cpu="1", memory="1Gi"),
    ),
    ("allocated-larger", ctr("a", {"cpu": "1"}), rl(cpu="2"), rl(cpu="2")),
    ("allocated-smaller", ctr("a", {"cpu": "1"}), rl(cpu="500m"), rl(cpu="1")),
    (
        "allocated-per-resource",
        ctr("a", {"cpu": "1", "memory": "2Gi"}),
        rl(cpu="2", memory="1Gi"),
        rl(cpu="2", memory="2Gi"),
    ),
]


@pytest.mark.parametrize(
    ("c", "allocated", "expected"),
    [r[1:] for r in CONTAINER_CASES],
    ids=[r[0] for r in CONTAINER_CASES],
)
def test_container_requests(
    c: dict[str, Any], allocated: ResourceList | None, expected: ResourceList
) -> None:
    assert container_requests(Container.from_k8s(c), use_allocated=allocated) == expected


def test_container_limits_is_a_copy() -> None:
    c = Container.from_k8s(ctr("a", None, {"cpu": "1"}))
    limits = container_limits(c)
    limits["memory"] = Quantity.parse("1Gi")
    assert c.resources.limits == rl(cpu="1")


# --- ResourceList arithmetic --------------------------------------------------------------------

ARITHMETIC_CASES: list[tuple[str, Any, ResourceList, ResourceList, ResourceList]] = [
    (
        "add-same-keys",
        add,
        rl(cpu="1", memory="1Gi"),
        rl(cpu="500m", memory="1Gi"),
        rl(cpu="1500m", memory="2Gi"),
    ),
    ("add-disjoint-keys", add, rl(cpu="1"), rl(memory="1Gi"), rl(cpu="1", memory="1Gi")),
    ("add-empty", add, {}, rl(cpu="1"), rl(cpu="1")),
    (
        "subtract-same-keys",
        subtract,
        rl(cpu="2", memory="2Gi"),
        rl(cpu="500m", memory="1Gi"),
        rl(cpu="1500m", memory="1Gi"),
    ),
    (
        "subtract-key-only-in-a",
        subtract,
        rl(cpu="2", memory="1Gi"),
        rl(cpu="1"),
        rl(cpu="1", memory="1Gi"),
    ),
    (
        "subtract-key-only-in-b",
        subtract,
        rl(cpu="2"),
        rl(cpu="1", memory="1Gi"),
        rl(cpu="1", memory="-1Gi"),
    ),
    ("subtract-goes-negative", subtract, rl(cpu="1"), rl(cpu="1500m"), rl(cpu="-500m")),
    (
        "max-per-resource",
        max_per_resource,
        rl(cpu="2", memory="1Gi"),
        rl(cpu="1", memory="2Gi"),
        rl(cpu="2", memory="2Gi"),
    ),
    ("max-disjoint-keys", max_per_resource, rl(cpu="1"), rl(pods="3"), rl(cpu="1", pods="3")),
    ("max-empty", max_per_resource, {}, {}, {}),
]


@pytest.mark.parametrize(
    ("fn", "a", "b", "expected"),
    [c[1:] for c in ARITHMETIC_CASES],
    ids=[c[0] for c in ARITHMETIC_CASES],
)
def test_arithmetic(fn: Any, a: ResourceList, b: ResourceList, expected: ResourceList) -> None:
    a_before, b_before = dict(a), dict(b)
    assert fn(a, b) == expected
    assert (a, b) == (a_before, b_before)


FITS_CASES: list[tuple[str, ResourceList, ResourceList, list[str]]] = [
    ("fits", rl(cpu="1", memory="1Gi"), rl(cpu="2", memory="2Gi"), []),
    ("fits-exactly", rl(cpu="2", memory="2Gi"), rl(cpu="2000m", memory="2048Mi"), []),
    ("cpu-short", rl(cpu="2100m", memory="1Gi"), rl(cpu="2", memory="2Gi"), ["cpu"]),
    ("both-short-sorted", rl(memory="3Gi", cpu="3"), rl(cpu="2", memory="2Gi"), ["cpu", "memory"]),
    (
        "missing-resource-is-none-available",
        rl(**{"nvidia.com/gpu": "1"}),
        rl(cpu="2"),
        ["nvidia.com/gpu"],
    ),
    ("zero-request-always-fits", rl(**{"nvidia.com/gpu": "0"}), {}, []),
    ("available-extra-keys-ignored", rl(cpu="1"), rl(cpu="1", memory="1Gi", pods="110"), []),
    ("negative-available", rl(cpu="100m"), rl(cpu="-1"), ["cpu"]),
    ("empty-request", {}, {}, []),
]


@pytest.mark.parametrize(
    ("request_", "available", "expected"),
    [c[1:] for c in FITS_CASES],
    ids=[c[0] for c in FITS_CASES],
)
def test_fits(request_: ResourceList, available: ResourceList, expected: list[str]) -> None:
    assert fits(request_, available) == expected


# --- properties ---------------------------------------------------------------------------------

_milli = st.integers(min_value=0, max_value=64_000)
_cpu_lists = st.dictionaries(
    st.sampled_from(["cpu", "memory", "pods"]),
    _milli.map(Quantity.from_milli),
    max_size=3,
)


@given(_cpu_lists, _cpu_lists)
def test_add_then_subtract_restores_keys_of_a(a: ResourceList, b: ResourceList) -> None:
    back = subtract(add(a, b), b)
    assert {k: v for k, v in back.items() if k in a} == a
    assert all(v.is_zero() for k, v in back.items() if k not in a)


@given(_cpu_lists, _cpu_lists)
def test_max_dominates_and_add_is_commutative(a: ResourceList, b: ResourceList) -> None:
    m = max_per_resource(a, b)
    assert fits(a, m) == [] and fits(b, m) == []
    assert add(a, b) == add(b, a)


@given(
    st.lists(st.tuples(_milli, _milli), min_size=1, max_size=4),
    st.lists(st.tuples(_milli, st.booleans()), max_size=4),
)
def test_max_source_covers_spec_and_allocated(
    regular: list[tuple[int, int]], init: list[tuple[int, bool]]
) -> None:
    """Whatever the kubelet decides, the scheduler's view (max) never under-counts the pod."""
    containers = [ctr(f"c{i}", {"cpu": f"{spec}m"}) for i, (spec, _) in enumerate(regular)]
    inits = [ctr(f"i{i}", {"cpu": f"{spec}m"}, sidecar=side) for i, (spec, side) in enumerate(init)]
    statuses = [cstatus(f"c{i}", {"cpu": f"{alloc}m"}) for i, (_, alloc) in enumerate(regular)]
    p = pod(containers, inits, status={"resize": "Proposed", "containerStatuses": statuses})
    pessimistic = pod_requests(p, source="max")
    assert fits(pod_requests(p, source="spec"), pessimistic) == []
    assert fits(pod_requests(p, source="allocated"), pessimistic) == []


def test_helpers_accept_status_models() -> None:
    # Statuses are looked up by name, across both status lists.
    p = pod([ctr("app", {"cpu": "1"})])
    p.status.container_statuses = [
        ContainerStatus(name="other", allocated_resources=rl(cpu="8")),
        ContainerStatus(name="app", allocated_resources=rl(cpu="3")),
    ]
    assert pod_requests(copy.deepcopy(p), source="allocated") == rl(cpu="3")


# --- pod-level resources (KEP-2837) ---------------------------------------------------------------

POD_LEVEL = {"requests": {"cpu": "2", "memory": "2Gi"}, "limits": {"cpu": "4", "memory": "2Gi"}}


@pytest.mark.parametrize(
    ("name", "p", "expected"),
    [
        (
            "pod level replaces the aggregate",
            pod([ctr("a", {"cpu": "1"})], pod_level=POD_LEVEL),
            "Burstable",
        ),
        (
            "guaranteed at pod level with best-effort containers",
            pod(
                [ctr("a"), ctr("b")],
                pod_level={"requests": GUARANTEED, "limits": GUARANTEED},
            ),
            "Guaranteed",
        ),
        (
            "cpu limit only",
            pod([ctr("a", GUARANTEED, GUARANTEED)], pod_level={"limits": {"cpu": "1"}}),
            "Burstable",
        ),
        ("empty pod level", pod([ctr("a", GUARANTEED, GUARANTEED)], pod_level={}), "BestEffort"),
    ],
)
def test_qos_class_from_pod_level_resources(name: str, p: Pod, expected: str) -> None:
    assert qos_class(p) == expected, name


def test_pod_level_requests_and_limits_replace_the_aggregate_for_their_resources() -> None:
    p = pod(
        [ctr("a", {"cpu": "500m", "ephemeral-storage": "1Gi"}), ctr("b", {"cpu": "1"})],
        overhead={"cpu": "100m"},
        pod_level={"requests": {"cpu": "2"}, "limits": {"cpu": "4"}},
    )
    assert pod_requests(p) == rl(cpu="2100m", **{"ephemeral-storage": "1Gi"})
    assert pod_limits(p) == rl(cpu="4100m")


def _pod_level_resizing(allocated: str | None, actual: str | None, resize: str | None) -> Pod:
    status: dict[str, Any] = {"phase": "Running", "containerStatuses": [cstatus("app")]}
    if allocated is not None:
        status["allocatedResources"] = {"cpu": allocated}
    if actual is not None:
        status["resources"] = {"requests": {"cpu": actual}, "limits": {"cpu": actual}}
    if resize is not None:
        status["resize"] = resize
    return pod([ctr("app")], status=status, pod_level={"requests": {"cpu": "3"}})


@pytest.mark.parametrize(
    ("allocated", "actual", "resize", "by_source", "scheduling"),
    [
        (None, None, None, {"spec": "3", "allocated": "3", "actual": "3", "max": "3"}, "3"),
        ("1", "1", "Proposed", {"spec": "3", "allocated": "1", "actual": "1", "max": "3"}, "3"),
        ("5", "1", "InProgress", {"spec": "3", "allocated": "5", "actual": "1", "max": "5"}, "5"),
        ("1", "2", "Infeasible", {"spec": "3", "allocated": "1", "actual": "2", "max": "1"}, "2"),
    ],
)
def test_pod_level_requests_by_source_and_for_scheduling(
    allocated: str | None,
    actual: str | None,
    resize: str | None,
    by_source: dict[str, str],
    scheduling: str,
) -> None:
    p = _pod_level_resizing(allocated, actual, resize)
    for source, cpu in by_source.items():
        assert pod_requests(p, source=source) == rl(cpu=cpu), source  # type: ignore[arg-type]
    assert scheduling_requests(p) == rl(cpu=scheduling)


def test_aggregate_container_requests_ignore_pod_level_and_overhead() -> None:
    p = pod(
        [ctr("a", {"cpu": "1"}, {"cpu": "2"}), ctr("b", {"cpu": "1"})],
        [ctr("init", {"cpu": "3"})],
        overhead={"cpu": "1"},
        pod_level={"requests": {"cpu": "5"}},
    )
    assert aggregate_container_requests(p) == rl(cpu="3")
    assert aggregate_container_limits(p) == rl(cpu="2")
