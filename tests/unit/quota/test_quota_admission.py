"""ResourceQuota: what a pod charges (KEP-1287 "Resource Quota") and admission decisions with
Kubernetes' exact messages, for pod create and for `pods/resize`.

Tables in the style of the resourcequota admission tests: every row is named, with its input and
the exact expected outcome. The resize rows follow KEP-1287's test plan ("Resource Quota and
Limit Ranges": within quota / exceeding quota, cpu only, memory only, both).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from schemas.admission import QuotaFacts
from schemas.k8s import Pod, ResourceList, ResourceQuota, Status, StatusDetails
from schemas.quantity import Quantity
from services.quota.admission import Allowed, Denied, Operation, admit
from services.quota.usage import is_charged, pod_usage, quota_used
from tests.factories import container_json as ctr

# --- builders -------------------------------------------------------------------------------------


def rl(**values: str) -> ResourceList:
    return {name: Quantity.parse(value) for name, value in values.items()}


def usage(**values: str) -> ResourceList:
    """Quota usage from keyword args; `_` stands for `.` and `__` for `/` in names."""
    return {
        name.replace("__", "/").replace("_", "."): Quantity.parse(value)
        for name, value in values.items()
    }


def mkpod(
    name: str,
    containers: list[dict[str, Any]],
    *,
    init: list[dict[str, Any]] | None = None,
    overhead: dict[str, str] | None = None,
    statuses: list[dict[str, Any]] | None = None,
    resize: str | None = None,
    phase: str | None = "Running",
    priority_class: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> Pod:
    spec: dict[str, Any] = {"containers": containers, "nodeName": "n"}
    if init is not None:
        spec["initContainers"] = init
    if overhead is not None:
        spec["overhead"] = overhead
    if priority_class is not None:
        spec["priorityClassName"] = priority_class
    status: dict[str, Any] = {}
    if phase is not None:
        status["phase"] = phase
    if statuses is not None:
        status["containerStatuses"] = statuses
    if resize is not None:
        status["resize"] = resize
    meta = {"name": name, "namespace": "ns", "resourceVersion": "1", **(metadata or {})}
    return Pod.from_k8s({"metadata": meta, "spec": spec, "status": status})


def running(
    name: str,
    requests: dict[str, str],
    limits: dict[str, str],
    *,
    desired: tuple[dict[str, str], dict[str, str]] | None = None,
    resize: str | None = None,
) -> Pod:
    """A running one-container pod whose kubelet granted `requests`/`limits`; `desired` is a
    spec the user asked for since (a pending resize)."""
    spec_requests, spec_limits = desired if desired is not None else (requests, limits)
    status = {
        "name": "app",
        "allocatedResources": requests,
        "resources": {"requests": requests, "limits": limits},
    }
    return mkpod(name, [ctr("app", spec_requests, spec_limits)], statuses=[status], resize=resize)


def resized(pod: Pod, requests: dict[str, str], limits: dict[str, str]) -> Pod:
    """`pod` after the apiserver applied a resize: new spec, same status (now Proposed)."""
    new = pod.model_copy(deep=True)
    new.spec.containers[0].resources.requests = rl(**requests)
    new.spec.containers[0].resources.limits = rl(**limits)
    new.status.resize = "Proposed"
    return new


def quota(
    name: str,
    hard: dict[str, str],
    *,
    scopes: list[str] | None = None,
    status_hard: dict[str, str] | None = None,
) -> ResourceQuota:
    spec: dict[str, Any] = {"hard": hard}
    if scopes is not None:
        spec["scopes"] = scopes
    status: dict[str, Any] = {}
    if status_hard is not None:
        status["hard"] = status_hard
    return ResourceQuota.from_k8s(
        {"metadata": {"name": name, "namespace": "ns"}, "spec": spec, "status": status}
    )


# --- usage of one pod -----------------------------------------------------------------------------

G = {"cpu": "500m", "memory": "256Mi"}
USAGE_CASES: list[tuple[str, Pod, ResourceList]] = [
    (
        "guaranteed-pod",
        mkpod("p", [ctr("app", G, G)]),
        usage(
            count__pods="1",
            pods="1",
            cpu="500m",
            requests_cpu="500m",
            limits_cpu="500m",
            memory="256Mi",
            requests_memory="256Mi",
            limits_memory="256Mi",
        ),
    ),
    (
        "requests-only-charges-no-limits",
        mkpod("p", [ctr("app", {"cpu": "1"})]),
        usage(count__pods="1", pods="1", cpu="1", requests_cpu="1"),
    ),
    (
        "best-effort-charges-the-pod-only",
        mkpod("p", [ctr("app")]),
        usage(count__pods="1", pods="1"),
    ),
    (
        "proposed-upsize-charges-desired",
        running(
            "p", {"cpu": "1"}, {"cpu": "1"}, desired=({"cpu": "2"}, {"cpu": "2"}), resize="Proposed"
        ),
        usage(count__pods="1", pods="1", cpu="2", requests_cpu="2", limits_cpu="2"),
    ),
    (
        "downsize-charges-granted-until-applied",
        running(
            "p",
            {"cpu": "2"},
            {"cpu": "2"},
            desired=({"cpu": "1"}, {"cpu": "1"}),
            resize="InProgress",
        ),
        usage(count__pods="1", pods="1", cpu="2", requests_cpu="2", limits_cpu="2"),
    ),
    (
        "infeasible-charges-granted-only",
        running(
            "p",
            {"cpu": "1"},
            {"cpu": "1"},
            desired=({"cpu": "64"}, {"cpu": "64"}),
            resize="Infeasible",
        ),
        usage(count__pods="1", pods="1", cpu="1", requests_cpu="1", limits_cpu="1"),
    ),
    (
        "succeeded-pod-charges-only-its-object",
        mkpod("p", [ctr("app", G, G)], phase="Succeeded"),
        usage(count__pods="1"),
    ),
    (
        "failed-pod-charges-only-its-object",
        mkpod("p", [ctr("app", G, G)], phase="Failed"),
        usage(count__pods="1"),
    ),
    (
        "sidecar-init-and-overhead",
        mkpod(
            "p",
            [ctr("app", {"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"})],
            init=[
                ctr("proxy", {"cpu": "500m", "memory": "256Mi"}, {"cpu": "500m"}, sidecar=True),
                ctr("setup", {"cpu": "2", "memory": "128Mi"}),
            ],
            overhead={"cpu": "100m"},
        ),
        # requests: max(1 + 500m, 2 + 500m) + 100m; limits: 1 + 500m (+ overhead on non-zero)
        usage(
            count__pods="1",
            pods="1",
            cpu="2600m",
            requests_cpu="2600m",
            limits_cpu="1600m",
            memory="1280Mi",
            requests_memory="1280Mi",
            limits_memory="1Gi",
        ),
    ),
    (
        "hugepages-and-ephemeral-storage",
        mkpod("p", [ctr("app", {"hugepages-2Mi": "4Mi", "ephemeral-storage": "1Gi"})]),
        rl(
            **{
                "count/pods": "1",
                "pods": "1",
                "hugepages-2Mi": "4Mi",
                "requests.hugepages-2Mi": "4Mi",
                "ephemeral-storage": "1Gi",
                "requests.ephemeral-storage": "1Gi",
            }
        ),
    ),
]


@pytest.mark.parametrize(
    ("pod", "expected"),
    [case[1:] for case in USAGE_CASES],
    ids=[case[0] for case in USAGE_CASES],
)
def test_pod_usage(pod: Pod, expected: ResourceList) -> None:
    assert pod_usage(pod) == expected


def test_pods_stuck_terminating_stop_counting_after_grace() -> None:
    deleted = datetime(2024, 1, 1, tzinfo=UTC)
    pod = mkpod(
        "p",
        [ctr("app", G, G)],
        metadata={"deletionTimestamp": "2024-01-01T00:00:00Z", "deletionGracePeriodSeconds": 30},
    )
    assert is_charged(pod, deleted + timedelta(seconds=10))
    assert not is_charged(pod, deleted + timedelta(seconds=31))
    assert is_charged(pod)  # without a clock nothing expires
    assert pod_usage(pod, deleted + timedelta(minutes=5)) == usage(count__pods="1")


def test_quota_used_reports_every_hard_resource() -> None:
    q = quota("compute", {"requests.cpu": "4", "limits.memory": "4Gi", "services": "3"})
    pods = [mkpod("a", [ctr("app", {"cpu": "1"})]), mkpod("b", [ctr("app", {"cpu": "250m"})])]
    assert quota_used(q, pods) == usage(requests_cpu="1250m", limits_memory="0")


# --- admission ------------------------------------------------------------------------------------

COMPUTE = quota(
    "compute",
    {
        "requests.cpu": "2",
        "requests.memory": "2Gi",
        "limits.cpu": "4",
        "limits.memory": "4Gi",
        "pods": "3",
    },
)
WEB = running("web", {"cpu": "500m", "memory": "512Mi"}, {"cpu": "1", "memory": "1Gi"})
API = running("api", {"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"})


def new(name: str, requests: dict[str, str] | None, limits: dict[str, str] | None) -> Pod:
    return mkpod(name, [ctr("app", requests, limits)], phase=None)


# (name, quotas, namespace pods, operation, old pod, new pod, expected denial or None)
AdmissionCase = tuple[str, list[ResourceQuota], list[Pod], Operation, Pod | None, Pod, str | None]
ADMISSION_CASES: list[AdmissionCase] = [
    (
        "create-within-quota",
        [COMPUTE],
        [WEB],
        "CREATE",
        None,
        new("new", {"cpu": "1", "memory": "1Gi"}, {"cpu": "2", "memory": "2Gi"}),
        None,
    ),
    (
        "create-exceeding-requests-cpu",
        [COMPUTE],
        [WEB],
        "CREATE",
        None,
        new("new", {"cpu": "2", "memory": "256Mi"}, {"cpu": "2", "memory": "256Mi"}),
        'pods "new" is forbidden: exceeded quota: compute, requested: requests.cpu=2, '
        "used: requests.cpu=500m, limited: requests.cpu=2",
    ),
    (
        "create-exceeding-everything-lists-only-what-exceeds",
        [COMPUTE],
        [WEB],
        "CREATE",
        None,
        new("new", {"cpu": "2", "memory": "2Gi"}, {"cpu": "4", "memory": "4Gi"}),
        'pods "new" is forbidden: exceeded quota: compute, '
        "requested: limits.cpu=4,limits.memory=4Gi,requests.cpu=2,requests.memory=2Gi, "
        "used: limits.cpu=1,limits.memory=1Gi,requests.cpu=500m,requests.memory=512Mi, "
        "limited: limits.cpu=4,limits.memory=4Gi,requests.cpu=2,requests.memory=2Gi",
    ),
    (
        "create-exceeding-pod-count",
        [quota("count", {"pods": "1"})],
        [WEB],
        "CREATE",
        None,
        new("new", None, None),
        'pods "new" is forbidden: exceeded quota: count, requested: pods=1, used: pods=1, '
        "limited: pods=1",
    ),
    (
        "create-exceeding-object-count",
        [quota("objects", {"count/pods": "1"})],
        [mkpod("done", [ctr("app")], phase="Succeeded")],
        "CREATE",
        None,
        new("new", None, None),
        'pods "new" is forbidden: exceeded quota: objects, requested: count/pods=1, '
        "used: count/pods=1, limited: count/pods=1",
    ),
    (
        "create-must-specify-limits",
        [COMPUTE],
        [],
        "CREATE",
        None,
        new("new", {"cpu": "1", "memory": "1Gi"}, None),
        'pods "new" is forbidden: failed quota: compute: must specify limits.cpu for: app; '
        "limits.memory for: app",
    ),
    (
        "create-must-specify-names-every-container",
        [quota("cm", {"cpu": "10", "memory": "10Gi"})],
        [],
        "CREATE",
        None,
        mkpod("new", [ctr("b", None, {"cpu": "1"}), ctr("a")], phase=None),
        'pods "new" is forbidden: failed quota: cm: must specify cpu for: a; memory for: a,b',
    ),
    (
        "create-generate-name-in-message",
        [quota("count", {"pods": "0"})],
        [],
        "CREATE",
        None,
        Pod.from_k8s(
            {
                "metadata": {"generateName": "web-", "namespace": "ns"},
                "spec": {"containers": [ctr("app")]},
            }
        ),
        'pods "web-" is forbidden: exceeded quota: count, requested: pods=1, used: pods=0, '
        "limited: pods=0",
    ),
    (
        "terminal-pods-free-their-quota",
        [COMPUTE],
        [WEB, mkpod("job", [ctr("app", {"cpu": "2"}, {"cpu": "2"})], phase="Succeeded")],
        "CREATE",
        None,
        new("new", {"cpu": "1500m", "memory": "1Gi"}, {"cpu": "2", "memory": "2Gi"}),
        None,
    ),
    (
        "best-effort-scope-ignores-burstable-pods",
        [quota("be", {"pods": "1"}, scopes=["BestEffort"])],
        [mkpod("idle", [ctr("app")])],
        "CREATE",
        None,
        new("new", {"cpu": "1"}, None),
        None,
    ),
    (
        "best-effort-scope-counts-best-effort-pods",
        [quota("be", {"pods": "1"}, scopes=["BestEffort"])],
        [mkpod("idle", [ctr("app")]), WEB],
        "CREATE",
        None,
        new("new", None, None),
        'pods "new" is forbidden: exceeded quota: be, requested: pods=1, used: pods=1, '
        "limited: pods=1",
    ),
    (
        "not-best-effort-scope-skips-best-effort",
        [quota("nbe", {"pods": "1"}, scopes=["NotBestEffort"])],
        [WEB],
        "CREATE",
        None,
        new("new", None, None),
        None,
    ),
    (
        "priority-class-scope",
        [quota("prio", {"pods": "0"}, scopes=["PriorityClass"])],
        [],
        "CREATE",
        None,
        mkpod("new", [ctr("app")], priority_class="high", phase=None),
        'pods "new" is forbidden: exceeded quota: prio, requested: pods=1, used: pods=0, '
        "limited: pods=0",
    ),
    (
        "terminating-scope-matches-nothing-here",
        [quota("term", {"pods": "0"}, scopes=["Terminating"])],
        [],
        "CREATE",
        None,
        new("new", None, None),
        None,
    ),
    (
        "quota-on-other-kinds-ignored",
        [quota("svc", {"services": "0"})],
        [],
        "CREATE",
        None,
        new("new", None, None),
        None,
    ),
    (
        "quotas-checked-by-name",
        [quota("b-quota", {"pods": "1"}), quota("a-quota", {"pods": "1"})],
        [WEB],
        "CREATE",
        None,
        new("new", None, None),
        'pods "new" is forbidden: exceeded quota: a-quota, requested: pods=1, used: pods=1, '
        "limited: pods=1",
    ),
    (
        "status-hard-is-what-is-enforced",
        [quota("q", {"requests.cpu": "10"}, status_hard={"requests.cpu": "1"})],
        [WEB],
        "CREATE",
        None,
        new("new", {"cpu": "600m"}, None),
        'pods "new" is forbidden: exceeded quota: q, requested: requests.cpu=600m, '
        "used: requests.cpu=500m, limited: requests.cpu=1",
    ),
    # KEP-1287 test plan: resize within quota. Used: requests 1500m/1536Mi, limits 2/2Gi.
    (
        "resize-within-quota-cpu-only",
        [COMPUTE],
        [WEB, API],
        "RESIZE",
        WEB,
        resized(WEB, {"cpu": "1", "memory": "512Mi"}, {"cpu": "1", "memory": "1Gi"}),
        None,
    ),
    (
        "resize-within-quota-memory-only",
        [COMPUTE],
        [WEB, API],
        "RESIZE",
        WEB,
        resized(WEB, {"cpu": "500m", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}),
        None,
    ),
    (
        "resize-within-quota-cpu-and-memory",
        [COMPUTE],
        [WEB, API],
        "RESIZE",
        WEB,
        resized(WEB, {"cpu": "1", "memory": "1Gi"}, {"cpu": "2", "memory": "2Gi"}),
        None,
    ),
    # KEP-1287 test plan: resize exceeding quota; only the delta is requested.
    (
        "resize-exceeding-quota-cpu-only",
        [COMPUTE],
        [WEB, API],
        "RESIZE",
        WEB,
        resized(WEB, {"cpu": "1500m", "memory": "512Mi"}, {"cpu": "2", "memory": "1Gi"}),
        'pods "web" is forbidden: exceeded quota: compute, requested: requests.cpu=1, '
        "used: requests.cpu=1500m, limited: requests.cpu=2",
    ),
    (
        "resize-exceeding-quota-memory-only",
        [COMPUTE],
        [WEB, API],
        "RESIZE",
        WEB,
        resized(WEB, {"cpu": "500m", "memory": "1536Mi"}, {"cpu": "1", "memory": "1536Mi"}),
        'pods "web" is forbidden: exceeded quota: compute, requested: requests.memory=1Gi, '
        "used: requests.memory=1536Mi, limited: requests.memory=2Gi",
    ),
    (
        "resize-exceeding-quota-cpu-and-memory",
        [COMPUTE],
        [WEB, API],
        "RESIZE",
        WEB,
        resized(WEB, {"cpu": "1500m", "memory": "1536Mi"}, {"cpu": "2", "memory": "2Gi"}),
        'pods "web" is forbidden: exceeded quota: compute, '
        "requested: requests.cpu=1,requests.memory=1Gi, "
        "used: requests.cpu=1500m,requests.memory=1536Mi, "
        "limited: requests.cpu=2,requests.memory=2Gi",
    ),
    (
        "resize-shrink-allowed-even-over-quota",
        [quota("tight", {"requests.cpu": "1"})],
        [WEB, API],
        "RESIZE",
        WEB,
        resized(WEB, {"cpu": "250m", "memory": "512Mi"}, {"cpu": "1", "memory": "1Gi"}),
        None,
    ),
    (
        "resize-still-subject-to-must-specify",
        [COMPUTE],
        [running("web", {"cpu": "500m"}, {"cpu": "1"}), API],
        "RESIZE",
        running("web", {"cpu": "500m"}, {"cpu": "1"}),
        resized(running("web", {"cpu": "500m"}, {"cpu": "1"}), {"cpu": "600m"}, {"cpu": "1"}),
        'pods "web" is forbidden: failed quota: compute: must specify limits.memory for: app; '
        "requests.memory for: app",
    ),
    (
        "resize-charged-against-a-pending-upsize",
        [quota("cpu", {"requests.cpu": "2"})],
        [running("web", {"cpu": "500m"}, {"cpu": "1"}, desired=({"cpu": "1"}, {"cpu": "1"})), API],
        "RESIZE",
        running("web", {"cpu": "500m"}, {"cpu": "1"}, desired=({"cpu": "1"}, {"cpu": "1"})),
        resized(
            running("web", {"cpu": "500m"}, {"cpu": "1"}),
            {"cpu": "1200m"},
            {"cpu": "2"},
        ),
        'pods "web" is forbidden: exceeded quota: cpu, requested: requests.cpu=200m, '
        "used: requests.cpu=2, limited: requests.cpu=2",
    ),
    (
        "resize-back-from-pending-upsize-is-free",
        [quota("tight", {"requests.cpu": "1"})],
        [running("web", {"cpu": "500m"}, {"cpu": "1"}, desired=({"cpu": "3"}, {"cpu": "3"}))],
        "RESIZE",
        running("web", {"cpu": "500m"}, {"cpu": "1"}, desired=({"cpu": "3"}, {"cpu": "3"})),
        resized(running("web", {"cpu": "500m"}, {"cpu": "1"}), {"cpu": "500m"}, {"cpu": "1"}),
        None,
    ),
    (
        "resize-after-infeasible-charges-from-granted",
        [quota("q", {"requests.cpu": "1"})],
        [
            running(
                "web",
                {"cpu": "500m"},
                {"cpu": "1"},
                desired=({"cpu": "8"}, {"cpu": "8"}),
                resize="Infeasible",
            )
        ],
        "RESIZE",
        running(
            "web",
            {"cpu": "500m"},
            {"cpu": "1"},
            desired=({"cpu": "8"}, {"cpu": "8"}),
            resize="Infeasible",
        ),
        resized(running("web", {"cpu": "500m"}, {"cpu": "1"}), {"cpu": "1"}, {"cpu": "1"}),
        None,
    ),
    (
        "resize-pods-count-unchanged",
        [quota("count", {"pods": "2"})],
        [WEB, API],
        "RESIZE",
        WEB,
        resized(WEB, {"cpu": "600m", "memory": "512Mi"}, {"cpu": "1", "memory": "1Gi"}),
        None,
    ),
]


@pytest.mark.parametrize(
    ("quotas", "pods", "operation", "old", "pod", "denial"),
    [case[1:] for case in ADMISSION_CASES],
    ids=[case[0] for case in ADMISSION_CASES],
)
def test_quota_admission(
    quotas: list[ResourceQuota],
    pods: list[Pod],
    operation: Operation,
    old: Pod | None,
    pod: Pod,
    denial: str | None,
) -> None:
    outcome = admit(quotas, [], pods, operation, old, pod)
    if denial is None:
        assert isinstance(outcome, Allowed)
    else:
        assert isinstance(outcome, Denied)
        assert outcome.message == denial
        assert (outcome.code, outcome.reason) == (403, "Forbidden")
        # Every quota refusal carries its quota as data too, the one its message names.
        facts = outcome.facts()
        assert facts is not None and facts.quota is not None and facts.limit_range is None
        assert f" quota: {facts.quota.name}" in denial


def test_denied_is_a_kubernetes_status() -> None:
    outcome = admit([quota("count", {"pods": "0"})], [], [], "CREATE", None, new("new", None, None))
    assert isinstance(outcome, Denied)
    assert outcome.to_status() == Status(
        status="Failure",
        message='pods "new" is forbidden: exceeded quota: count, requested: pods=1, '
        "used: pods=0, limited: pods=0",
        reason="Forbidden",
        details=StatusDetails(name="new", kind="pods"),
        code=403,
    )
    assert outcome.to_status().to_k8s()["code"] == 403


def test_resize_needs_the_stored_pod() -> None:
    with pytest.raises(ValueError, match="old_pod"):
        admit([COMPUTE], [], [WEB], "RESIZE", None, WEB)


def test_second_of_two_resizes_sees_the_first() -> None:
    # Serialized per namespace, the second decision sees the first one's pod: only one of two
    # resizes that each fit alone gets through a quota that fits one.
    tight = quota("tight", {"requests.cpu": "2"})
    a = running("a", {"cpu": "500m"}, {"cpu": "1"})
    b = running("b", {"cpu": "500m"}, {"cpu": "1"})
    a_big = resized(a, {"cpu": "1200m"}, {"cpu": "2"})
    b_big = resized(b, {"cpu": "1200m"}, {"cpu": "2"})
    assert isinstance(admit([tight], [], [a, b], "RESIZE", a, b_big), Allowed)
    assert isinstance(admit([tight], [], [a, b], "RESIZE", a, a_big), Allowed)
    second = admit([tight], [], [a_big, b], "RESIZE", b, b_big)
    assert isinstance(second, Denied)
    assert second.message == (
        'pods "b" is forbidden: exceeded quota: tight, requested: requests.cpu=700m, '
        "used: requests.cpu=1700m, limited: requests.cpu=2"
    )
    facts = second.facts()
    assert facts is not None
    assert facts.to_k8s() == {
        "quota": {
            "name": "tight",
            "requested": {"requests.cpu": "700m"},
            "used": {"requests.cpu": "1700m"},
            "hard": {"requests.cpu": "2"},
        }
    }


def test_exceeded_quota_facts_are_the_exceeded_resources_only() -> None:
    # memory fits, cpu does not: the message and the facts name cpu alone.
    outcome = admit(
        [COMPUTE],
        [],
        [WEB, API],
        "CREATE",
        None,
        new("new", {"cpu": "1", "memory": "128Mi"}, {"cpu": "1", "memory": "128Mi"}),
    )
    assert isinstance(outcome, Denied) and outcome.facts() is not None
    assert outcome.message == (
        'pods "new" is forbidden: exceeded quota: compute, requested: requests.cpu=1, '
        "used: requests.cpu=1500m, limited: requests.cpu=2"
    )
    assert outcome.facts().to_k8s() == {  # type: ignore[union-attr]
        "quota": {
            "name": "compute",
            "requested": {"requests.cpu": "1"},
            "used": {"requests.cpu": "1500m"},
            "hard": {"requests.cpu": "2"},
        }
    }


def test_must_specify_facts_name_the_quota_only() -> None:
    outcome = admit([COMPUTE], [], [], "CREATE", None, new("new", {"cpu": "1"}, None))
    assert isinstance(outcome, Denied) and "failed quota: compute: must specify" in outcome.message
    facts = outcome.facts()
    assert facts is not None and facts.limit_range is None
    assert facts.quota == QuotaFacts(name="compute")
