"""Kubernetes' API ↔ cgroup conversions, checked against Kubernetes' own test values.

Rows come from pkg/kubelet/cm/helpers_linux_test.go (TestMilliCPUToQuota), pkg/kubelet/kuberuntime
helpers_test.go (TestSharesToMilliCPU: the known shares table and the round trip over 0..4000m),
runc's ConvertCPUSharesToCgroupV2Value test and pkg/kubelet/qos/policy_test.go.
"""

from __future__ import annotations

from typing import Any

import pytest

from schemas.k8s import Pod, ResourceRequirements
from schemas.quantity import Quantity
from services.kubelet.cgroupconv import (
    MAX_SHARES,
    MIN_QUOTA_PERIOD,
    MIN_SHARES,
    QUOTA_PERIOD,
    container_resources,
    memory_limit_bytes,
    milli_cpu_to_quota,
    milli_cpu_to_shares,
    oom_score_adj,
    pod_resources,
    quota_to_milli_cpu,
    requirements_from_linux,
    shares_to_milli_cpu,
    shares_to_weight,
    weight_to_shares,
)
from services.kubelet.cri import ContainerResources, LinuxContainerResources

MI = 1024 * 1024


def req(
    requests: dict[str, str] | None = None, limits: dict[str, str] | None = None
) -> ResourceRequirements:
    return ResourceRequirements.model_validate(
        {k: v for k, v in {"requests": requests, "limits": limits}.items() if v is not None}
    )


def pod(
    *containers: dict[str, Any],
    overhead: dict[str, str] | None = None,
    pod_level: dict[str, Any] | None = None,
) -> Pod:
    spec: dict[str, Any] = {
        "containers": [
            {"name": f"c{i}", "image": "busybox", "resources": resources}
            for i, resources in enumerate(containers)
        ]
    }
    if overhead:
        spec["overhead"] = overhead
    if pod_level is not None:
        spec["resources"] = pod_level
    return Pod.model_validate({"metadata": {"name": "p", "namespace": "ns"}, "spec": spec})


# --- CPU ---------------------------------------------------------------------------------------


# helpers_linux_test.go TestMilliCPUToQuota (default 100ms period).
@pytest.mark.parametrize(
    ("milli", "quota"),
    [
        (0, 0),
        (5, 1000),
        (9, 1000),
        (10, 1000),
        (200, 20000),
        (500, 50000),
        (1000, 100000),
        (1500, 150000),
    ],
)
def test_milli_cpu_to_quota_kubernetes_table(milli: int, quota: int) -> None:
    assert milli_cpu_to_quota(milli) == quota
    assert milli_cpu_to_quota(milli, QUOTA_PERIOD) == quota


def test_milli_cpu_to_quota_other_period() -> None:
    # CPUCFSQuotaPeriod: the quota scales with the period, the 1ms floor does not.
    assert milli_cpu_to_quota(200, 50_000) == 10_000
    assert milli_cpu_to_quota(1, 50_000) == MIN_QUOTA_PERIOD


# kuberuntime helpers_test.go TestSharesToMilliCPU: knownMilliCPUToShares.
KNOWN_MILLI_CPU_TO_SHARES = {
    0: 2, 1: 2, 2: 2, 3: 3, 4: 4, 32: 32, 64: 65, 100: 102, 200: 204, 300: 307, 400: 409,
    500: 512, 600: 614, 700: 716, 800: 819, 900: 921, 1000: 1024, 1500: 1536, 2000: 2048,
    3000: 3072, 4000: 4096, 5000: 5120, 6000: 6144, 7000: 7168, 8000: 8192, 9000: 9216,
    10000: 10240, 100000: 102400,
}  # fmt: skip


@pytest.mark.parametrize(("milli", "shares"), sorted(KNOWN_MILLI_CPU_TO_SHARES.items()))
def test_milli_cpu_to_shares_kubernetes_table(milli: int, shares: int) -> None:
    assert milli_cpu_to_shares(milli) == shares


def test_shares_clamped_to_kernel_range() -> None:
    assert milli_cpu_to_shares(-5) == MIN_SHARES
    assert milli_cpu_to_shares(256_000) == MAX_SHARES
    assert milli_cpu_to_shares(10_000_000) == MAX_SHARES


