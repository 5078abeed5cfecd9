"""`kubectl get` columns as kube-apiserver's printers compute them, case by case."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from services.apiserver.tables import TableRequest, human_duration, parse_accept, table

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
META = TableRequest("v1", "Metadata")


def ago(seconds: int) -> str:
    return (NOW - timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (-5, "<invalid>"),
        (-1, "0s"),
        (5, "5s"),
        (119, "119s"),
        (120, "2m"),
        (182, "3m2s"),
        (600, "10m"),
        (179 * 60, "179m"),
        (3 * 3600, "3h"),
        (3 * 3600 + 120, "3h2m"),
        (8 * 3600, "8h"),
        (47 * 3600, "47h"),
        (2 * 86400 + 5 * 3600, "2d5h"),
        (10 * 86400, "10d"),
        (3 * 365 * 86400 + 86400, "3y1d"),
        (9 * 365 * 86400, "9y"),
    ],
)
def test_human_duration(seconds: int, text: str) -> None:
    assert human_duration(seconds) == text


def running(
    name: str = "app", ready: bool = True, restarts: int = 0, **extra: Any
) -> dict[str, Any]:
    return {
        "name": name,
        "ready": ready,
        "restartCount": restarts,
        "state": {"running": {"startedAt": ago(60)}},
        **extra,
    }


def pod(status: dict[str, Any], *, containers: int = 1, **spec: Any) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "metadata": {"name": "web", "creationTimestamp": ago(300)},
        "spec": {"containers": [{"name": f"c{i}"} for i in range(containers)], **spec},
        "status": status,
    }


POD_CASES = [
    ("pending", pod({"phase": "Pending"}), ["0/1", "Pending", "0"]),
    (
        "running and ready",
        pod({"phase": "Running", "containerStatuses": [running()]}),
        ["1/1", "Running", "0"],
    ),
    (
        "one of two ready",
        pod(
            {"phase": "Running", "containerStatuses": [running("a"), running("b", ready=False)]},
            containers=2,
        ),
        ["1/2", "Running", "0"],
    ),
    (
        "crash loop with a last restart",
        pod(
            {
                "phase": "Running",
                "containerStatuses": [
                    {
                        "name": "app",
                        "ready": False,
                        "restartCount": 5,
                        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                        "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(120)}},
                    }
                ],
            }
        ),
        ["0/1", "CrashLoopBackOff", "5 (2m ago)"],
    ),
    (
        "evicted",
        pod({"phase": "Failed", "reason": "Evicted"}),
        ["0/1", "Evicted", "0"],
    ),
    (
        "terminated without a reason",
        pod(
            {
                "phase": "Running",
                "containerStatuses": [
                    {"name": "app", "state": {"terminated": {"exitCode": 137, "signal": 9}}}
                ],
            }
        ),
        ["0/1", "Signal:9", "0"],
    ),
    (
        "waiting on the second of two init containers",
        pod(
            {
                "phase": "Pending",
                "initContainerStatuses": [
                    {"name": "i1", "state": {"terminated": {"exitCode": 0}}},
                    {"name": "i2", "state": {"running": {}}},
                ],
            },
            initContainers=[{"name": "i1"}, {"name": "i2"}],
        ),
        ["0/1", "Init:1/2", "0"],
    ),
    (
        "a started sidecar counts as a container",
        pod(
            {
                "phase": "Running",
                "conditions": [{"type": "Initialized", "status": "True"}],
                "initContainerStatuses": [
                    {"name": "log", "started": True, "ready": True, "state": {"running": {}}}
                ],
                "containerStatuses": [running()],
            },
            initContainers=[{"name": "log", "restartPolicy": "Always"}],
        ),
        ["2/2", "Running", "0"],
    ),
]


@pytest.mark.parametrize(
    ("obj", "cells"), [c[1:] for c in POD_CASES], ids=[c[0] for c in POD_CASES]
)
def test_pod_columns(obj: dict[str, Any], cells: list[str]) -> None:
    row = table("Pod", [obj], META, NOW)["rows"][0]["cells"]
    assert row[0] == "web" and row[1:4] == cells and row[4] == "5m"


def test_terminating_pod_and_wide_columns() -> None:
    obj = pod(
        {
            "phase": "Running",
            "podIPs": [{"ip": "10.244.0.5"}],
            "conditions": [{"type": "example.com/gate", "status": "True"}],
        },
        nodeName="n1",
        readinessGates=[{"conditionType": "example.com/gate"}, {"conditionType": "other"}],
    )
    obj["metadata"]["deletionTimestamp"] = ago(1)
    assert table("Pod", [obj], META, NOW)["rows"][0]["cells"][2:] == [
        "Terminating", "0", "5m", "10.244.0.5", "n1", "<none>", "1/2",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("conditions", "unschedulable", "status"),
    [
        ([{"type": "Ready", "status": "True"}], False, "Ready"),
        ([{"type": "Ready", "status": "False"}], False, "NotReady"),
        ([], False, "Unknown"),
        ([{"type": "Ready", "status": "True"}], True, "Ready,SchedulingDisabled"),
    ],
)
def test_node_status(conditions: list[dict[str, str]], unschedulable: bool, status: str) -> None:
    node = {
        "metadata": {
            "name": "n1",
            "labels": {"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "x"},
        },
        "spec": {"unschedulable": unschedulable},
        "status": {"conditions": conditions},
    }
    cells = table("Node", [node], META, NOW)["rows"][0]["cells"]
    assert cells[1:3] == [status, "control-plane,x"]


def test_table_shape_and_include_object() -> None:
    obj = pod({"phase": "Pending"})
    out = table("Pod", [obj], META, NOW, "42")
    assert out["kind"] == "Table" and out["apiVersion"] == "meta.k8s.io/v1"
    assert out["metadata"] == {"resourceVersion": "42"}
    assert [c["name"] for c in out["columnDefinitions"] if c["priority"] == 0] == [
        "Name", "Ready", "Status", "Restarts", "Age",
    ]  # fmt: skip
    assert out["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    assert table("Pod", [obj], TableRequest("v1", "Object"), NOW)["rows"][0]["object"] == obj
    assert "object" not in table("Pod", [obj], TableRequest("v1", "None"), NOW)["rows"][0]


def test_quota_request_and_limit_columns() -> None:
    quota = {
        "metadata": {"name": "q"},
        "status": {
            "hard": {"requests.cpu": "2", "limits.memory": "4Gi"},
            "used": {"requests.cpu": "500m"},
        },
    }
    cells = table("ResourceQuota", [quota], META, NOW)["rows"][0]["cells"]
    assert cells[2:] == ["requests.cpu: 500m/2", "limits.memory: 0/4Gi"]


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        (None, None),
        ("application/json", None),
        (
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;"
            "g=meta.k8s.io,application/json",
            TableRequest("v1", "Metadata"),
        ),
        ("application/json;as=Table;v=v1beta1;g=meta.k8s.io", TableRequest("v1beta1", "Metadata")),
        ("application/json;as=Table;v=v2;g=meta.k8s.io", None),
        ("application/json, application/json;as=Table;v=v1;g=meta.k8s.io", None),
    ],
)
def test_parse_accept(accept: str | None, expected: TableRequest | None) -> None:
    assert parse_accept(accept, None) == expected


def test_pdb_columns() -> None:
    budgets = [
        {
            "metadata": {"name": "web", "creationTimestamp": ago(300)},
            "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}},
            "status": {"disruptionsAllowed": 1, "currentHealthy": 3},
        },
        {
            "metadata": {"name": "db", "creationTimestamp": ago(7200)},
            "spec": {"maxUnavailable": "25%"},
        },
    ]
    out = table("PodDisruptionBudget", budgets, META, NOW)
    assert [(c["name"], c["type"], c["priority"]) for c in out["columnDefinitions"]] == [
        ("Name", "string", 0),
        ("Min Available", "string", 0),
        ("Max Unavailable", "string", 0),
        ("Allowed Disruptions", "integer", 0),
        ("Age", "string", 0),
    ]
    assert [row["cells"] for row in out["rows"]] == [
        ["web", "2", "N/A", 1, "5m"],
        ["db", "N/A", "25%", 0, "120m"],
    ]
