"""The core/v1 models read and write Kubernetes JSON, and reject what a strict apiserver rejects."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from pydantic import ValidationError

from schemas.base import K8sModel
from schemas.k8s import (
    Container,
    ContainerStatus,
    Event,
    LimitRange,
    LimitRangeList,
    Node,
    NodeList,
    ObjectMeta,
    Pod,
    PodList,
    PodSpec,
    PodStatus,
    ResourceQuota,
    ResourceQuotaList,
    ResourceRequirements,
    Status,
)
from schemas.quantity import Quantity
from tests.factories import with_value


def drop_nulls(value: Any) -> Any:
    """Go writes zero metav1.Time as `null`; we omit unset fields. Compare modulo those."""
    if isinstance(value, dict):
        return {k: drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [drop_nulls(v) for v in value]
    return value


# A Deployment's pod mid-resize (KEP-1287): the app's cpu went 500m → 1 and its memory
# 512Mi → 768Mi; the kubelet has allocated the new values (allocatedResources == spec) but the
# runtime still reports the old ones (status...resources), so status.resize is InProgress.
POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "web-7c9d8f6b5-x2k4q",
        "generateName": "web-7c9d8f6b5-",
        "namespace": "shop",
        "uid": "3f1c2a9e-5b7d-4e2a-9c1f-8d6e4b2a1c0f",
        "resourceVersion": "48213",
        "generation": 2,
        "creationTimestamp": "2024-05-14T09:21:07Z",
        "labels": {"app": "web", "pod-template-hash": "7c9d8f6b5"},
        "annotations": {"kubectl.kubernetes.io/default-container": "app"},
        "ownerReferences": [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": "web-7c9d8f6b5",
                "uid": "9a0b1c2d-3e4f-4a5b-8c6d-7e8f9a0b1c2d",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    },
    "spec": {
        "initContainers": [
            {
                "name": "migrate",
                "image": "registry.example.com/shop/migrate:1.4.2",
                "command": ["/bin/migrate"],
                "args": ["--up", "--timeout=60s"],
                "resources": {
                    "limits": {"cpu": "1", "memory": "256Mi"},
                    "requests": {"cpu": "500m", "memory": "256Mi"},
                },
                "imagePullPolicy": "IfNotPresent",
            },
            {
                "name": "log-shipper",
                "image": "fluent/fluent-bit:3.0.4",
                "resources": {
                    "limits": {"memory": "128Mi"},
                    "requests": {"cpu": "100m", "memory": "64Mi"},
                },
                "resizePolicy": [
                    {"resourceName": "cpu", "restartPolicy": "NotRequired"},
                    {"resourceName": "memory", "restartPolicy": "NotRequired"},
                ],
                "restartPolicy": "Always",
                "imagePullPolicy": "IfNotPresent",
            },
        ],
        "containers": [
            {
                "name": "app",
                "image": "registry.example.com/shop/web:2.8.0",
                "workingDir": "/srv",
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                "env": [{"name": "JAVA_OPTS", "value": "-Xmx512m"}, {"name": "EMPTY"}],
                "resources": {
                    "limits": {"cpu": "2", "memory": "768Mi"},
                    "requests": {"cpu": "1", "memory": "768Mi"},
                },
                "resizePolicy": [
                    {"resourceName": "cpu", "restartPolicy": "NotRequired"},
                    {"resourceName": "memory", "restartPolicy": "RestartContainer"},
                ],
                "imagePullPolicy": "IfNotPresent",
            }
        ],
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "nodeName": "node-a",
        "schedulerName": "default-scheduler",
        "priorityClassName": "shop-critical",
        "priority": 1000,
        "overhead": {"cpu": "250m", "memory": "120Mi"},
    },
    "status": {
        "phase": "Running",
        "conditions": [
            {
                "type": "Initialized",
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": "2024-05-14T09:21:15Z",
            },
            {
                "type": "Ready",
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": "2024-05-14T09:21:19Z",
            },
            {
                "type": "PodScheduled",
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": "2024-05-14T09:21:07Z",
            },
        ],
        "hostIP": "10.0.0.11",
        "hostIPs": [{"ip": "10.0.0.11"}],
        "podIP": "10.244.1.17",
        "podIPs": [{"ip": "10.244.1.17"}],
        "startTime": "2024-05-14T09:21:07Z",
        "initContainerStatuses": [
            {
                "name": "migrate",
                "state": {
                    "terminated": {
                        "exitCode": 0,
                        "reason": "Completed",
                        "startedAt": "2024-05-14T09:21:09Z",
                        "finishedAt": "2024-05-14T09:21:14Z",
                        "containerID": "containerd://0c1d2e3f",
                    }
                },
                "lastState": {},
                "ready": True,
                "restartCount": 0,
                "image": "registry.example.com/shop/migrate:1.4.2",
                "imageID": "registry.example.com/shop/migrate@sha256:aa11",
                "containerID": "containerd://0c1d2e3f",
                "started": False,
                "allocatedResources": {"cpu": "500m", "memory": "256Mi"},
                "resources": {
                    "limits": {"cpu": "1", "memory": "256Mi"},
                    "requests": {"cpu": "500m", "memory": "256Mi"},
                },
            },
            {
                "name": "log-shipper",
                "state": {"running": {"startedAt": "2024-05-14T09:21:15Z"}},
                "lastState": {},
                "ready": True,
                "restartCount": 0,
                "image": "docker.io/fluent/fluent-bit:3.0.4",
                "imageID": "docker.io/fluent/fluent-bit@sha256:bb22",
                "containerID": "containerd://1d2e3f4a",
                "started": True,
                "allocatedResources": {"cpu": "100m", "memory": "64Mi"},
                "resources": {
                    "limits": {"memory": "128Mi"},
                    "requests": {"cpu": "100m", "memory": "64Mi"},
                },
            },
        ],
        "containerStatuses": [
            {
                "name": "app",
                "state": {"running": {"startedAt": "2024-05-14T09:21:16Z"}},
                "lastState": {
                    "terminated": {
                        "exitCode": 137,
                        "reason": "OOMKilled",
                        "startedAt": "2024-05-14T09:21:15Z",
                        "finishedAt": "2024-05-14T09:21:16Z",
                        "containerID": "containerd://2e3f4a5b",
                    }
                },
                "ready": True,
                "restartCount": 1,
                "image": "registry.example.com/shop/web:2.8.0",
                "imageID": "registry.example.com/shop/web@sha256:cc33",
                "containerID": "containerd://3f4a5b6c",
                "started": True,
                "allocatedResources": {"cpu": "1", "memory": "768Mi"},
                "resources": {
                    "limits": {"cpu": "1", "memory": "512Mi"},
                    "requests": {"cpu": "500m", "memory": "512Mi"},
                },
            }
        ],
        "qosClass": "Burstable",
        "resize": "InProgress",
    },
}

# A node that was hot-plugged from 8 to 16 CPUs and 32Gi to 64Gi (KEP-3953): initialCapacity keeps
# the size it registered with.
NODE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {
        "name": "node-a",
        "uid": "5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9",
        "resourceVersion": "90311",
        "creationTimestamp": "2024-05-01T00:00:00Z",
        "labels": {
            "kubernetes.io/arch": "amd64",
            "kubernetes.io/hostname": "node-a",
            "kubernetes.io/os": "linux",
            "node-role.kubernetes.io/worker": "",
        },
        "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
    },
    "spec": {
        "podCIDR": "10.244.1.0/24",
        "podCIDRs": ["10.244.1.0/24"],
        "providerID": "kind://docker/kind/node-a",
        "taints": [
            {
                "key": "dedicated",
                "value": "shop",
                "effect": "NoSchedule",
                "timeAdded": "2024-05-02T10:00:00Z",
            }
        ],
    },
    "status": {
        "capacity": {
            "cpu": "16",
            "ephemeral-storage": "102626232Ki",
            "hugepages-2Mi": "0",
            "memory": "64Gi",
            "pods": "110",
        },
        "allocatable": {
            "cpu": "15500m",
            "ephemeral-storage": "94580335255",
            "hugepages-2Mi": "0",
            "memory": "63Gi",
            "pods": "110",
        },
        "initialCapacity": {
            "cpu": "8",
            "ephemeral-storage": "102626232Ki",
            "hugepages-2Mi": "0",
            "memory": "32Gi",
            "pods": "110",
        },
        "conditions": [
            {
                "type": "MemoryPressure",
                "status": "False",
                "lastHeartbeatTime": "2024-05-14T09:30:00Z",
                "lastTransitionTime": "2024-05-01T00:00:10Z",
                "reason": "KubeletHasSufficientMemory",
                "message": "kubelet has sufficient memory available",
            },
            {
                "type": "Ready",
                "status": "True",
                "lastHeartbeatTime": "2024-05-14T09:30:00Z",
                "lastTransitionTime": "2024-05-01T00:00:31Z",
                "reason": "KubeletReady",
                "message": "kubelet is posting ready status",
            },
        ],
        "addresses": [
            {"type": "InternalIP", "address": "10.0.0.11"},
            {"type": "Hostname", "address": "node-a"},
        ],
        "nodeInfo": {
            "machineID": "4c4c4544004e4b1080",
            "systemUUID": "4c4c4544-004e-4b10-8034-b4c04f4e4b32",
            "bootID": "f1e2d3c4-b5a6-4978-8695-a4b3c2d1e0f9",
            "kernelVersion": "6.8.0-31-generic",
            "osImage": "Ubuntu 24.04 LTS",
            "containerRuntimeVersion": "containerd://1.7.15",
            "kubeletVersion": "v1.32.0",
            "kubeProxyVersion": "v1.32.0",
            "operatingSystem": "linux",
            "architecture": "amd64",
            "swap": {"capacity": 4294967296},
        },
    },
}

QUOTA: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "ResourceQuota",
    "metadata": {
        "name": "compute",
        "namespace": "shop",
        "uid": "0d1e2f3a-4b5c-4d6e-8f7a-9b0c1d2e3f4a",
        "resourceVersion": "5120",
        "creationTimestamp": "2024-05-01T08:00:00Z",
    },
    "spec": {
        "hard": {
            "limits.cpu": "16",
            "limits.memory": "32Gi",
            "pods": "20",
            "requests.cpu": "8",
            "requests.memory": "16Gi",
        },
        "scopes": ["NotTerminating", "NotBestEffort"],
    },
    "status": {
        "hard": {
            "limits.cpu": "16",
            "limits.memory": "32Gi",
            "pods": "20",
            "requests.cpu": "8",
            "requests.memory": "16Gi",
        },
        "used": {
            "limits.cpu": "2100m",
            "limits.memory": "1152Mi",
            "pods": "1",
            "requests.cpu": "1350m",
            "requests.memory": "1088Mi",
        },
    },
}

LIMIT_RANGE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "LimitRange",
    "metadata": {
        "name": "defaults",
        "namespace": "shop",
        "uid": "6a7b8c9d-0e1f-4a2b-9c3d-4e5f6a7b8c9d",
        "resourceVersion": "5121",
        "creationTimestamp": "2024-05-01T08:00:01Z",
    },
    "spec": {
        "limits": [
            {
                "type": "Container",
                "max": {"cpu": "4", "memory": "8Gi"},
                "min": {"cpu": "50m", "memory": "32Mi"},
                "default": {"cpu": "500m", "memory": "512Mi"},
                "defaultRequest": {"cpu": "250m", "memory": "256Mi"},
                "maxLimitRequestRatio": {"cpu": "4"},
            },
            {"type": "Pod", "max": {"cpu": "8", "memory": "16Gi"}},
        ]
    },
}

EVENT: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Event",
    "metadata": {
        "name": "web-7c9d8f6b5-x2k4q.17c9a3f1e2d4b5a6",
        "namespace": "shop",
        "uid": "7b8c9d0e-1f2a-4b3c-8d4e-5f6a7b8c9d0e",
        "resourceVersion": "48214",
        "creationTimestamp": "2024-05-14T09:25:00Z",
    },
    "involvedObject": {
        "kind": "Pod",
        "namespace": "shop",
        "name": "web-7c9d8f6b5-x2k4q",
        "uid": "3f1c2a9e-5b7d-4e2a-9c1f-8d6e4b2a1c0f",
        "apiVersion": "v1",
        "resourceVersion": "48213",
    },
    "reason": "ResizeDeferred",
    "message": "Pod resize is deferred: node didn't have enough capacity: cpu",
    "source": {"component": "kubelet", "host": "node-a"},
    "firstTimestamp": "2024-05-14T09:25:00Z",
    "lastTimestamp": "2024-05-14T09:26:30Z",
    "count": 3,
    "type": "Warning",
    "eventTime": None,
    "reportingComponent": "kubelet",
    "reportingInstance": "node-a",
}

STATUS_INVALID: dict[str, Any] = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": 'Pod "web" is invalid: spec: Forbidden: Pod QOS Class may not change as a result '
    "of resizing",
    "reason": "Invalid",
    "details": {
        "name": "web",
        "kind": "Pod",
        "causes": [
            {
                "reason": "FieldValueForbidden",
                "message": "Forbidden: Pod QOS Class may not change as a result of resizing",
                "field": "spec",
            }
        ],
    },
    "code": 422,
}

STATUS_CONFLICT: dict[str, Any] = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": 'Operation cannot be fulfilled on pods "web": the object has been modified; '
    "please apply your changes to the latest version and try again",
    "reason": "Conflict",
    "details": {"name": "web", "kind": "pods"},
    "code": 409,
}

STATUS_TOO_MANY: dict[str, Any] = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "Too many requests, please try again later.",
    "reason": "TooManyRequests",
    "details": {"retryAfterSeconds": 1},
    "code": 429,
}

ROUND_TRIPS: list[tuple[str, type[K8sModel], dict[str, Any]]] = [
    ("pod-resize-in-progress", Pod, POD),
    ("node-hotplugged", Node, NODE),
    ("resource-quota", ResourceQuota, QUOTA),
    ("limit-range", LimitRange, LIMIT_RANGE),
    ("event", Event, EVENT),
    ("status-invalid", Status, STATUS_INVALID),
    ("status-conflict", Status, STATUS_CONFLICT),
    ("status-retry-after", Status, STATUS_TOO_MANY),
    (
        "pod-list",
        PodList,
        {
            "apiVersion": "v1",
            "kind": "PodList",
            "metadata": {"resourceVersion": "48300", "continue": "eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ"},
            "items": [POD],
        },
    ),
    (
        "node-list",
        NodeList,
        {"apiVersion": "v1", "kind": "NodeList", "metadata": {}, "items": [NODE]},
    ),
    (
        "resource-quota-list",
        ResourceQuotaList,
        {
            "apiVersion": "v1",
            "kind": "ResourceQuotaList",
            "metadata": {"resourceVersion": "5122", "remainingItemCount": 0},
            "items": [QUOTA],
        },
    ),
    (
        "limit-range-list",
        LimitRangeList,
        {"apiVersion": "v1", "kind": "LimitRangeList", "metadata": {}, "items": [LIMIT_RANGE]},
    ),
]


@pytest.mark.parametrize(
    ("model", "doc"), [r[1:] for r in ROUND_TRIPS], ids=[r[0] for r in ROUND_TRIPS]
)
def test_round_trip_kubernetes_json(model: type[K8sModel], doc: dict[str, Any]) -> None:
    parsed = model.from_k8s(copy.deepcopy(doc))
    assert parsed.to_k8s() == drop_nulls(doc)
    # The same through JSON text, and the output parses back to an equal object (event replay).
    assert model.model_validate_json(json.dumps(doc)) == parsed
    assert model.from_k8s(parsed.to_k8s()) == parsed


def test_round_trip_does_not_mutate_input() -> None:
    doc = copy.deepcopy(POD)
    Pod.from_k8s(doc)
    assert doc == POD


def test_quantities_are_canonicalized_on_output() -> None:
    pod = Pod.from_k8s(
        {
            "spec": {
                "containers": [
                    {
                        "name": "app",
                        "resources": {
                            "requests": {"cpu": "0.5", "memory": "1024Mi"},
                            "limits": {"cpu": "1000m", "memory": 1073741824},
                        },
                    }
                ]
            }
        }
    )
    resources = pod.to_k8s()["spec"]["containers"][0]["resources"]
    assert resources == {
        "requests": {"cpu": "500m", "memory": "1Gi"},
        # A plain number keeps the DecimalSI format it was written in, as in Kubernetes.
        "limits": {"cpu": "1", "memory": "1073741824"},
    }


def test_typed_access_to_kep_fields() -> None:
    pod = Pod.from_k8s(POD)
    assert pod.status.resize == "InProgress"
    sidecar = pod.spec.init_containers[1] if pod.spec.init_containers else None
    assert sidecar is not None and sidecar.restart_policy == "Always"
    app_status = (pod.status.container_statuses or [])[0]
    assert app_status.allocated_resources == {
        "cpu": Quantity.parse("1"),
        "memory": Quantity.parse("768Mi"),
    }
    assert app_status.resources is not None and app_status.resources.requests is not None
    assert app_status.resources.requests["cpu"] == Quantity.parse("500m")
    assert pod.spec.containers[0].resize_policy is not None
    assert pod.spec.containers[0].resize_policy[1].restart_policy == "RestartContainer"
    assert pod.status.host_ip == "10.0.0.11"
    assert pod.metadata.creation_timestamp == datetime(2024, 5, 14, 9, 21, 7, tzinfo=UTC)

    node = Node.from_k8s(NODE)
    assert node.status.initial_capacity is not None and node.status.capacity is not None
    assert node.status.initial_capacity["cpu"] == Quantity.parse("8")
    assert node.status.capacity["memory"] == Quantity.parse("64Gi")


def test_defaults_serialize_like_go() -> None:
    # Struct (non-pointer) fields and fields without omitempty are always present in Go's output.
    assert Pod().to_k8s() == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {},
        "spec": {"containers": [], "restartPolicy": "Always"},
        "status": {},
    }
    assert Status(status="Failure", code=404, reason="NotFound").to_k8s() == {
        "apiVersion": "v1",
        "kind": "Status",
        "metadata": {},
        "status": "Failure",
        "reason": "NotFound",
        "code": 404,
    }
    assert ContainerStatus(name="app").to_k8s() == {
        "name": "app",
        "state": {},
        "lastState": {},
        "ready": False,
        "restartCount": 0,
        "image": "",
        "imageID": "",
    }
    assert Container(name="app").to_k8s() == {"name": "app", "resources": {}}


def test_python_names_and_aliases_both_accepted() -> None:
    by_name = Pod(
        metadata=ObjectMeta(name="web", namespace="shop"),
        spec=PodSpec(
            containers=[
                Container(
                    name="app",
                    resources=ResourceRequirements(requests={"cpu": Quantity.parse("1")}),
                )
            ],
            node_name="node-a",
        ),
        status=PodStatus(host_ip="10.0.0.1", pod_ip="10.244.0.5", resize="Proposed"),
    )
    by_alias = Pod.from_k8s(
        {
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {
                "containers": [{"name": "app", "resources": {"requests": {"cpu": "1"}}}],
                "nodeName": "node-a",
            },
            "status": {"hostIP": "10.0.0.1", "podIP": "10.244.0.5", "resize": "Proposed"},
        }
    )
    assert by_name == by_alias
    out = by_name.to_k8s()
    assert out["spec"]["nodeName"] == "node-a"
    assert out["status"] == {"hostIP": "10.0.0.1", "podIP": "10.244.0.5", "resize": "Proposed"}


_with = with_value


UNTYPED_FIELDS: list[tuple[str, type[K8sModel], dict[str, Any], tuple[str | int, ...]]] = [
    ("pod-top-level", Pod, POD, ("spec2",)),
    ("pod-metadata", Pod, POD, ("metadata", "selfLnk")),
    ("pod-container", Pod, POD, ("spec", "containers", 0, "resource")),
    ("pod-container-snake-case-typo", Pod, POD, ("spec", "containers", 0, "resize_polcy")),
    ("pod-resize-policy", Pod, POD, ("spec", "containers", 0, "resizePolicy", 0, "policy")),
    ("pod-resources", Pod, POD, ("spec", "containers", 0, "resources", "claims2")),
    ("pod-status", Pod, POD, ("status", "resizeStatus")),
    ("pod-container-status", Pod, POD, ("status", "containerStatuses", 0, "allocated")),
    ("pod-container-state", Pod, POD, ("status", "containerStatuses", 0, "state", "paused")),
    ("node-status", Node, NODE, ("status", "initialAllocatable")),
    ("node-info", Node, NODE, ("status", "nodeInfo", "gpuDriver")),
    ("quota-spec", ResourceQuota, QUOTA, ("spec", "soft")),
    ("limit-range-item", LimitRange, LIMIT_RANGE, ("spec", "limits", 0, "defaultLimit")),
    ("event", Event, EVENT, ("severity",)),
    ("status", Status, STATUS_INVALID, ("retryAfter",)),
    ("status-cause", Status, STATUS_INVALID, ("details", "causes", 0, "path")),
]


@pytest.mark.parametrize(
    ("model", "doc", "path"), [r[1:] for r in UNTYPED_FIELDS], ids=[r[0] for r in UNTYPED_FIELDS]
)
def test_untyped_fields_are_kept_round_trip(
    model: type[K8sModel], doc: dict[str, Any], path: tuple[str | int, ...]
) -> None:
    """Fields a model does not type travel as JSON and come back as sent (the apiserver
    decides which are Kubernetes fields, against Kubernetes' schema, before decoding)."""
    sent = _with(doc, path, {"kept": ["as", "sent", 1]})
    back: Any = model.from_k8s(sent).to_k8s()
    for key in path:
        back = back[key]
    assert back == {"kept": ["as", "sent", 1]}


WRONG_TYPES: list[tuple[str, type[K8sModel], dict[str, Any], tuple[str | int, ...], Any]] = [
    ("restart-count-string", Pod, POD, ("status", "containerStatuses", 0, "restartCount"), "1"),
    ("ready-string", Pod, POD, ("status", "containerStatuses", 0, "ready"), "true"),
    ("container-port-float", Pod, POD, ("spec", "containers", 0, "ports", 0, "containerPort"), 1.5),
    ("container-name-int", Pod, POD, ("spec", "containers", 0, "name"), 7),
    ("command-not-list", Pod, POD, ("spec", "containers", 0, "command"), "/bin/sh"),
    ("label-value-int", Pod, POD, ("metadata", "labels", "tier"), 3),
    ("containers-object", Pod, POD, ("spec", "containers"), {"name": "app"}),
    ("resize-unknown-value", Pod, POD, ("status", "resize"), "Pending"),
    ("resize-empty-string", Pod, POD, ("status", "resize"), ""),
    ("phase-lowercase", Pod, POD, ("status", "phase"), "running"),
    ("qos-class-unknown", Pod, POD, ("status", "qosClass"), "Premium"),
    ("pod-restart-policy", Pod, POD, ("spec", "restartPolicy"), "Sometimes"),
    (
        "sidecar-restart-policy",
        Pod,
        POD,
        ("spec", "initContainers", 1, "restartPolicy"),
        "OnFailure",
    ),
    (
        "resize-restart-policy",
        Pod,
        POD,
        ("spec", "containers", 0, "resizePolicy", 0, "restartPolicy"),
        "Never",
    ),
    ("quantity-garbage", Pod, POD, ("spec", "containers", 0, "resources", "requests", "cpu"), "x1"),
    ("quantity-list", Node, NODE, ("status", "capacity", "cpu"), ["16"]),
    ("timestamp-not-rfc3339", Pod, POD, ("metadata", "creationTimestamp"), "yesterday"),
    ("timestamp-no-offset", Pod, POD, ("metadata", "creationTimestamp"), "2024-05-14T09:21:07"),
    ("timestamp-lowercase-t", Pod, POD, ("status", "startTime"), "2024-05-14t09:21:07z"),
    ("timestamp-date-only", Pod, POD, ("status", "startTime"), "2024-05-14"),
    ("timestamp-unix-seconds", Pod, POD, ("status", "startTime"), 1715678467),
    ("api-version", Pod, POD, ("apiVersion",), "v2"),
    ("kind-mismatch", Pod, POD, ("kind",), "Node"),
    ("condition-status-bool", Node, NODE, ("status", "conditions", 0, "status"), True),
    ("taint-effect", Node, NODE, ("spec", "taints", 0, "effect"), "NoRun"),
    ("address-type", Node, NODE, ("status", "addresses", 0, "type"), "PublicIP"),
    ("quota-scope", ResourceQuota, QUOTA, ("spec", "scopes", 0), "Everything"),
    ("limit-type", LimitRange, LIMIT_RANGE, ("spec", "limits", 0, "type"), "Namespace"),
    ("event-type", Event, EVENT, ("type",), "Error"),
    ("event-count-string", Event, EVENT, ("count",), "3"),
    ("status-code-string", Status, STATUS_INVALID, ("code",), "422"),
    ("status-status", Status, STATUS_INVALID, ("status",), "Error"),
]


@pytest.mark.parametrize(
    ("model", "doc", "path", "value"),
    [r[1:] for r in WRONG_TYPES],
    ids=[r[0] for r in WRONG_TYPES],
)
def test_wrong_types_rejected(
    model: type[K8sModel], doc: dict[str, Any], path: tuple[str | int, ...], value: Any
) -> None:
    with pytest.raises(ValidationError):
        model.from_k8s(_with(doc, path, value))


MISSING_REQUIRED: list[tuple[str, type[K8sModel], dict[str, Any], tuple[str | int, ...]]] = [
    ("container-name", Pod, POD, ("spec", "containers", 0)),
    ("container-port", Pod, POD, ("spec", "containers", 0, "ports", 0)),
    ("resize-policy-resource", Pod, POD, ("spec", "containers", 0, "resizePolicy", 0)),
    ("status-name", Pod, POD, ("status", "containerStatuses", 0)),
    (
        "terminated-exit-code",
        Pod,
        POD,
        ("status", "initContainerStatuses", 0, "state", "terminated"),
    ),
    ("condition-status", Pod, POD, ("status", "conditions", 0)),
    ("taint-effect", Node, NODE, ("spec", "taints", 0)),
    ("limit-type", LimitRange, LIMIT_RANGE, ("spec", "limits", 0)),
    ("event-involved-object", Event, EVENT, ()),
]
_MISSING_KEY = {
    "container-name": "name",
    "container-port": "containerPort",
    "resize-policy-resource": "resourceName",
    "status-name": "name",
    "terminated-exit-code": "exitCode",
    "condition-status": "status",
    "taint-effect": "effect",
    "limit-type": "type",
    "event-involved-object": "involvedObject",
}


@pytest.mark.parametrize(
    ("name", "model", "doc", "path"), MISSING_REQUIRED, ids=[r[0] for r in MISSING_REQUIRED]
)
def test_missing_required_field_rejected(
    name: str, model: type[K8sModel], doc: dict[str, Any], path: tuple[str | int, ...]
) -> None:
    out = copy.deepcopy(doc)
    target: Any = out
    for key in path:
        target = target[key]
    del target[_MISSING_KEY[name]]
    with pytest.raises(ValidationError) as err:
        model.from_k8s(out)
    assert err.value.errors()[0]["type"] == "missing"


TIMES: list[tuple[str, Any, str]] = [
    ("utc-z", "2024-01-01T00:00:00Z", "2024-01-01T00:00:00Z"),
    ("offset-normalized-to-utc", "2024-01-01T02:00:00+02:00", "2024-01-01T00:00:00Z"),
    ("fraction-truncated", "2024-01-01T00:00:00.999999999Z", "2024-01-01T00:00:00Z"),
    (
        "aware-datetime",
        datetime(2024, 1, 1, 5, 30, tzinfo=timezone(timedelta(hours=5, minutes=30))),
        "2024-01-01T00:00:00Z",
    ),
    ("naive-datetime-is-utc", datetime(2024, 1, 1, 0, 0, 0, 123456), "2024-01-01T00:00:00Z"),
]


@pytest.mark.parametrize(("value", "wire"), [t[1:] for t in TIMES], ids=[t[0] for t in TIMES])
def test_time_wire_format(value: Any, wire: str) -> None:
    meta = ObjectMeta(creation_timestamp=value)
    assert meta.to_k8s() == {"creationTimestamp": wire}
    assert ObjectMeta.from_k8s(meta.to_k8s()) == meta


def test_format_time_answers_each_instant_with_its_own_string() -> None:
    from schemas.base import format_time

    # format_time caches by the UTC instant: equal instants share a string, others never do.
    first = datetime(2024, 1, 1, 0, 0, 0, 999999, tzinfo=UTC)
    later = datetime(2024, 1, 1, 0, 0, 1, tzinfo=UTC)
    same_instant = datetime(2024, 1, 1, 2, 0, 1, tzinfo=timezone(timedelta(hours=2)))
    for _ in range(2):
        assert format_time(first) == "2024-01-01T00:00:00Z"
        assert format_time(later) == "2024-01-01T00:00:01Z"
        assert format_time(same_instant) == "2024-01-01T00:00:01Z"


def test_event_time_keeps_microseconds() -> None:
    event = Event.from_k8s({**EVENT, "eventTime": "2024-05-14T09:25:00.123456789+00:00"})
    assert event.to_k8s()["eventTime"] == "2024-05-14T09:25:00.123456Z"
    assert Event.from_k8s(event.to_k8s()) == event


def test_json_schema_is_generated() -> None:
    # Event payloads embed these models; DESIGN.md §1 commits their generated JSON Schemas.
    schema = Pod.model_json_schema(by_alias=True)
    assert "apiVersion" in schema["properties"]
    assert "ContainerStatus" in schema["$defs"]
    assert "allocatedResources" in schema["$defs"]["ContainerStatus"]["properties"]


def test_deep_copy_is_equal_and_shares_nothing_mutable() -> None:
    from tests import factories

    pod = factories.pod("ns", "web")
    pod.metadata.labels = {"app": "web"}
    copied = pod.model_copy(deep=True)
    assert copied == pod
    assert copied.model_fields_set == pod.model_fields_set
    copied.metadata.labels["app"] = "other"
    copied.spec.containers[0].resources.requests["cpu"] = Quantity("2")  # type: ignore[index]
    copied.spec.containers.append(copied.spec.containers[0].model_copy(update={"name": "b"}))
    assert pod.metadata.labels == {"app": "web"}
    assert str(pod.spec.containers[0].resources.requests["cpu"]) == "100m"  # type: ignore[index]
    assert [c.name for c in pod.spec.containers] == ["app"]