def test_shares_round_trip_over_0_to_4000_milli_cpu() -> None:
    # The same loop as TestSharesToMilliCPU: below 2m everything reads back as 2m.
    for milli in range(0, 4001):
        assert shares_to_milli_cpu(milli_cpu_to_shares(milli)) == max(milli, 2), milli


def test_quota_round_trip_from_the_1ms_floor() -> None:
    for milli in range(10, 4001):
        assert quota_to_milli_cpu(milli_cpu_to_quota(milli), QUOTA_PERIOD) == milli, milli
    assert quota_to_milli_cpu(0, QUOTA_PERIOD) == 0
    assert quota_to_milli_cpu(-1, QUOTA_PERIOD) == 0  # v1's "no quota"
    assert shares_to_milli_cpu(0) == 0  # not reported


@pytest.mark.parametrize(
    ("shares", "weight"), [(0, 0), (2, 1), (1024, 39), (262144, 10000), (500_000, 10000)]
)
def test_cgroup_v2_weight_from_shares_runc(shares: int, weight: int) -> None:
    assert shares_to_weight(shares) == weight


def test_cgroup_v2_weight_back_to_shares_is_consistent() -> None:
    for weight in range(1, 10_001):
        assert shares_to_weight(weight_to_shares(weight)) == weight
    assert weight_to_shares(0) == 0


# --- memory and OOM ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("quantity", "expected"),
    [(None, 0), ("0", 0), ("128Mi", 128 * MI), ("1G", 10**9), ("1.5Gi", 1536 * MI)],
)
def test_memory_limit_bytes(quantity: str | None, expected: int) -> None:
    assert memory_limit_bytes(Quantity(quantity) if quantity else None) == expected


@pytest.mark.parametrize(
    ("qos", "memory_request", "capacity", "expected"),
    [
        ("Guaranteed", 10**9, 4 * 10**9, -997),
        ("BestEffort", 0, 4 * 10**9, 1000),
        ("Burstable", 10**9, 4 * 10**9, 750),
        ("Burstable", 0, 4 * 10**9, 999),  # never scored like BestEffort
        ("Burstable", 4 * 10**9, 4 * 10**9, 2),  # never scored like Guaranteed
        ("Burstable", 8 * 10**9, 4 * 10**9, 2),
    ],
)
def test_oom_score_adj(qos: Any, memory_request: int, capacity: int, expected: int) -> None:
    assert oom_score_adj(qos, memory_request, capacity) == expected


# --- API → CRI ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("requirements", "expected"),
    [
        pytest.param(
            req({"cpu": "1.5", "memory": "1Gi"}, {"cpu": "2", "memory": "1Gi"}),
            LinuxContainerResources(100_000, 200_000, 1536, 1024 * MI),
            id="burstable cpu, memory limit",
        ),
        pytest.param(
            req({"cpu": "100m"}), LinuxContainerResources(0, 0, 102, 0), id="request only"
        ),
        pytest.param(
            req(limits={"cpu": "250m"}),
            LinuxContainerResources(100_000, 25_000, 256, 0),
            id="limit defaults the request",
        ),
        pytest.param(None, LinuxContainerResources(0, 0, 2, 0), id="best effort: min shares"),
        pytest.param(
            req({"cpu": "1m"}, {"cpu": "1m"}),
            LinuxContainerResources(100_000, 1_000, 2, 0),
            id="below the kernel floors",
        ),
    ],
)
def test_container_resources(
    requirements: ResourceRequirements | None, expected: LinuxContainerResources
) -> None:
    assert container_resources(requirements) == ContainerResources(linux=expected)


def test_container_resources_carries_oom_score_adj() -> None:
    linux = container_resources(req({"cpu": "1"}), oom_score_adj=-997).linux
    assert linux is not None and linux.oom_score_adj == -997


