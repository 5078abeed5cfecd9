"""Kubernetes-style tables for pod defaulting and validation (create, update, resize).

Each row is an input pod (or an old/new pair built from small helpers) and the exact error
strings Kubernetes' `field.Error.Error()` would print, in order.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from schemas.k8s import Container, Pod
from schemas.quantity import Quantity
from services.apiserver.fielderrors import (
    FieldError,
    Verbatim,
    aggregate,
    go_quote,
    invalid_status,
)
from services.apiserver.patching import apply_patch, strategic_merge
from services.apiserver.validation import (
    default_pod,
    resize_patch_base,
    resize_view,
    validate_pod_create,
    validate_pod_resize,
    validate_pod_update,
)
from tests.factories import LABEL_VALUE, NAME_PART

# Kubernetes' own texts (apimachinery util/validation), spelled out rather than imported.
DNS_LABEL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
DNS_SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
UPDATE_FORBIDDEN = (
    "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set "
    "to 1 if it was previously negative)\n"
)
QOS_CHANGE = "Pod QOS Class may not change as a result of resizing"
CPU_MEMORY_ONLY = "only cpu and memory resources are mutable"
C0 = "spec.containers[0].resources"
I0 = "spec.initContainers[0]"
INIT_FIXED = "resources for non-sidecar init containers are immutable"
SIDECAR_ONLY = "only cpu and memory resources for sidecar containers are mutable"


# --- builders -----------------------------------------------------------------------------------


def ctr(
    name: str = "c1",
    *,
    cpu: str | None = "500m",
    memory: str | None = "256Mi",
    requests: dict[str, Any] | None = None,
    limits: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A container; Guaranteed (requests == limits) unless requests/limits are given."""
    both = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    resources: dict[str, Any] = {}
    if requests is not None or both:
        resources["requests"] = dict(both) if requests is None else requests
    if limits is not None or both:
        resources["limits"] = dict(both) if limits is None else limits
    return {"name": name, "image": "nginx:1.27", "resources": resources, **extra}


def sidecar(name: str = "log", **kwargs: Any) -> dict[str, Any]:
    return ctr(name, cpu="100m", memory="64Mi", restartPolicy="Always", **kwargs)


def init(name: str = "setup", **kwargs: Any) -> dict[str, Any]:
    return ctr(name, cpu="100m", memory="64Mi", **kwargs)


