"""LimitRange admission: defaults on create, min / max / maxLimitRequestRatio for the Container
and Pod types on create and on `pods/resize`, with Kubernetes' exact messages.

Tables in the style of limitranger's admission_test.go. The resize rows follow KEP-1287's test
plan ("Setup a namespace with min and max LimitRange …": increase/decrease within bounds, cpu
above max, cpu below min, memory above max, memory below min).
"""

from __future__ import annotations

from typing import Any

import pytest

from schemas.k8s import LimitRange, Pod, ResourceQuota
from schemas.quantity import Quantity
from services.quota.admission import (
    LIMIT_RANGER_ANNOTATION,
    Allowed,
    Denied,
    admit,
    apply_limit_range_defaults,
    default_limit_range_item,
    validate_limit_ranges,
)
from tests.factories import container_json as ctr
from tests.factories import resource_list as rl

# --- builders -------------------------------------------------------------------------------------


def mkpod(
    containers: list[dict[str, Any]],
    *,
    init: list[dict[str, Any]] | None = None,
    overhead: dict[str, str] | None = None,
    name: str = "web",
) -> Pod:
    spec: dict[str, Any] = {"containers": containers}
    if init is not None:
        spec["initContainers"] = init
    if overhead is not None:
        spec["overhead"] = overhead
    return Pod.from_k8s({"metadata": {"name": name, "namespace": "ns"}, "spec": spec})


def limit_range(name: str, *items: dict[str, Any]) -> LimitRange:
    return LimitRange.from_k8s(
        {"metadata": {"name": name, "namespace": "ns"}, "spec": {"limits": list(items)}}
    )


def one(requests: dict[str, str] | None, limits: dict[str, str] | None) -> Pod:
    return mkpod([ctr("app", requests, limits)])


# A LimitRange like the Kubernetes docs' "cpu-mem-min-max-demo", with defaults.
BOUNDS = limit_range(
    "bounds",
    {
        "type": "Container",
        "default": {"cpu": "500m", "memory": "256Mi"},
        "defaultRequest": {"cpu": "100m", "memory": "128Mi"},
        "max": {"cpu": "1", "memory": "1Gi"},
        "min": {"cpu": "50m", "memory": "64Mi"},
    },
)

# --- defaults on create ---------------------------------------------------------------------------

# (name, limit ranges, pod, per container (name, requests, limits), annotation or None)
DefaultsCase = tuple[
    str,
    list[LimitRange],
    Pod,
    list[tuple[str, dict[str, str], dict[str, str]]],
    str | None,
]
DEFAULTS_CASES: list[DefaultsCase] = [
    (
        "no-resources-gets-every-default",
        [BOUNDS],
        one(None, None),
        [("app", {"cpu": "100m", "memory": "128Mi"}, {"cpu": "500m", "memory": "256Mi"})],
        "LimitRanger plugin set: cpu, memory request for container app; "
        "cpu, memory limit for container app",
    ),
    (
        "own-values-kept",
        [BOUNDS],
        one({"cpu": "200m"}, {"cpu": "800m"}),
        [("app", {"cpu": "200m", "memory": "128Mi"}, {"cpu": "800m", "memory": "256Mi"})],
        "LimitRanger plugin set: memory request for container app; memory limit for container app",
    ),
    (
        "limit-without-request-defaults-the-request-to-the-limit",
        [BOUNDS],
        one(None, {"cpu": "800m", "memory": "512Mi"}),
        [("app", {"cpu": "800m", "memory": "512Mi"}, {"cpu": "800m", "memory": "512Mi"})],
        None,
    ),
    (
        "fully-specified-pod-untouched",
        [BOUNDS],
        one({"cpu": "200m", "memory": "128Mi"}, {"cpu": "200m", "memory": "128Mi"}),
        [("app", {"cpu": "200m", "memory": "128Mi"}, {"cpu": "200m", "memory": "128Mi"})],
        None,
    ),
    (
        "init-containers-too",
        [BOUNDS],
        mkpod(
            [ctr("app", {"cpu": "100m", "memory": "128Mi"}, {"cpu": "500m", "memory": "256Mi"})],
            init=[ctr("setup")],
        ),
        [
            ("app", {"cpu": "100m", "memory": "128Mi"}, {"cpu": "500m", "memory": "256Mi"}),
            ("setup", {"cpu": "100m", "memory": "128Mi"}, {"cpu": "500m", "memory": "256Mi"}),
        ],
        "LimitRanger plugin set: cpu, memory request for init container setup; "
        "cpu, memory limit for init container setup",
    ),
    (
        "default-alone-also-defaults-the-request",
        [limit_range("d", {"type": "Container", "default": {"cpu": "300m"}})],
        one(None, None),
        [("app", {"cpu": "300m"}, {"cpu": "300m"})],
        "LimitRanger plugin set: cpu request for container app; cpu limit for container app",
    ),
    (
        "max-alone-defaults-the-limit",
        [limit_range("m", {"type": "Container", "max": {"cpu": "2"}})],
        one(None, None),
        [("app", {"cpu": "2"}, {"cpu": "2"})],
        "LimitRanger plugin set: cpu request for container app; cpu limit for container app",
    ),
    (
        "min-alone-defaults-the-request",
        [limit_range("m", {"type": "Container", "min": {"memory": "64Mi"}})],
        one(None, None),
        [("app", {"memory": "64Mi"}, {})],
        "LimitRanger plugin set: memory request for container app",
    ),
    (
        "pod-items-give-no-defaults",
        [limit_range("p", {"type": "Pod", "max": {"cpu": "4"}})],
        one({"cpu": "1"}, {"cpu": "1"}),
        [("app", {"cpu": "1"}, {"cpu": "1"})],
        None,
    ),
]


