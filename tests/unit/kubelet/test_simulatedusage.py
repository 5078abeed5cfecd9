"""Simulated usage from a pod's `usage.inplace.dev/<container>` annotations."""

from __future__ import annotations

import pytest

from services.kubelet.simulatedusage import (
    SimulatedUsage,
    UsageAnnotationError,
    simulated_usage,
)
from tests import factories


def test_annotations_set_usage_within_the_containers_limits() -> None:
    pod = factories.pod("default", "web", cpu="500m", memory="128Mi")
    pod.metadata.annotations = {
        "usage.inplace.dev/app": "cpu=250m, memory=100Mi",
        "usage.inplace.dev/nope": "cpu=1",  # no such container
        "other": "x",
    }
    assert simulated_usage(pod) == {"app": SimulatedUsage(250_000_000, 100 << 20)}
    pod.metadata.annotations = {"usage.inplace.dev/app": "cpu=2,memory=1Gi"}
    # Throttled at the CPU limit; held at the memory limit (no OOM kill simulated).
    assert simulated_usage(pod) == {"app": SimulatedUsage(500_000_000, 128 << 20)}
    pod.metadata.annotations = None
    assert simulated_usage(pod) == {}


@pytest.mark.parametrize("value", ["cpu", "gpu=1", "cpu=lots"])
def test_a_malformed_annotation_says_why(value: str) -> None:
    pod = factories.pod("default", "web")
    pod.metadata.annotations = {"usage.inplace.dev/app": value}
    with pytest.raises(UsageAnnotationError, match=r"usage\.inplace\.dev/app"):
        simulated_usage(pod)