@pytest.mark.parametrize(
    ("the_pod", "expected"),
    [
        pytest.param(
            pod(
                {
                    "requests": {"cpu": "1", "memory": "1Gi"},
                    "limits": {"cpu": "1", "memory": "1Gi"},
                },
                {
                    "requests": {"cpu": "500m", "memory": "256Mi"},
                    "limits": {"cpu": "500m", "memory": "256Mi"},
                },
            ),
            LinuxContainerResources(100_000, 150_000, 1536, 1280 * MI),
            id="guaranteed: sums",
        ),
        pytest.param(
            pod(
                {"requests": {"cpu": "1"}, "limits": {"cpu": "2", "memory": "1Gi"}},
                {"requests": {"cpu": "500m"}, "limits": {"cpu": "1"}},
            ),
            LinuxContainerResources(100_000, 300_000, 1536, 0),
            id="burstable: one container without a memory limit leaves the pod unbounded",
        ),
        pytest.param(
            pod({"requests": {"cpu": "1"}}, {"limits": {"cpu": "1", "memory": "64Mi"}}),
            LinuxContainerResources(0, 0, 2048, 0),
            id="burstable: no cpu limit on one container, no pod quota",
        ),
        pytest.param(pod({}, {}), LinuxContainerResources(0, 0, 2, 0), id="best effort"),
        pytest.param(
            pod(
                {
                    "requests": {"cpu": "1", "memory": "1Gi"},
                    "limits": {"cpu": "1", "memory": "1Gi"},
                },
                overhead={"cpu": "250m", "memory": "120Mi"},
            ),
            LinuxContainerResources(100_000, 125_000, 1280, 1144 * MI),
            id="overhead added to requests and limits",
        ),
        pytest.param(
            pod(
                {},
                {"requests": {"cpu": "100m"}},
                pod_level={
                    "requests": {"cpu": "1", "memory": "512Mi"},
                    "limits": {"cpu": "2", "memory": "1Gi"},
                },
            ),
            LinuxContainerResources(100_000, 200_000, 1024, 1024 * MI),
            id="pod-level resources set the pod cgroup and bound it",
        ),
    ],
)
def test_pod_resources_like_resource_config_for_pod(
    the_pod: Pod, expected: LinuxContainerResources
) -> None:
    assert pod_resources(the_pod) == expected


# --- CRI → API ---------------------------------------------------------------------------------


def test_read_back_t6_cpu_request_1_5() -> None:
    # KEP-1287 T=6: the runtime applied cpu=1.5 → status...resources.requests.cpu = 1.5.
    allocated = req({"cpu": "1.5"})
    got = requirements_from_linux(container_resources(allocated).linux, allocated)
    assert got == allocated
    assert got.to_k8s() == {"requests": {"cpu": "1500m"}}


def test_read_back_limits_and_requests_round_trip() -> None:
    allocated = req({"cpu": "300m", "memory": "200Mi"}, {"cpu": "700m", "memory": "256Mi"})
    assert requirements_from_linux(container_resources(allocated).linux, allocated) == allocated


def test_read_back_reports_what_runtime_holds_not_allocation() -> None:
    allocated = req({"cpu": "2", "memory": "1Gi"}, {"cpu": "2", "memory": "1Gi"})
    applied = LinuxContainerResources(100_000, 150_000, 1536, 512 * MI)
    got = requirements_from_linux(applied, allocated)
    assert got.requests == {"cpu": Quantity("1.5"), "memory": Quantity("1Gi")}
    assert got.limits == {"cpu": Quantity("1.5"), "memory": Quantity("512Mi")}


def test_read_back_minimums_keep_allocated() -> None:
    # 1m → 2 shares, 1ms quota: both read back as allocated, not as 2m / 10m.
    allocated = req({"cpu": "1m"}, {"cpu": "5m"})
    got = requirements_from_linux(container_resources(allocated).linux, allocated)
    assert got == allocated


def test_read_back_without_cpu_request_reports_none() -> None:
    allocated = req({"memory": "64Mi"})
    got = requirements_from_linux(container_resources(allocated).linux, allocated)
    assert got == allocated


def test_read_back_best_effort_is_empty_object() -> None:
    got = requirements_from_linux(container_resources(None).linux, ResourceRequirements())
    assert got.to_k8s() == {}


def test_read_back_other_resources_copied_from_allocation() -> None:
    allocated = req({"cpu": "1", "ephemeral-storage": "1Gi"}, {"ephemeral-storage": "2Gi"})
    got = requirements_from_linux(container_resources(allocated).linux, allocated)
    assert got.limits == {"ephemeral-storage": Quantity("2Gi")}
    assert got.requests == {"cpu": Quantity("1"), "ephemeral-storage": Quantity("1Gi")}