@pytest.mark.parametrize(
    ("ranges", "pod", "expected", "annotation"),
    [case[1:] for case in DEFAULTS_CASES],
    ids=[case[0] for case in DEFAULTS_CASES],
)
def test_defaults_on_create(
    ranges: list[LimitRange],
    pod: Pod,
    expected: list[tuple[str, dict[str, str], dict[str, str]]],
    annotation: str | None,
) -> None:
    before = pod.model_copy(deep=True)
    outcome = admit([], ranges, [], "CREATE", None, pod)
    assert pod == before  # admission patches a copy, never what it was given
    assert isinstance(outcome, Allowed)
    patched = outcome.pod
    containers = [*(patched.spec.init_containers or []), *patched.spec.containers]
    got = {c.name: (c.resources.requests or {}, c.resources.limits or {}) for c in containers}
    assert got == {name: (rl(**req), rl(**lim)) for name, req, lim in expected}
    assert (patched.metadata.annotations or {}).get(LIMIT_RANGER_ANNOTATION) == annotation


def test_defaulting_is_idempotent() -> None:
    once = apply_limit_range_defaults(one(None, None), [BOUNDS])
    assert apply_limit_range_defaults(once, [BOUNDS]) == once


def test_limit_range_item_defaulting() -> None:
    item = default_limit_range_item(
        limit_range(
            "x", {"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "64Mi"}}
        ).spec.limits[0]
    )
    assert (item.default, item.default_request) == (
        rl(cpu="2"),
        {"cpu": Quantity("2"), "memory": Quantity("64Mi")},
    )


# --- validation -----------------------------------------------------------------------------------

RATIO = limit_range("ratio", {"type": "Container", "maxLimitRequestRatio": {"cpu": "2"}})
POD_MAX = limit_range("pod", {"type": "Pod", "max": {"cpu": "1", "memory": "1Gi"}})

VALIDATION_CASES: list[tuple[str, list[LimitRange], Pod, str | None]] = [
    (
        "within-bounds",
        [BOUNDS],
        one({"cpu": "100m", "memory": "128Mi"}, {"cpu": "1", "memory": "1Gi"}),
        None,
    ),
    (
        "cpu-limit-above-max",
        [BOUNDS],
        one({"cpu": "500m", "memory": "128Mi"}, {"cpu": "2", "memory": "256Mi"}),
        "maximum cpu usage per Container is 1, but limit is 2",
    ),
    (
        "memory-request-below-min",
        [BOUNDS],
        one({"cpu": "100m", "memory": "32Mi"}, {"cpu": "500m", "memory": "256Mi"}),
        "minimum memory usage per Container is 64Mi, but request is 32Mi",
    ),
    (
        "limit-below-min",
        [limit_range("min", {"type": "Container", "min": {"cpu": "100m"}})],
        one({"cpu": "100m"}, {"cpu": "50m"}),
        "minimum cpu usage per Container is 100m, but limit is 50m",
    ),
    (
        "no-request-under-a-min",
        [limit_range("min", {"type": "Container", "min": {"cpu": "100m"}})],
        one(None, None),
        "minimum cpu usage per Container is 100m.  No request is specified",
    ),
    (
        "no-limit-under-a-max",
        [limit_range("max", {"type": "Container", "max": {"memory": "1Gi"}})],
        one({"memory": "128Mi"}, None),
        "maximum memory usage per Container is 1Gi.  No limit is specified",
    ),
    (
        "request-above-max",
        [limit_range("max", {"type": "Container", "max": {"cpu": "1"}})],
        # Invalid as a pod (request > limit), but LimitRanger reports it in its own words.
        one({"cpu": "2"}, {"cpu": "1"}),
        "maximum cpu usage per Container is 1, but request is 2",
    ),
    (
        "several-violations-in-brackets",
        [BOUNDS],
        one({"cpu": "500m", "memory": "32Mi"}, {"cpu": "2", "memory": "256Mi"}),
        "[minimum memory usage per Container is 64Mi, but request is 32Mi, "
        "maximum cpu usage per Container is 1, but limit is 2]",
    ),
    (
        "same-violation-twice-said-once",
        [BOUNDS],
        mkpod(
            [
                ctr("a", {"cpu": "500m", "memory": "128Mi"}, {"cpu": "2", "memory": "256Mi"}),
                ctr("b", {"cpu": "500m", "memory": "128Mi"}, {"cpu": "2", "memory": "256Mi"}),
            ]
        ),
        "maximum cpu usage per Container is 1, but limit is 2",
    ),
    (
        "init-containers-bounded-too",
        [BOUNDS],
        mkpod(
            [ctr("app", {"cpu": "100m", "memory": "128Mi"}, {"cpu": "1", "memory": "1Gi"})],
            init=[ctr("setup", {"cpu": "100m", "memory": "128Mi"}, {"cpu": "3", "memory": "1Gi"})],
        ),
        "maximum cpu usage per Container is 1, but limit is 3",
    ),
    ("ratio-within", [RATIO], one({"cpu": "500m"}, {"cpu": "1"}), None),
    (
        "ratio-above",
        [RATIO],
        one({"cpu": "250m"}, {"cpu": "1"}),
        "cpu max limit to request ratio per Container is 2, but provided ratio is 4.000000",
    ),
    (
        "ratio-fractional",
        [RATIO],
        one({"cpu": "300m"}, {"cpu": "1"}),
        "cpu max limit to request ratio per Container is 2, but provided ratio is 3.333333",
    ),
    (
        "ratio-without-request",
        [RATIO],
        one({"cpu": "0"}, {"cpu": "1"}),
        "cpu max limit to request ratio per Container is 2, but no request is specified or "
        "request is 0",
    ),
    (
        "ratio-without-limit",
        [RATIO],
        one({"cpu": "100m"}, None),
        "cpu max limit to request ratio per Container is 2, but no limit is specified or "
        "limit is 0",
    ),
    (
        "pod-max-sums-the-containers",
        [POD_MAX],
        mkpod(
            [
                ctr("a", {"cpu": "600m", "memory": "128Mi"}, {"cpu": "600m", "memory": "128Mi"}),
                ctr("b", {"cpu": "600m", "memory": "128Mi"}, {"cpu": "600m", "memory": "128Mi"}),
            ]
        ),
        "maximum cpu usage per Pod is 1, but limit is 1200m",
    ),
    (
        "pod-max-counts-sidecars-not-overhead",
        [POD_MAX],
        mkpod(
            [ctr("app", {"cpu": "700m", "memory": "512Mi"}, {"cpu": "700m", "memory": "512Mi"})],
            init=[
                ctr(
                    "proxy",
                    {"cpu": "300m", "memory": "512Mi"},
                    {"cpu": "300m", "memory": "512Mi"},
                    sidecar=True,
                )
            ],
            overhead={"cpu": "500m", "memory": "512Mi"},
        ),
        None,
    ),
    (
        "pod-min-request",
        [limit_range("pod-min", {"type": "Pod", "min": {"memory": "256Mi"}})],
        one({"memory": "128Mi"}, None),
        "minimum memory usage per Pod is 256Mi, but request is 128Mi",
    ),
    (
        "first-limit-range-by-name-speaks",
        [
            limit_range("b-cpu", {"type": "Container", "max": {"cpu": "100m"}}),
            limit_range("a-memory", {"type": "Container", "max": {"memory": "64Mi"}}),
        ],
        one({"cpu": "200m", "memory": "128Mi"}, {"cpu": "200m", "memory": "128Mi"}),
        "maximum memory usage per Container is 64Mi, but limit is 128Mi",
    ),
    (
        "pvc-items-ignored-for-pods",
        [limit_range("pvc", {"type": "PersistentVolumeClaim", "max": {"storage": "1Gi"}})],
        one(None, None),
        None,
    ),
]


@pytest.mark.parametrize(
    ("ranges", "pod", "error"),
    [case[1:] for case in VALIDATION_CASES],
    ids=[case[0] for case in VALIDATION_CASES],
)
def test_validation(ranges: list[LimitRange], pod: Pod, error: str | None) -> None:
    ordered = sorted(ranges, key=lambda lr: lr.metadata.name or "")
    assert validate_limit_ranges(ordered, pod) == error


def test_create_denial_is_forbidden_with_the_pod_name() -> None:
    outcome = admit(
        [], [BOUNDS], [], "CREATE", None, one({"cpu": "500m"}, {"cpu": "2", "memory": "2Gi"})
    )
    assert isinstance(outcome, Denied)
    assert (outcome.message, outcome.name) == (
        'pods "web" is forbidden: [maximum cpu usage per Container is 1, but limit is 2, '
        "maximum memory usage per Container is 1Gi, but limit is 2Gi]",
        "web",
    )


# --- the facts of a refusal, as data --------------------------------------------------------------

CPU_RATIO = limit_range("ratio", {"type": "Container", "maxLimitRequestRatio": {"cpu": "2"}})
Fact = tuple[str, str, str, str, str | None, str | None]  # resource per bound enforced field actual
FACTS_CASES: list[tuple[str, list[LimitRange], Pod, list[Fact]]] = [
    (
        "max-limit",
        [BOUNDS],
        one({"cpu": "500m"}, {"cpu": "2", "memory": "256Mi"}),
        [("cpu", "Container", "maximum", "1", "limit", "2")],
    ),
    (
        "min-request",
        [BOUNDS],
        one({"cpu": "20m"}, {"cpu": "500m"}),
        [("cpu", "Container", "minimum", "50m", "request", "20m")],
    ),
    (
        "pod-max-without-limit",
        [limit_range("pod-max", {"type": "Pod", "max": {"memory": "1Gi"}})],
        one({"memory": "128Mi"}, None),
        [("memory", "Pod", "maximum", "1Gi", None, None)],
    ),
    (
        "init-container-bound",
        [BOUNDS],
        mkpod([ctr("app")], init=[ctr("setup", {"memory": "32Mi"}, {"memory": "128Mi"})]),
        [("memory", "Container", "minimum", "64Mi", "request", "32Mi")],
    ),
    (
        "pod-min-without-request",
        [limit_range("pod-min", {"type": "Pod", "min": {"memory": "64Mi"}})],
        one({"cpu": "100m"}, None),
        [("memory", "Pod", "minimum", "64Mi", None, None)],
    ),
    (
        "ratio",
        [CPU_RATIO],
        one({"cpu": "100m"}, {"cpu": "400m"}),
        [("cpu", "Container", "maxLimitRequestRatio", "2", "ratio", "4.000000")],
    ),
    (
        "ratio-request-zero",
        [CPU_RATIO],
        one({"cpu": "0"}, {"cpu": "400m"}),
        [("cpu", "Container", "maxLimitRequestRatio", "2", None, None)],
    ),
    (
        "two-bounds-in-message-order",
        [BOUNDS],
        one({"cpu": "500m"}, {"cpu": "2", "memory": "2Gi"}),
        [
            ("cpu", "Container", "maximum", "1", "limit", "2"),
            ("memory", "Container", "maximum", "1Gi", "limit", "2Gi"),
        ],
    ),
    (
        "same-words-told-once",
        [BOUNDS],
        mkpod([ctr("a", {"cpu": "1"}, {"cpu": "2"}), ctr("b", {"cpu": "1"}, {"cpu": "2"})]),
        [("cpu", "Container", "maximum", "1", "limit", "2")],
    ),
]


@pytest.mark.parametrize(
    ("ranges", "pod", "expected"),
    [case[1:] for case in FACTS_CASES],
    ids=[case[0] for case in FACTS_CASES],
)
def test_denial_facts_say_what_the_message_says(
    ranges: list[LimitRange], pod: Pod, expected: list[Fact]
) -> None:
    outcome = admit([], ranges, [], "CREATE", None, pod)
    assert isinstance(outcome, Denied)
    facts = outcome.facts()
    assert facts is not None and facts.quota is None and facts.limit_range is not None
    assert [
        (f.resource, f.per, f.bound, str(f.enforced), f.field, f.actual) for f in facts.limit_range
    ] == expected
    # One violation per phrase of the message, in its order.
    words = [v.message for v in outcome.limit_range]
    assert outcome.message == 'pods "web" is forbidden: ' + (
        words[0] if len(words) == 1 else "[" + ", ".join(words) + "]"
    )


# --- resize (KEP-1287 test plan) ------------------------------------------------------------------

RUNNING = one({"cpu": "200m", "memory": "256Mi"}, {"cpu": "500m", "memory": "512Mi"})


def resize_to(requests: dict[str, str], limits: dict[str, str]) -> Pod:
    new = RUNNING.model_copy(deep=True)
    new.spec.containers[0].resources.requests = rl(**requests)
    new.spec.containers[0].resources.limits = rl(**limits)
    return new


RESIZE_CASES: list[tuple[str, Pod, str | None]] = [
    (
        "increase-cpu-within-bounds",
        resize_to({"cpu": "400m", "memory": "256Mi"}, {"cpu": "1", "memory": "512Mi"}),
        None,
    ),
    (
        "decrease-cpu-within-bounds",
        resize_to({"cpu": "100m", "memory": "256Mi"}, {"cpu": "200m", "memory": "512Mi"}),
        None,
    ),
    (
        "increase-cpu-above-max",
        resize_to({"cpu": "400m", "memory": "256Mi"}, {"cpu": "2", "memory": "512Mi"}),
        'pods "web" is forbidden: maximum cpu usage per Container is 1, but limit is 2',
    ),
    (
        "decrease-cpu-below-min",
        resize_to({"cpu": "20m", "memory": "256Mi"}, {"cpu": "20m", "memory": "512Mi"}),
        'pods "web" is forbidden: minimum cpu usage per Container is 50m, but request is 20m',
    ),
    (
        "increase-memory-above-max",
        resize_to({"cpu": "200m", "memory": "256Mi"}, {"cpu": "500m", "memory": "2Gi"}),
        'pods "web" is forbidden: maximum memory usage per Container is 1Gi, but limit is 2Gi',
    ),
    (
        "decrease-memory-below-min",
        resize_to({"cpu": "200m", "memory": "32Mi"}, {"cpu": "500m", "memory": "32Mi"}),
        'pods "web" is forbidden: minimum memory usage per Container is 64Mi, but request is 32Mi',
    ),
]


@pytest.mark.parametrize(
    ("resized", "denial"),
    [case[1:] for case in RESIZE_CASES],
    ids=[case[0] for case in RESIZE_CASES],
)
def test_resize_against_limit_range(resized: Pod, denial: str | None) -> None:
    outcome = admit([], [BOUNDS], [RUNNING], "RESIZE", RUNNING, resized)
    if denial is None:
        assert outcome == Allowed(resized)  # a resize is never defaulted
    else:
        assert isinstance(outcome, Denied)
        assert outcome.message == denial


def test_resize_gets_no_defaults() -> None:
    # Without defaulting, a container that never set a memory limit is checked as it is.
    bare = one({"cpu": "100m"}, {"cpu": "200m"})
    memory_max = limit_range("mem", {"type": "Container", "max": {"memory": "1Gi"}})
    outcome = admit([], [memory_max], [bare], "RESIZE", bare, one({"cpu": "150m"}, {"cpu": "200m"}))
    assert isinstance(outcome, Denied)
    assert outcome.message == (
        'pods "web" is forbidden: maximum memory usage per Container is 1Gi.  No limit is specified'
    )


def test_limit_range_then_quota() -> None:
    # LimitRanger speaks first; quota only sees pods LimitRanger let through (and defaulted).
    tight = ResourceQuota.from_k8s(
        {"metadata": {"name": "q", "namespace": "ns"}, "spec": {"hard": {"requests.cpu": "50m"}}}
    )
    denied = admit([tight], [BOUNDS], [], "CREATE", None, one(None, None))
    assert isinstance(denied, Denied)
    assert denied.message == (
        'pods "web" is forbidden: exceeded quota: q, requested: requests.cpu=100m, '
        "used: requests.cpu=0, limited: requests.cpu=50m"
    )
    too_big = admit([tight], [BOUNDS], [], "CREATE", None, one(None, {"cpu": "2"}))
    assert isinstance(too_big, Denied)
    assert too_big.message == (
        'pods "web" is forbidden: maximum cpu usage per Container is 1, but limit is 2'
    )