def pod_dict(
    *containers: dict[str, Any],
    init_containers: list[dict[str, Any]] | None = None,
    metadata: dict[str, Any] | None = None,
    status: dict[str, Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "metadata": {"name": "web", "namespace": "default", "uid": "u-1", **(metadata or {})},
        "spec": {"containers": list(containers) or [ctr()], **spec},
    }
    if init_containers is not None:
        data["spec"]["initContainers"] = init_containers
    if status is not None:
        data["status"] = status
    return data


def make(*containers: dict[str, Any], **kwargs: Any) -> Pod:
    """A defaulted pod, as the apiserver stores it."""
    return default_pod(Pod.model_validate(pod_dict(*containers, **kwargs)))


def raw(*containers: dict[str, Any], **kwargs: Any) -> Pod:
    """A pod as a client sends it (not defaulted)."""
    return Pod.model_validate(pod_dict(*containers, **kwargs))


def patched(pod: Pod, patch: dict[str, Any]) -> Pod:
    """`pod` with a strategic merge patch applied (what kubectl patch sends)."""
    return Pod.model_validate(strategic_merge(pod.to_k8s(), patch))


def resources_patch(name: str = "c1", **resources: Any) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": name, "resources": resources}]}}


def texts(errors: list[FieldError]) -> list[str]:
    return [e.error() for e in errors]


RUNNING = {"running": {"startedAt": "2024-01-01T00:00:00Z"}}


def running_status(with_resources: bool, name: str = "c1") -> dict[str, Any]:
    status: dict[str, Any] = {"name": name, "state": RUNNING, "ready": True}
    if with_resources:
        status["resources"] = {"requests": {"cpu": "500m", "memory": "256Mi"}}
    return {"phase": "Running", "qosClass": "Guaranteed", "containerStatuses": [status]}


# --- field errors and the 422 body --------------------------------------------------------------

FIELD_ERROR_CASES: list[tuple[str, FieldError, str]] = [
    (
        "invalid string value is quoted",
        FieldError("FieldValueInvalid", f"{C0}.requests", "2", "must be x"),
        f'{C0}.requests: Invalid value: "2": must be x',
    ),
    (
        "required has no value",
        FieldError("FieldValueRequired", "metadata.name", "", "name or generateName is required"),
        "metadata.name: Required value: name or generateName is required",
    ),
    (
        "required without detail",
        FieldError("FieldValueRequired", "metadata.namespace"),
        "metadata.namespace: Required value",
    ),
    (
        "forbidden has no value",
        FieldError("FieldValueForbidden", "spec", "ignored", QOS_CHANGE),
        f"spec: Forbidden: {QOS_CHANGE}",
    ),
    (
        "a Stringer prints bare",
        FieldError("FieldValueNotSupported", "p", Verbatim("storage"), 'supported values: "cpu"'),
        'p: Unsupported value: storage: supported values: "cpu"',
    ),
    (
        "a quantity prints bare",
        FieldError("FieldValueInvalid", "p", Quantity("1500m"), "must be an integer"),
        "p: Invalid value: 1500m: must be an integer",
    ),
    (
        "duplicate without detail",
        FieldError("FieldValueDuplicate", "spec.containers[1].name", "c1"),
        'spec.containers[1].name: Duplicate value: "c1"',
    ),
    (
        "integers and booleans bare, None is null",
        FieldError("FieldValueInvalid", "p", 70000, "must be between 1 and 65535, inclusive"),
        "p: Invalid value: 70000: must be between 1 and 65535, inclusive",
    ),
    ("bool", FieldError("FieldValueInvalid", "p", True, "d"), "p: Invalid value: true: d"),
    ("null", FieldError("FieldValueInvalid", "p", None, "d"), "p: Invalid value: null: d"),
    (
        "too long has no value",
        FieldError(
            "FieldValueTooLong", "metadata.annotations", "x" * 5, "must have at most 3 bytes"
        ),
        "metadata.annotations: Too long: must have at most 3 bytes",
    ),
    (
        "Go escapes in quoted values",
        FieldError("FieldValueInvalid", "p", 'a"b\\c\n\x01é\u200b', "d"),
        'p: Invalid value: "a\\"b\\\\c\\n\\x01é\\u200b": d',
    ),
    ("root path", FieldError("FieldValueForbidden", "[]", "", "static"), "[]: Forbidden: static"),
]


@pytest.mark.parametrize(
    ("error", "text"),
    [c[1:] for c in FIELD_ERROR_CASES],
    ids=[c[0] for c in FIELD_ERROR_CASES],
)
def test_field_error_text(error: FieldError, text: str) -> None:
    assert error.error() == text
    assert str(error) == text
    assert text == f"{error.field}: {error.error_body()}"


def test_go_quote() -> None:
    assert go_quote("web") == '"web"'
    assert go_quote("\t\x7f\U0001f600\ud800") == '"\\t\\x7f\U0001f600\\ufffd"'


def test_invalid_status_single_error_has_no_brackets() -> None:
    err = FieldError("FieldValueInvalid", f"{C0}.requests", "2", "bad")
    status = invalid_status("Pod", "web", [err])
    assert status.to_k8s() == {
        "apiVersion": "v1",
        "kind": "Status",
        "metadata": {},
        "status": "Failure",
        "message": 'Pod "web" is invalid: spec.containers[0].resources.requests: Invalid value: '
        '"2": bad',
        "reason": "Invalid",
        "details": {
            "name": "web",
            "kind": "Pod",
            "causes": [
                {
                    "reason": "FieldValueInvalid",
                    "message": 'Invalid value: "2": bad',
                    "field": f"{C0}.requests",
                }
            ],
        },
        "code": 422,
    }


def test_invalid_status_lists_several_errors_and_dedupes_the_message() -> None:
    a = FieldError("FieldValueRequired", "metadata.name", "", "name or generateName is required")
    b = FieldError("FieldValueForbidden", "spec", "", QOS_CHANGE)
    status = invalid_status("Pod", "", [a, b, a])
    assert status.message == (
        'Pod "" is invalid: [metadata.name: Required value: name or generateName is required, '
        f"spec: Forbidden: {QOS_CHANGE}]"
    )
    assert status.details is not None and status.details.name is None
    assert [c.field for c in status.details.causes or []] == [
        "metadata.name",
        "spec",
        "metadata.name",
    ]
    assert aggregate([]) == "[]"
    assert invalid_status("Pod", "web", []).message == 'Pod "web" is invalid'


# --- defaulting ---------------------------------------------------------------------------------


def test_default_pod_follows_kubernetes_defaults() -> None:
    client = raw(
        ctr(
            cpu=None,
            memory=None,
            limits={"cpu": "1", "memory": "1Gi"},
            requests={"memory": "512Mi"},
        ),
        ctr("c2", cpu=None, memory=None, image="busybox", ports=[{"containerPort": 80}]),
        init_containers=[ctr("i", cpu=None, memory=None, limits={"cpu": "1.5m"})],
    )
    before = client.to_k8s()
    pod = default_pod(client)
    assert client.to_k8s() == before, "the input is not modified"
    out = pod.to_k8s()
    c1, c2 = out["spec"]["containers"]
    assert c1["resources"] == {
        "limits": {"cpu": "1", "memory": "1Gi"},
        "requests": {"memory": "512Mi", "cpu": "1"},
    }
    assert c1["imagePullPolicy"] == "IfNotPresent"
    assert c2["imagePullPolicy"] == "Always"  # untagged image: latest
    assert c2["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert c2["resources"] == {}  # no limits: no requests invented
    assert "resizePolicy" not in c1  # Kubernetes no longer defaults it
    assert out["spec"]["initContainers"][0]["resources"] == {
        "limits": {"cpu": "2m"},  # rounded up to milli units
        "requests": {"cpu": "2m"},
    }
    assert out["spec"]["restartPolicy"] == "Always"
    assert out["spec"]["dnsPolicy"] == "ClusterFirst"
    assert out["spec"]["terminationGracePeriodSeconds"] == 30
    assert out["spec"]["schedulerName"] == "default-scheduler"
    assert out["status"] == {"phase": "Pending", "qosClass": "Burstable"}


@pytest.mark.parametrize(
    ("containers", "qos"),
    [
        ([ctr()], "Guaranteed"),
        ([ctr(cpu=None, memory=None, limits={"cpu": "1", "memory": "1Gi"})], "Guaranteed"),
        ([ctr(cpu=None, memory=None)], "BestEffort"),
        ([ctr(limits={"cpu": "1", "memory": "256Mi"})], "Burstable"),
    ],
    ids=["requests == limits", "limits only", "nothing", "requests < limits"],
)
def test_default_pod_computes_qos(containers: list[dict[str, Any]], qos: str) -> None:
    assert make(*containers).status.qos_class == qos


def test_default_pod_keeps_phase_and_existing_resize_policy() -> None:
    policy = [{"resourceName": "memory", "restartPolicy": "RestartContainer"}]
    pod = make(ctr(resizePolicy=policy), status={"phase": "Running"})
    assert pod.status.phase == "Running"
    assert [p.to_k8s() for p in pod.spec.containers[0].resize_policy or []] == policy


# --- create -------------------------------------------------------------------------------------

CREATE_CASES: list[tuple[str, Callable[[], Pod], list[str]]] = [
    ("valid", lambda: make(), []),
    ("valid with sidecar and init", lambda: make(init_containers=[init(), sidecar()]), []),
    (
        "valid extended resource and hugepages",
        lambda: make(
            ctr(
                requests={"cpu": "1", "example.com/gpu": "2", "hugepages-2Mi": "4Mi"},
                limits={"cpu": "1", "example.com/gpu": "2", "hugepages-2Mi": "4Mi"},
            )
        ),
        [],
    ),
    ("valid undefaulted client pod", lambda: raw(), []),
    (
        "name required",
        lambda: make(metadata={"name": None}),
        ["metadata.name: Required value: name or generateName is required"],
    ),
    (
        "name not a DNS subdomain",
        lambda: make(metadata={"name": "Web_1"}),
        [f'metadata.name: Invalid value: "Web_1": {DNS_SUBDOMAIN}'],
    ),
    (
        "name too long",
        lambda: make(metadata={"name": "a" * 254}),
        [f'metadata.name: Invalid value: "{"a" * 254}": must be no more than 253 characters'],
    ),
    ("name of 253 characters", lambda: make(metadata={"name": "a" * 253}), []),
    (
        "generateName prefix may end with a dash",
        lambda: make(metadata={"generateName": "web-"}),
        [],
    ),
    (
        "namespace required",
        lambda: make(metadata={"namespace": None}),
        ["metadata.namespace: Required value"],
    ),
    (
        "namespace must be a DNS label",
        lambda: make(metadata={"namespace": "team.a"}),
        ['metadata.namespace: Invalid value: "team.a": must not contain dots'],
    ),
    (
        "label key and value",
        lambda: make(metadata={"labels": {"bad key": "ok", "app": "-x"}}),
        [
            f'metadata.labels: Invalid value: "-x": {LABEL_VALUE}',
            f'metadata.labels: Invalid value: "bad key": {NAME_PART}',
        ],
    ),
    (
        "finalizer not standard nor qualified",
        lambda: make(metadata={"finalizers": ["cleanup"]}),
        [
            'metadata.finalizers[0]: Invalid value: "cleanup": name is neither a standard '
            "finalizer name nor is it fully qualified"
        ],
    ),
    ("at least one container", lambda: make(containers=[]), ["spec.containers: Required value"]),
    (
        "container name must be a DNS label",
        lambda: make(ctr("C_1")),
        [f'spec.containers[0].name: Invalid value: "C_1": {DNS_LABEL}'],
    ),
    (
        "container name required",
        lambda: make(ctr("")),
        ["spec.containers[0].name: Required value"],
    ),
    (
        "container names unique",
        lambda: make(ctr(), ctr()),
        ['spec.containers[1].name: Duplicate value: "c1"'],
    ),
    (
        "init container names unique across containers",
        lambda: make(init_containers=[init("c1")]),
        ['spec.initContainers[0].name: Duplicate value: "c1"'],
    ),
    (
        "image required",
        lambda: make(ctr(image=None)),
        ["spec.containers[0].image: Required value"],
    ),
    (
        "image without surrounding whitespace",
        lambda: make(ctr(image="nginx ")),
        [
            'spec.containers[0].image: Invalid value: "nginx ": must not have leading or '
            "trailing whitespace"
        ],
    ),
    (
        "cpu request above limit",
        lambda: make(
            ctr(requests={"cpu": "2", "memory": "256Mi"}, limits={"cpu": "1", "memory": "256Mi"})
        ),
        [f'{C0}.requests: Invalid value: "2": must be less than or equal to cpu limit of 1'],
    ),
    (
        "memory request above limit",
        lambda: make(ctr(requests={"memory": "1Gi"}, limits={"memory": "512Mi"})),
        [
            f'{C0}.requests: Invalid value: "1Gi": must be less than or '
            "equal to memory limit of 512Mi"
        ],
    ),
    (
        "negative quantity",
        lambda: make(ctr(cpu=None, memory=None, requests={"cpu": "-100m"})),
        [f'{C0}.requests[cpu]: Invalid value: "-100m": must be greater than or equal to 0'],
    ),
    (
        "unknown resource name",
        lambda: make(ctr(cpu=None, memory=None, requests={"foo": "1"})),
        [
            f"{C0}.requests[foo]: Invalid value: foo: must be a standard "
            "resource type or fully qualified",
            f"{C0}.requests[foo]: Invalid value: foo: must be a standard resource for containers",
        ],
    ),
    (
        "standard but not a container resource",
        lambda: make(ctr(cpu=None, memory=None, requests={"pods": "1"})),
        [f"{C0}.requests[pods]: Invalid value: pods: must be a standard resource for containers"],
    ),
    (
        "resource name with two slashes",
        lambda: make(ctr(cpu=None, memory=None, requests={"a/b/c": "1"})),
        [
            f"{C0}.requests[a/b/c]: Invalid value: a/b/c: a qualified name "
            "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
            "an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "
            "for "
            "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS "
            "subdomain prefix and '/' (e.g. 'example.com/MyName')",
            f"{C0}.requests[a/b/c]: Invalid value: a/b/c: doesn't follow "
            "extended resource name standard",
            f"{C0}.limits: Required value: Limit must be set for non overcommitable resources",
        ],
    ),
    (
        "kubernetes.io resources are native",
        lambda: make(ctr(requests={"cpu": "500m", "kubernetes.io/thing": "1"})),
        [],
    ),
    (
        "extended resource must be an integer",
        lambda: make(ctr(requests={"example.com/gpu": "500m"}, limits={"example.com/gpu": "500m"})),
        [
            f"{C0}.limits[example.com/gpu]: Invalid value: 500m: must be an integer",
            f"{C0}.requests[example.com/gpu]: Invalid value: 500m: must be an integer",
        ],
    ),
    (
        "extended resource requests need limits",
        lambda: make(ctr(requests={"cpu": "1", "example.com/gpu": "1"}, limits={"cpu": "1"})),
        [f"{C0}.limits: Required value: Limit must be set for non overcommitable resources"],
    ),
    (
        "extended resource requests equal limits",
        lambda: make(ctr(requests={"example.com/gpu": "1"}, limits={"example.com/gpu": "2"})),
        [f'{C0}.requests: Invalid value: "1": must be equal to example.com/gpu limit of 2'],
    ),
    (
        "hugepages need cpu or memory",
        lambda: make(ctr(cpu=None, memory=None, limits={"hugepages-2Mi": "4Mi"})),
        ["spec.containers[0].resources: Forbidden: HugePages require cpu or memory"],
    ),
    (
        "hugepages in whole pages",
        lambda: make(
            ctr(
                requests={"memory": "1Gi", "hugepages-2Mi": "3Mi"},
                limits={"memory": "1Gi", "hugepages-2Mi": "3Mi"},
            )
        ),
        [
            f'{C0}.limits[hugepages-2Mi]: Invalid value: "3Mi": 3Mi is not '
            "positive integer multiple of hugepages-2Mi",
            f'{C0}.requests[hugepages-2Mi]: Invalid value: "3Mi": 3Mi is not '
            "positive integer multiple of hugepages-2Mi",
        ],
    ),
    (
        "resizePolicy only for cpu and memory",
        lambda: make(
            ctr(resizePolicy=[{"resourceName": "storage", "restartPolicy": "NotRequired"}])
        ),
        [
            "spec.containers[0].resizePolicy: Unsupported value: storage: supported values: "
            '"cpu", "memory"'
        ],
    ),
    (
        "resizePolicy resource name required",
        lambda: make(ctr(resizePolicy=[{"resourceName": "", "restartPolicy": "NotRequired"}])),
        ["spec.containers[0].resizePolicy: Required value"],
    ),
    (
        "resizePolicy without duplicates",
        lambda: make(
            ctr(
                resizePolicy=[
                    {"resourceName": "cpu", "restartPolicy": "NotRequired"},
                    {"resourceName": "cpu", "restartPolicy": "RestartContainer"},
                ]
            )
        ),
        ["spec.containers[0].resizePolicy[1]: Duplicate value: cpu"],
    ),
    (
        "restartPolicy Never needs NotRequired",
        lambda: make(
            ctr(resizePolicy=[{"resourceName": "memory", "restartPolicy": "RestartContainer"}]),
            restartPolicy="Never",
        ),
        [
            'spec.containers[0].resizePolicy: Invalid value: "RestartContainer": must be '
            "'NotRequired' when `restartPolicy` is 'Never'"
        ],
    ),
    (
        "restartPolicy Never with NotRequired",
        lambda: make(
            ctr(resizePolicy=[{"resourceName": "memory", "restartPolicy": "NotRequired"}]),
            restartPolicy="Never",
        ),
        [],
    ),
    (
        "restartPolicy OnFailure allows RestartContainer",
        lambda: make(
            ctr(resizePolicy=[{"resourceName": "cpu", "restartPolicy": "RestartContainer"}]),
            restartPolicy="OnFailure",
        ),
        [],
    ),
    (
        "sidecars may have a resizePolicy",
        lambda: make(
            init_containers=[
                sidecar(resizePolicy=[{"resourceName": "cpu", "restartPolicy": "RestartContainer"}])
            ]
        ),
        [],
    ),
    (
        "regular containers have no restartPolicy",
        lambda: make(ctr(restartPolicy="Always")),
        ["spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers"],
    ),
    (
        "ports in range, unique names",
        lambda: make(
            ctr(
                ports=[
                    {"containerPort": 70000, "name": "http"},
                    {"containerPort": 81, "name": "http", "hostPort": 80},
                    {"containerPort": 82, "name": "Bad--", "hostPort": 80},
                ]
            )
        ),
        [
            "spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 "
            "and 65535, inclusive",
            'spec.containers[0].ports[1].name: Duplicate value: "http"',
            'spec.containers[0].ports[2].name: Invalid value: "Bad--": must contain only '
            "alpha-numeric characters (a-z, 0-9), and hyphens (-)",
            'spec.containers[0].ports[2].name: Invalid value: "Bad--": must not contain '
            "consecutive hyphens",
            'spec.containers[0].ports[2].name: Invalid value: "Bad--": must not begin or end '
            "with a hyphen",
            'spec.containers[0].ports[2].hostPort: Duplicate value: "TCP//80"',
        ],
    ),
    (
        "env names printable ASCII without '='",
        lambda: make(ctr(env=[{"name": "A=B", "value": "1"}, {"name": ""}])),
        [
            'spec.containers[0].env[0].name: Invalid value: "A=B": a valid environment variable '
            "name must consist only of printable ASCII characters other than '='",
            "spec.containers[0].env[1].name: Required value",
            'spec.containers[0].env[1].name: Invalid value: "": environment variable name must '
            "be non-empty",
        ],
    ),
    (
        "nodeName a DNS subdomain",
        lambda: make(nodeName="Node_1"),
        [f'spec.nodeName: Invalid value: "Node_1": {DNS_SUBDOMAIN}'],
    ),
    (
        "mirror pods are bound",
        lambda: make(metadata={"annotations": {"kubernetes.io/config.mirror": "abc"}}),
        [
            'metadata.annotations[kubernetes.io/config.mirror]: Invalid value: "abc": must set '
            "spec.nodeName if mirror pod annotation is set"
        ],
    ),
    (
        "overhead validated like limits",
        lambda: make(overhead={"cpu": "-1"}),
        ['spec.overhead.limits[cpu]: Invalid value: "-1": must be greater than or equal to 0'],
    ),
]


@pytest.mark.parametrize(
    ("build", "expected"), [c[1:] for c in CREATE_CASES], ids=[c[0] for c in CREATE_CASES]
)
def test_validate_pod_create(build: Callable[[], Pod], expected: list[str]) -> None:
    assert texts(validate_pod_create(build())) == expected


def test_init_container_restart_policy_only_always() -> None:
    # The model only admits "Always"; a constructed pod shows the Kubernetes message.
    pod = make(init_containers=[init()])
    assert pod.spec.init_containers is not None
    pod.spec.init_containers[0] = Container.model_construct(
        **{**pod.spec.init_containers[0].__dict__, "restart_policy": "OnFailure"}
    )
    assert texts(validate_pod_create(pod)) == [
        'spec.initContainers[0].restartPolicy: Unsupported value: "OnFailure": supported '
        'values: "Always"'
    ]


# --- update -------------------------------------------------------------------------------------


def _update(change: Callable[[dict[str, Any]], None], base: Pod | None = None) -> tuple[Pod, Pod]:
    old = base or make()
    data = copy.deepcopy(old.to_k8s())
    change(data)
    return old, Pod.model_validate(data)


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target: Any = data
        for part in parents:
            target = target[int(part)] if part.isdigit() else target.setdefault(part, {})
        if value is None:
            del target[last]
        else:
            target[last] = value

    return change


UPDATE_CASES: list[tuple[str, Callable[[], tuple[Pod, Pod]], list[str]]] = [
    ("no change", lambda: _update(lambda d: None), []),
    ("labels", lambda: _update(_set("metadata.labels", {"tier": "gold"})), []),
    ("annotations", lambda: _update(_set("metadata.annotations", {"a": "b"})), []),
    ("image", lambda: _update(_set("spec.containers.0.image", "nginx:1.28")), []),
    (
        "init container image",
        lambda: _update(
            _set("spec.initContainers.0.image", "busybox:2"), make(init_containers=[init()])
        ),
        [],
    ),
    ("status is not compared", lambda: _update(_set("status.phase", "Running")), []),
    (
        "grace period from negative to 1",
        lambda: _update(
            _set("spec.terminationGracePeriodSeconds", 1), make(terminationGracePeriodSeconds=-1)
        ),
        [],
    ),
    (
        "grace period otherwise immutable",
        lambda: _update(_set("spec.terminationGracePeriodSeconds", 10)),
        [
            UPDATE_FORBIDDEN
            + "- spec.terminationGracePeriodSeconds: 30\n+ spec.terminationGracePeriodSeconds: 10"
        ],
    ),
    (
        "resources only through resize",
        lambda: _update(_set("spec.containers.0.resources.requests.cpu", "400m")),
        [
            UPDATE_FORBIDDEN + '- spec.containers[0].resources.requests[cpu]: "500m"\n'
            '+ spec.containers[0].resources.requests[cpu]: "400m"'
        ],
    ),
    (
        "same quantity written differently is no change",
        lambda: _update(_set("spec.containers.0.resources.limits.memory", "268435456")),
        [],
    ),
    (
        "resizePolicy only through resize",
        lambda: _update(
            _set(
                "spec.containers.0.resizePolicy",
                [{"resourceName": "cpu", "restartPolicy": "NotRequired"}],
            )
        ),
        [
            UPDATE_FORBIDDEN + '+ spec.containers[0].resizePolicy: [{"resourceName": "cpu", '
            '"restartPolicy": "NotRequired"}]'
        ],
    ),
    (
        "nodeName through binding only",
        lambda: _update(_set("spec.nodeName", "n1")),
        [UPDATE_FORBIDDEN + '+ spec.nodeName: "n1"'],
    ),
    (
        "containers may not be added",
        lambda: _update(lambda d: d["spec"]["containers"].append(ctr("c2"))),
        ["spec.containers: Forbidden: pod updates may not add or remove containers"],
    ),
    (
        "image may not be removed",
        lambda: _update(_set("spec.containers.0.image", None)),
        ["spec.containers[0].image: Required value", "spec.containers[0].image: Required value"],
    ),
    (
        "name is immutable",
        lambda: _update(_set("metadata.name", "other")),
        ['metadata.name: Invalid value: "other": field is immutable'],
    ),
    (
        "namespace is immutable",
        lambda: _update(_set("metadata.namespace", "kube-system")),
        ['metadata.namespace: Invalid value: "kube-system": field is immutable'],
    ),
    (
        "uid is immutable",
        lambda: _update(_set("metadata.uid", "u-2")),
        ['metadata.uid: Invalid value: "u-2": field is immutable'],
    ),
    ("an update without uid keeps it", lambda: _update(_set("metadata.uid", None)), []),
    (
        "a PUT body without defaults, name or namespace",
        lambda: (make(), raw(metadata={"name": None, "namespace": None, "uid": None})),
        [],
    ),
    (
        "labels still validated",
        lambda: _update(_set("metadata.labels", {"app": "no way"})),
        [f'metadata.labels: Invalid value: "no way": {LABEL_VALUE}'],
    ),
    (
        "mirror annotation may not be added",
        lambda: _update(
            _set("metadata.annotations", {"kubernetes.io/config.mirror": "x"}), make(nodeName="n1")
        ),
        [
            "metadata.annotations[kubernetes.io/config.mirror]: Forbidden: may not add mirror pod "
            "annotation"
        ],
    ),
]


@pytest.mark.parametrize(
    ("build", "expected"), [c[1:] for c in UPDATE_CASES], ids=[c[0] for c in UPDATE_CASES]
)
def test_validate_pod_update(build: Callable[[], tuple[Pod, Pod]], expected: list[str]) -> None:
    old, new = build()
    assert texts(validate_pod_update(old, new)) == expected


# --- resize -------------------------------------------------------------------------------------

BURSTABLE = ctr(requests={"cpu": "100m", "memory": "64Mi"}, limits={"cpu": "500m"})


def _resize(base: Pod, patch: dict[str, Any]) -> tuple[Pod, Pod]:
    return base, resize_view(base, patched(base, patch))


RESIZE_CASES: list[tuple[str, Callable[[], tuple[Pod, Pod]], list[str]]] = [
    (
        "cpu and memory up, Guaranteed stays Guaranteed",
        lambda: _resize(
            make(),
            resources_patch(
                requests={"cpu": "800m", "memory": "512Mi"},
                limits={"cpu": "800m", "memory": "512Mi"},
            ),
        ),
        [],
    ),
    (
        "same resources: a no-op",
        lambda: _resize(make(), resources_patch(requests={"cpu": "500m"})),
        [],
    ),
    (
        "same quantity written differently",
        lambda: _resize(
            make(), resources_patch(requests={"memory": "268435456"}, limits={"memory": "256Mi"})
        ),
        [],
    ),
    (
        "memory limit decrease (allowed since v1.34)",
        lambda: _resize(
            make(), resources_patch(requests={"memory": "128Mi"}, limits={"memory": "128Mi"})
        ),
        [],
    ),
    (
        "Burstable changes shape but stays Burstable",
        lambda: _resize(
            make(BURSTABLE), resources_patch(requests={"cpu": "200m"}, limits={"cpu": "1"})
        ),
        [],
    ),
    (
        "QoS Guaranteed to Burstable",
        lambda: _resize(make(), resources_patch(requests={"cpu": "100m"})),
        [f'spec: Invalid value: "Guaranteed": {QOS_CHANGE}'],
    ),
    (
        "QoS Burstable to Guaranteed",
        lambda: _resize(
            make(BURSTABLE),
            resources_patch(requests={"cpu": "500m", "memory": "64Mi"}, limits={"memory": "64Mi"}),
        ),
        [f'spec: Invalid value: "Burstable": {QOS_CHANGE}'],
    ),
    (
        "QoS BestEffort to Burstable",
        lambda: _resize(
            make(ctr(cpu=None, memory=None)), resources_patch(requests={"cpu": "100m"})
        ),
        [f'spec: Invalid value: "BestEffort": {QOS_CHANGE}'],
    ),
    (
        "requests above limits",
        lambda: _resize(make(), resources_patch(requests={"cpu": "2"})),
        [
            f'{C0}.requests: Invalid value: "2": must be less than or equal to cpu limit of 500m',
            f'spec: Invalid value: "Guaranteed": {QOS_CHANGE}',
        ],
    ),
    (
        "ephemeral-storage may not be added",
        lambda: _resize(
            make(),
            resources_patch(
                requests={"ephemeral-storage": "1Gi"}, limits={"ephemeral-storage": "1Gi"}
            ),
        ),
        [
            f"{C0}.requests[ephemeral-storage]: Forbidden: {CPU_MEMORY_ONLY}",
            f"{C0}.limits[ephemeral-storage]: Forbidden: {CPU_MEMORY_ONLY}",
        ],
    ),
    (
        "extended resources may not change",
        lambda: _resize(
            make(
                ctr(
                    requests={"cpu": "1", "example.com/gpu": "1"},
                    limits={"cpu": "1", "example.com/gpu": "1"},
                )
            ),
            resources_patch(requests={"example.com/gpu": "2"}, limits={"example.com/gpu": "2"}),
        ),
        [
            f"{C0}.requests[example.com/gpu]: Forbidden: {CPU_MEMORY_ONLY}",
            f"{C0}.limits[example.com/gpu]: Forbidden: {CPU_MEMORY_ONLY}",
        ],
    ),
    (
        "other resources may not be removed",
        lambda: _resize(
            make(
                ctr(
                    requests={"cpu": "1", "memory": "1Gi", "ephemeral-storage": "1Gi"},
                    limits={"cpu": "1", "memory": "1Gi"},
                )
            ),
            resources_patch(requests={"ephemeral-storage": None}),
        ),
        [
            f"{C0}.requests: Forbidden: resource requests cannot be removed",
            f"{C0}.requests[ephemeral-storage]: Forbidden: {CPU_MEMORY_ONLY}",
        ],
    ),
    (
        "cpu limit may not be removed",
        lambda: _resize(make(BURSTABLE), resources_patch(limits={"cpu": None})),
        [f"{C0}.limits: Forbidden: resource limits cannot be removed"],
    ),
    (
        "memory request may not be removed",
        lambda: _resize(make(BURSTABLE), resources_patch(requests={"memory": None})),
        [f"{C0}.requests: Forbidden: resource requests cannot be removed"],
    ),
    (
        "restartPolicy Never keeps NotRequired",
        lambda: _resize(
            make(restartPolicy="Never"),
            {
                "spec": {
                    "containers": [
                        {
                            "name": "c1",
                            "resizePolicy": [
                                {"resourceName": "cpu", "restartPolicy": "RestartContainer"}
                            ],
                        }
                    ]
                }
            },
        ),
        [
            'spec.containers[0].resizePolicy: Invalid value: "RestartContainer": must be '
            "'NotRequired' when `restartPolicy` is 'Never'"
        ],
    ),
    (
        "resizePolicy may change",
        lambda: _resize(
            make(),
            {
                "spec": {
                    "containers": [
                        {
                            "name": "c1",
                            "resizePolicy": [
                                {"resourceName": "memory", "restartPolicy": "RestartContainer"}
                            ],
                        }
                    ]
                }
            },
        ),
        [],
    ),
    (
        "sidecar resources resize",
        lambda: _resize(
            make(init_containers=[init(), sidecar()]),
            {
                "spec": {
                    "initContainers": [
                        {
                            "name": "log",
                            "resources": {"requests": {"cpu": "200m"}, "limits": {"cpu": "200m"}},
                        }
                    ]
                }
            },
        ),
        [],
    ),
    (
        "sidecar only cpu and memory",
        lambda: _resize(
            make(init_containers=[sidecar()]),
            {
                "spec": {
                    "initContainers": [
                        {
                            "name": "log",
                            "resources": {
                                "requests": {"ephemeral-storage": "1Gi"},
                                "limits": {"ephemeral-storage": "1Gi"},
                            },
                        }
                    ]
                }
            },
        ),
        [
            "spec.initContainers[0].resources.requests[ephemeral-storage]: Forbidden: only cpu and "
            "memory resources for sidecar containers are mutable",
            "spec.initContainers[0].resources.limits[ephemeral-storage]: Forbidden: only cpu and "
            "memory resources for sidecar containers are mutable",
        ],
    ),
    (
        "sidecar limits may not be removed",
        lambda: _resize(
            make(init_containers=[sidecar(limits={"cpu": "1"}, requests={"cpu": "100m"})]),
            {"spec": {"initContainers": [{"name": "log", "resources": {"limits": None}}]}},
        ),
        ["spec.initContainers[0].resources.limits: Forbidden: resource limits cannot be removed"],
    ),
    (
        "non-sidecar init containers are not resizable",
        lambda: _resize(
            make(init_containers=[init()]),
            {
                "spec": {
                    "initContainers": [
                        {
                            "name": "setup",
                            "resources": {"requests": {"cpu": "200m"}, "limits": {"cpu": "200m"}},
                        }
                    ]
                }
            },
        ),
        [f"{I0}.resources: Forbidden: {INIT_FIXED}"],
    ),
    (
        "running pod on a kubelet without resize support",
        lambda: _resize(
            make(nodeName="n1", status=running_status(with_resources=False)),
            resources_patch(requests={"cpu": "600m"}, limits={"cpu": "600m"}),
        ),
        ["spec: Forbidden: Pod running on node without support for resize"],
    ),
    (
        "running pod on a kubelet with resize support",
        lambda: _resize(
            make(nodeName="n1", status=running_status(with_resources=True)),
            resources_patch(requests={"cpu": "600m"}, limits={"cpu": "600m"}),
        ),
        [],
    ),
    (
        "Running and bound, no container statuses (beyond Kubernetes)",
        lambda: _resize(
            make(nodeName="n1", status={"phase": "Running"}),
            resources_patch(requests={"cpu": "600m"}, limits={"cpu": "600m"}),
        ),
        ["spec: Forbidden: Pod running on node without support for resize"],
    ),
    (
        "Running and bound, waiting container without resources (beyond Kubernetes)",
        lambda: _resize(
            make(
                nodeName="n1",
                status={
                    "phase": "Running",
                    "containerStatuses": [{"name": "c1", "state": {"waiting": {"reason": "x"}}}],
                },
            ),
            resources_patch(requests={"cpu": "600m"}, limits={"cpu": "600m"}),
        ),
        ["spec: Forbidden: Pod running on node without support for resize"],
    ),
    (
        "Running and bound, terminated container reporting resources",
        lambda: _resize(
            make(
                nodeName="n1",
                status={
                    "phase": "Running",
                    "containerStatuses": [
                        {
                            "name": "c1",
                            "state": {"terminated": {"exitCode": 0}},
                            "resources": {"requests": {"cpu": "500m"}},
                        }
                    ],
                },
            ),
            resources_patch(requests={"cpu": "600m"}, limits={"cpu": "600m"}),
        ),
        [],
    ),
    (
        "requests left out default to the limits",
        lambda: _resize(
            make(), resources_patch(requests=None, limits={"cpu": "800m", "memory": "256Mi"})
        ),
        [],
    ),
    (
        "a request removed under a limit defaults back to it",
        lambda: _resize(make(), resources_patch(requests={"cpu": None})),
        [],
    ),
    (
        "bound pod with no running container",
        lambda: _resize(
            make(
                nodeName="n1",
                status={
                    "containerStatuses": [
                        {"name": "c1", "state": {"waiting": {"reason": "ContainerCreating"}}}
                    ]
                },
            ),
            resources_patch(requests={"cpu": "600m"}, limits={"cpu": "600m"}),
        ),
        [],
    ),
    (
        "unscheduled pod",
        lambda: _resize(make(), resources_patch(requests={"cpu": "700m"}, limits={"cpu": "700m"})),
        [],
    ),
    (
        "static pods cannot be resized",
        lambda: _resize(
            make(nodeName="n1", metadata={"annotations": {"kubernetes.io/config.mirror": "x"}}),
            resources_patch(requests={"cpu": "600m"}, limits={"cpu": "600m"}),
        ),
        ["[]: Forbidden: static pods cannot be resized"],
    ),
    (
        "two errors at once",
        lambda: _resize(
            make(nodeName="n1", status=running_status(with_resources=False)),
            resources_patch(requests={"cpu": "100m"}),
        ),
        [
            f'spec: Invalid value: "Guaranteed": {QOS_CHANGE}',
            "spec: Forbidden: Pod running on node without support for resize",
        ],
    ),
]


@pytest.mark.parametrize(
    ("build", "expected"), [c[1:] for c in RESIZE_CASES], ids=[c[0] for c in RESIZE_CASES]
)
def test_validate_pod_resize(build: Callable[[], tuple[Pod, Pod]], expected: list[str]) -> None:
    old, new = build()
    assert texts(validate_pod_resize(old, new)) == expected


DIRECT_RESIZE_CASES: list[tuple[str, Callable[[], tuple[Pod, Pod]], list[str]]] = [
    # validate_pod_resize on a pod that is not a resize view still refuses other changes.
    (
        "image",
        lambda: _update(_set("spec.containers.0.image", "nginx:1.28")),
        [f"spec.containers[0].image: Forbidden: {CPU_MEMORY_ONLY}"],
    ),
    (
        "nodeSelector",
        lambda: _update(_set("spec.nodeSelector", {"disk": "ssd"})),
        [f"spec.nodeSelector[disk]: Forbidden: {CPU_MEMORY_ONLY}"],
    ),
    (
        "containers added",
        lambda: _update(lambda d: d["spec"]["containers"].append(ctr("c2"))),
        [f"spec.containers: Forbidden: {CPU_MEMORY_ONLY}"],
    ),
    (
        "non-sidecar init container resizePolicy",
        lambda: _update(
            _set(
                "spec.initContainers.0.resizePolicy",
                [{"resourceName": "cpu", "restartPolicy": "NotRequired"}],
            ),
            make(init_containers=[init()]),
        ),
        [f"{I0}.resizePolicy: Forbidden: {INIT_FIXED}"],
    ),
]


@pytest.mark.parametrize(
    ("build", "expected"),
    [c[1:] for c in DIRECT_RESIZE_CASES],
    ids=[c[0] for c in DIRECT_RESIZE_CASES],
)
def test_validate_pod_resize_refuses_other_spec_changes(
    build: Callable[[], tuple[Pod, Pod]], expected: list[str]
) -> None:
    old, new = build()
    assert texts(validate_pod_resize(old, new)) == expected


# --- the resize view and what it drops ----------------------------------------------------------


def test_resize_view_takes_only_resources_and_resize_policy() -> None:
    old = make(init_containers=[init(), sidecar()], nodeName="n1", status=running_status(True))
    incoming = patched(
        old,
        {
            "metadata": {"labels": {"sneaky": "yes"}},
            "spec": {
                "nodeName": "n2",
                "containers": [
                    {
                        "name": "c1",
                        "image": "evil:1",
                        "resources": {"requests": {"cpu": "800m"}, "limits": {"cpu": "800m"}},
                        "resizePolicy": [
                            {"resourceName": "cpu", "restartPolicy": "RestartContainer"}
                        ],
                    }
                ],
                "initContainers": [{"name": "log", "resources": {"requests": {"cpu": "200m"}}}],
            },
            "status": {"resize": "Infeasible"},
        },
    )
    view = resize_view(old, incoming)
    expected = old.to_k8s()
    c1 = expected["spec"]["containers"][0]
    c1["resources"]["requests"]["cpu"] = c1["resources"]["limits"]["cpu"] = "800m"
    c1["resizePolicy"] = [{"resourceName": "cpu", "restartPolicy": "RestartContainer"}]
    expected["spec"]["initContainers"][1]["resources"]["requests"]["cpu"] = "200m"
    assert view.to_k8s() == expected
    assert old.spec.containers[0].resources.requests == {
        "cpu": Quantity("500m"),
        "memory": Quantity("256Mi"),
    }


def test_resize_view_and_its_validation_leave_the_stored_pod_as_it_was() -> None:
    # resize_view shares the stored pod's metadata and status instead of copying them: the
    # resize path must never write into them (nor into the spec it copies).
    old = make()
    stored = old.to_k8s()
    cpu = {"cpu": "300m"}
    view = resize_view(old, patched(old, resources_patch(requests=cpu, limits=cpu)))
    assert not validate_pod_resize(old, view)
    assert old.to_k8s() == stored
    view.spec.containers[0].resources.requests = {"cpu": Quantity("9")}
    view.spec.node_name = "elsewhere"
    assert old.to_k8s() == stored


def test_validate_pod_resize_diffs_whatever_the_view_does_not_share_with_the_stored_pod() -> None:
    # The view copies only what it resizes, and validation skips the diff of a field it finds
    # shared with the stored pod: a field the view holds a copy of is still diffed.
    old = make()
    cpu = {"cpu": "300m"}
    view = resize_view(old, patched(old, resources_patch(requests=cpu, limits=cpu)))
    assert view.spec.containers[0] is not old.spec.containers[0]
    view.spec.containers[0].image = "evil:1"
    view.spec.node_name = "elsewhere"
    assert texts(validate_pod_resize(old, view)) == [
        f"spec.containers[0].image: Forbidden: {CPU_MEMORY_ONLY}",
    ]
    view.spec.containers[0].image = old.spec.containers[0].image
    assert texts(validate_pod_resize(old, view)) == [f"spec.nodeName: Forbidden: {CPU_MEMORY_ONLY}"]


def test_resize_view_defaults_the_incoming_resources() -> None:
    old = make()
    incoming = patched(
        old, resources_patch(requests=None, limits={"cpu": "1.0001", "memory": "1Gi"})
    )
    view = resize_view(old, incoming)
    assert view.spec.containers[0].resources.to_k8s() == {
        "limits": {"cpu": "1001m", "memory": "1Gi"},
        "requests": {"cpu": "1001m", "memory": "1Gi"},
    }


def test_resize_view_keeps_old_containers_when_the_lists_do_not_pair_up() -> None:
    old = make()
    added = patched(old, {"spec": {"containers": [ctr("c2", cpu="1", memory="1Gi")]}})
    renamed = Pod.model_validate(
        {**old.to_k8s(), "spec": {**old.to_k8s()["spec"], "containers": [ctr("x", cpu="1")]}}
    )
    assert resize_view(old, added).to_k8s() == old.to_k8s()
    assert resize_view(old, renamed).to_k8s() == old.to_k8s()


_SMP = "application/strategic-merge-patch+json"
_MERGE = "application/merge-patch+json"
PARTIAL_BASE_CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("one container's requests", _SMP, resources_patch(requests={"cpu": "700m"})),
    (
        "a sidecar and a regular container, with element order",
        _SMP,
        {
            "spec": {
                "$setElementOrder/containers": [{"name": "c1"}, {"name": "c2"}],
                "containers": [{"name": "c2", "resources": {"limits": {"memory": "1Gi"}}}],
                "initContainers": [{"name": "log", "resources": {"requests": {"cpu": "150m"}}}],
            }
        },
    ),
    (
        "resources replaced, not merged",
        _SMP,
        {"spec": {"containers": [{"name": "c1", "resources": {"$patch": "replace"}}]}},
    ),
    (
        "a resize policy added, other fields along",
        _SMP,
        {
            "metadata": {"labels": {"x": "y"}, "resourceVersion": "7"},
            "spec": {
                "nodeName": "n2",
                "containers": [
                    {
                        "name": "c1",
                        "image": "other:2",
                        "ports": [{"containerPort": 80}],
                        "resizePolicy": [
                            {"resourceName": "memory", "restartPolicy": "RestartContainer"}
                        ],
                    }
                ],
            },
        },
    ),
    ("pod-level resources", _SMP, {"spec": {"resources": {"requests": {"cpu": "2"}}}}),
    (
        "a merge patch replaces the container list",
        _MERGE,
        {"spec": {"containers": [ctr("c2", cpu="300m", memory="128Mi")]}},
    ),
    (
        "a merge patch with a stale resourceVersion, deleting a label",
        _MERGE,
        {
            "metadata": {"resourceVersion": "6", "labels": {"app": None}},
            "spec": {"containers": [ctr("c1", cpu="900m")]},
        },
    ),
]


@pytest.mark.parametrize(
    ("content_type", "patch"),
    [c[1:] for c in PARTIAL_BASE_CASES],
    ids=[c[0] for c in PARTIAL_BASE_CASES],
)
def test_a_resize_patch_of_the_partial_base_gives_the_view_of_the_whole_pod(
    content_type: str, patch: dict[str, Any]
) -> None:
    old = make(
        ctr(),
        ctr("c2", cpu="200m", memory="64Mi"),
        init_containers=[init(), sidecar()],
        metadata={"resourceVersion": "7", "labels": {"app": "web"}},
        nodeName="n1",
        status=running_status(True),
    )
    body = json.dumps(patch).encode()

    def view(base: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        incoming = Pod.model_validate(apply_patch(base, body, content_type))
        return resize_view(old, incoming).to_k8s(), incoming.metadata.resource_version

    assert view(resize_patch_base(old)) == view(old.to_k8s())
    assert resize_patch_base(old)["metadata"]["resourceVersion"] == "7"


def _with(base: dict[str, Any], change: Callable[[dict[str, Any]], None]) -> Pod:
    data = copy.deepcopy(base)
    change(data)
    return Pod.model_validate(data)


STORED = make(
    nodeName="n1",
    metadata={"resourceVersion": "7", "generation": 1, "creationTimestamp": "2024-01-01T00:00:00Z"},
).to_k8s()

# Changes a resize request may carry besides resources: kube-apiserver's resize strategy
# drops them all (dropNonResizeUpdates), so the pod left behind equals the stored one.
DROPPED_CASES: list[tuple[str, Callable[[dict[str, Any]], None]]] = [
    ("nothing", lambda d: None),
    ("image", _set("spec.containers.0.image", "nginx:1.28")),
    ("label added", _set("metadata.labels", {"app": "x"})),
    ("nodeName", _set("spec.nodeName", "n2")),
    ("container added", lambda d: d["spec"]["containers"].append(ctr("c2", cpu="1"))),
    ("container renamed", _set("spec.containers.0.name", "c9")),
    ("status sent and changed", _set("status.resize", "Infeasible")),
    ("status left out", lambda d: d.pop("status")),
    ("uid changed", _set("metadata.uid", "u-2")),
    ("namespace changed", _set("metadata.namespace", "other")),
    (
        "a merge patch result with only name and resources",
        lambda d: d["spec"].update(containers=[{"name": "c1", "resources": {}}]),
    ),
]


@pytest.mark.parametrize("change", [c[1] for c in DROPPED_CASES], ids=[c[0] for c in DROPPED_CASES])
def test_resize_drops_every_change_but_resources(change: Callable[[dict[str, Any]], None]) -> None:
    old = Pod.model_validate(STORED)
    incoming = _with(STORED, change)
    for container in incoming.spec.containers:  # same resources as stored, whatever else
        container.resources = old.spec.containers[0].resources.model_copy(deep=True)
    assert resize_view(old, incoming).to_k8s() == old.to_k8s()


def test_resize_pairs_containers_by_name_not_position() -> None:
    old = make(ctr("a", cpu="1"), ctr("b", cpu="2"))
    swapped = old.model_copy(deep=True)
    swapped.spec.containers.reverse()
    swapped.spec.containers[0].resources.requests = {"cpu": Quantity("3")}  # b
    view = resize_view(old, swapped)
    assert [c.name for c in view.spec.containers] == ["a", "b"]
    assert view.spec.containers[0].resources.requests == old.spec.containers[0].resources.requests
    assert (view.spec.containers[1].resources.requests or {})["cpu"] == Quantity("3")


def test_the_resize_flow_end_to_end() -> None:
    old = make(init_containers=[init()])
    incoming = patched(
        old,
        {
            "spec": {
                "containers": [
                    {
                        "name": "c1",
                        "image": "nginx:1.28",
                        "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "2"}},
                    }
                ],
                "initContainers": [
                    {
                        "name": "setup",
                        "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "1"}},
                    }
                ],
            }
        },
    )
    errors = validate_pod_resize(old, resize_view(old, incoming))
    status = invalid_status("Pod", "web", errors)
    assert status.code == 422
    assert status.message == (  # the image change is dropped; the init container is refused
        'Pod "web" is invalid: spec.initContainers[0].resources: Forbidden: resources for '
        "non-sidecar init containers are immutable"
    )


# --- property: the validators answer, whatever the pod ------------------------------------------

quantities = st.sampled_from(
    ["0", "1", "-1", "100m", "1.5m", "1Gi", "1e3", "2Mi", "500u", "9" * 40, "0.0001"]
)
resource_names = st.sampled_from(
    [
        "cpu",
        "memory",
        "ephemeral-storage",
        "hugepages-2Mi",
        "hugepages-x",
        "example.com/gpu",
        "pods",
        "",
        "a/b/c",
        "CPU",
        "kubernetes.io/x",
        "requests.cpu",
    ]
)
resource_lists = st.dictionaries(resource_names, quantities, max_size=3)
policies = st.lists(
    st.fixed_dictionaries(
        {
            "resourceName": st.sampled_from(["cpu", "memory", "", "storage"]),
            "restartPolicy": st.sampled_from(["NotRequired", "RestartContainer"]),
        }
    ),
    max_size=3,
)
containers = st.fixed_dictionaries(
    {"name": st.sampled_from(["c1", "c2", "", "C_1", "log"])},
    optional={
        "image": st.sampled_from(["nginx", " x", ""]),
        "resources": st.fixed_dictionaries(
            {}, optional={"requests": resource_lists, "limits": resource_lists}
        ),
        "resizePolicy": policies,
        "restartPolicy": st.just("Always"),
        "ports": st.lists(
            st.fixed_dictionaries(
                {"containerPort": st.integers(-1, 70000)},
                optional={"hostPort": st.integers(0, 3), "name": st.sampled_from(["a", "A-"])},
            ),
            max_size=2,
        ),
    },
)
container_statuses = st.lists(
    st.fixed_dictionaries(
        {"name": st.sampled_from(["c1", "c2"])},
        optional={
            "state": st.sampled_from([{}, {"running": {}}, {"waiting": {}}]),
            "resources": st.fixed_dictionaries({}, optional={"requests": resource_lists}),
        },
    ),
    max_size=2,
)
pods = st.fixed_dictionaries(
    {
        "metadata": st.fixed_dictionaries(
            {},
            optional={
                "name": st.sampled_from(["web", "", "Web", "a" * 300]),
                "namespace": st.sampled_from(["default", "a.b", ""]),
                "labels": st.dictionaries(
                    st.sampled_from(["a", "b/c/d", ""]), st.sampled_from(["x", "-"]), max_size=2
                ),
                "annotations": st.dictionaries(
                    st.sampled_from(["kubernetes.io/config.mirror", "x"]), st.just("v"), max_size=2
                ),
            },
        ),
        "spec": st.fixed_dictionaries(
            {"containers": st.lists(containers, max_size=3)},
            optional={
                "initContainers": st.lists(containers, max_size=2),
                "restartPolicy": st.sampled_from(["Always", "OnFailure", "Never"]),
                "nodeName": st.sampled_from(["n1", "N_1"]),
                "overhead": resource_lists,
            },
        ),
        "status": st.fixed_dictionaries(
            {},
            optional={
                "phase": st.sampled_from(["Pending", "Running"]),
                "qosClass": st.sampled_from(["Guaranteed", "Burstable", "BestEffort"]),
                "containerStatuses": container_statuses,
            },
        ),
    }
)


def _pod_or_none(data: dict[str, Any]) -> Pod | None:
    try:
        return Pod.model_validate(data)
    except ValidationError:
        return None


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(old_data=pods, new_data=pods)
def test_validators_answer_with_field_errors_for_any_pod(
    old_data: dict[str, Any], new_data: dict[str, Any]
) -> None:
    old, new = _pod_or_none(old_data), _pod_or_none(new_data)
    assume(old is not None and new is not None)
    assert old is not None and new is not None
    stored = default_pod(old)
    found = [
        *validate_pod_create(stored),
        *validate_pod_update(stored, new),
        *validate_pod_resize(stored, resize_view(stored, new)),
        *validate_pod_resize(stored, new),
    ]
    assert all(isinstance(e, FieldError) and e.error() for e in found)
    json.dumps(invalid_status("Pod", stored.metadata.name or "", found).to_k8s()).encode()


# --- pod-level resources (KEP-2837; resize: 1.35 alpha InPlacePodLevelResourcesVerticalScaling) --

POD_LEVEL = {"requests": {"cpu": "2", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi"}}
PR = "spec.resources"

POD_LEVEL_CREATE_CASES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("valid", POD_LEVEL, []),
    (
        "unsupported resource",
        {"requests": {"ephemeral-storage": "1Gi"}},
        [
            f'{PR}.requests[ephemeral-storage]: Unsupported value: "ephemeral-storage": '
            'supported values: "cpu", "hugepages-", "memory"'
        ],
    ),
    (
        "below the containers' aggregate",
        {"requests": {"cpu": "700m"}},
        [
            f'{PR}.requests[cpu]: Invalid value: "700m": must be greater than or equal to '
            "aggregate container requests of 1"
        ],
    ),
    (
        "a container limit above the pod's",
        {"limits": {"cpu": "400m", "memory": "2Gi"}},
        [
            f'{PR}.containers[0][cpu].limits: Invalid value: "500m": must be less than or '
            "equal to pod limits of 400m",
            f'{PR}.containers[1][cpu].limits: Invalid value: "500m": must be less than or '
            "equal to pod limits of 400m",
            # defaulted request = aggregate (1): above the 400m limit
            f'{PR}.requests: Invalid value: "1": must be less than or equal to cpu limit of 400m',
        ],
    ),
]


@pytest.mark.parametrize(
    ("resources", "expected"),
    [c[1:] for c in POD_LEVEL_CREATE_CASES],
    ids=[c[0] for c in POD_LEVEL_CREATE_CASES],
)
def test_pod_level_resources_validation(resources: dict[str, Any], expected: list[str]) -> None:
    pod = make(ctr("c1"), ctr("c2"), resources=resources)
    assert sorted(texts(validate_pod_create(pod))) == sorted(expected)


def test_pod_level_requests_default_from_containers_then_limits() -> None:
    pod = make(ctr("c1"), ctr("c2"), resources={"limits": {"cpu": "4", "memory": "2Gi"}})
    assert pod.spec.resources is not None
    assert {k: str(v) for k, v in (pod.spec.resources.requests or {}).items()} == {
        "cpu": "1",  # the containers' aggregate (2 x 500m)
        "memory": "512Mi",
    }
    assert pod.status.qos_class == "Burstable"
    only_limits = make(ctr("c1", cpu=None, memory=None), resources={"limits": {"cpu": "1"}})
    assert only_limits.spec.resources is not None
    assert {k: str(v) for k, v in (only_limits.spec.resources.requests or {}).items()} == {
        "cpu": "1"
    }


def _pod_level_resize(patch: dict[str, Any], resources: dict[str, Any] | None = POD_LEVEL):
    base = make(ctr("c1"), ctr("c2"), resources=resources)
    return _resize(base, patch)


POD_LEVEL_RESIZE_CASES: list[tuple[str, Callable[[], tuple[Pod, Pod]], list[str]]] = [
    (
        "cpu and memory up at pod level",
        lambda: _pod_level_resize(
            {"spec": {"resources": {"requests": {"cpu": "3"}, "limits": {"cpu": "3"}}}}
        ),
        [],
    ),
    (
        "QoS class may not change",
        lambda: _pod_level_resize({"spec": {"resources": {"limits": {"cpu": "3"}}}}),
        [f'spec: Invalid value: "Guaranteed": {QOS_CHANGE}'],
    ),
    (
        "cannot be added by a resize",
        lambda: _pod_level_resize({"spec": {"resources": POD_LEVEL}}, None),
        [f"{PR}: Forbidden: pod-level resources cannot be added by a resize"],
    ),
    (
        "below the containers' aggregate",
        lambda: _pod_level_resize(
            {"spec": {"resources": {"requests": {"cpu": "900m"}, "limits": {"cpu": "900m"}}}}
        ),
        [
            f'{PR}.requests[cpu]: Invalid value: "900m": must be greater than or equal to '
            "aggregate container requests of 1"
        ],
    ),
]


@pytest.mark.parametrize(
    ("build", "expected"),
    [c[1:] for c in POD_LEVEL_RESIZE_CASES],
    ids=[c[0] for c in POD_LEVEL_RESIZE_CASES],
)
def test_pod_level_resize(build: Callable[[], tuple[Pod, Pod]], expected: list[str]) -> None:
    old, new = build()
    assert texts(validate_pod_resize(old, new)) == expected
