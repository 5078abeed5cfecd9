"""kube-apiserver's defaults for the untyped Pod fields, case by case."""

from __future__ import annotations

from typing import Any

from services.apiserver.defaulting import default_pod_json

NOT_READY = {
    "key": "node.kubernetes.io/not-ready",
    "operator": "Exists",
    "effect": "NoExecute",
    "tolerationSeconds": 300,
}
UNREACHABLE = {**NOT_READY, "key": "node.kubernetes.io/unreachable"}


def defaulted(spec: dict[str, Any]) -> dict[str, Any]:
    pod = {"metadata": {"name": "p"}, "spec": spec}
    default_pod_json(pod)
    return pod["spec"]


def test_pod_spec_defaults() -> None:
    spec = defaulted({"containers": [{"name": "c"}]})
    assert spec == {
        "containers": [
            {
                "name": "c",
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
            }
        ],
        "enableServiceLinks": True,
        "securityContext": {},
        "priority": 0,
        "preemptionPolicy": "PreemptLowerPriority",
        "tolerations": [NOT_READY, UNREACHABLE],
    }


def test_values_sent_are_kept() -> None:
    spec = defaulted(
        {
            "containers": [{"name": "c", "terminationMessagePolicy": "FallbackToLogsOnError"}],
            "enableServiceLinks": False,
            "securityContext": {"runAsUser": 1000},
            "priorityClassName": "high",
        }
    )
    assert spec["enableServiceLinks"] is False
    assert spec["securityContext"] == {"runAsUser": 1000}
    assert "priority" not in spec and "preemptionPolicy" not in spec
    assert spec["containers"][0]["terminationMessagePolicy"] == "FallbackToLogsOnError"


def test_probe_and_http_get_defaults() -> None:
    spec = defaulted(
        {
            "containers": [
                {
                    "name": "c",
                    "readinessProbe": {"httpGet": {"port": 8080}},
                    "livenessProbe": {"exec": {"command": ["true"]}, "failureThreshold": 5},
                    "lifecycle": {"preStop": {"httpGet": {"port": 80, "path": "/stop"}}},
                }
            ]
        }
    )
    container = spec["containers"][0]
    assert container["readinessProbe"] == {
        "httpGet": {"port": 8080, "path": "/", "scheme": "HTTP"},
        "timeoutSeconds": 1,
        "periodSeconds": 10,
        "successThreshold": 1,
        "failureThreshold": 3,
    }
    assert container["livenessProbe"]["failureThreshold"] == 5
    assert container["lifecycle"]["preStop"]["httpGet"] == {
        "port": 80,
        "path": "/stop",
        "scheme": "HTTP",
    }


def test_field_refs_and_volumes() -> None:
    spec = defaulted(
        {
            "containers": [
                {
                    "name": "c",
                    "env": [
                        {"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}
                    ],
                }
            ],
            "volumes": [
                {"name": "bare"},
                {"name": "cm", "configMap": {"name": "cfg"}},
                {"name": "s", "secret": {"secretName": "x", "defaultMode": 256}},
                {
                    "name": "d",
                    "downwardAPI": {
                        "items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]
                    },
                },
            ],
        }
    )
    env = spec["containers"][0]["env"][0]
    assert env["valueFrom"]["fieldRef"] == {"fieldPath": "spec.nodeName", "apiVersion": "v1"}
    bare, cm, secret, downward = spec["volumes"]
    assert bare == {"name": "bare", "emptyDir": {}}
    assert cm["configMap"] == {"name": "cfg", "defaultMode": 420}
    assert secret["secret"]["defaultMode"] == 256
    assert downward["downwardAPI"]["defaultMode"] == 420
    assert downward["downwardAPI"]["items"][0]["fieldRef"]["apiVersion"] == "v1"


def test_default_tolerations_only_when_not_tolerated() -> None:
    everything = {"operator": "Exists"}
    assert defaulted({"containers": [], "tolerations": [everything]})["tolerations"] == [everything]
    own = {**NOT_READY, "tolerationSeconds": 30}
    assert defaulted({"containers": [], "tolerations": [own]})["tolerations"] == [own, UNREACHABLE]
    no_schedule = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}
    assert defaulted({"containers": [], "tolerations": [no_schedule]})["tolerations"] == [
        no_schedule,
        NOT_READY,
        UNREACHABLE,
    ]


def test_defaulting_is_idempotent() -> None:
    once = defaulted({"containers": [{"name": "c", "readinessProbe": {"httpGet": {"port": 1}}}]})
    assert defaulted(once) == once
