"""Protobuf bodies as kubectl's typed commands send them, read as the JSON they stand for."""

from __future__ import annotations

import pytest

from schemas.k8sproto.k8s.io.api.authorization.v1 import generated_pb2 as authorization_v1
from schemas.k8sproto.k8s.io.api.core.v1 import generated_pb2 as core_v1
from schemas.k8sproto.k8s.io.api.policy.v1 import generated_pb2 as policy_v1
from services.apiserver.protobuf import ProtobufError, decode
from tests.factories import protobuf_body


def test_a_pod_as_kubectl_run_sends_it() -> None:
    pod = core_v1.Pod()
    # Go writes every string and struct of a value field, empty or not.
    pod.metadata.name, pod.metadata.namespace, pod.metadata.generateName = "web", "", ""
    pod.metadata.labels["run"] = "web"
    pod.metadata.creationTimestamp.SetInParent()  # the zero time
    container = pod.spec.containers.add(name="web", image="nginx", stdin=False, tty=False)
    container.resources.requests["cpu"].string = "100m"
    container.resources.limits["memory"].string = "128Mi"
    container.ports.add(containerPort=80, protocol="TCP")
    policy = container.resizePolicy.add(resourceName="cpu", restartPolicy="NotRequired")
    assert policy.resourceName == "cpu"
    pod.spec.restartPolicy, pod.spec.dnsPolicy = "Always", "ClusterFirst"
    pod.status.SetInParent()
    assert decode(protobuf_body("v1", "Pod", pod)) == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "labels": {"run": "web"}},
        "spec": {
            "containers": [
                {
                    "name": "web",
                    "image": "nginx",
                    "ports": [{"containerPort": 80, "protocol": "TCP"}],
                    "resources": {"limits": {"memory": "128Mi"}, "requests": {"cpu": "100m"}},
                    "stdin": False,
                    "tty": False,
                    "resizePolicy": [{"resourceName": "cpu", "restartPolicy": "NotRequired"}],
                }
            ],
            "restartPolicy": "Always",
            "dnsPolicy": "ClusterFirst",
        },
    }


def test_times_int_or_strings_and_quantities() -> None:
    pod = core_v1.Pod()
    pod.metadata.name = "timed"
    pod.metadata.creationTimestamp.seconds = 1_795_000_000
    probe = pod.spec.containers.add(name="app").livenessProbe
    probe.handler.httpGet.port.type, probe.handler.httpGet.port.strVal = 1, "http"
    probe.handler.tcpSocket.port.intVal = 8080
    probe.periodSeconds = 5
    event = core_v1.Event(reason="Resized")
    event.eventTime.seconds, event.eventTime.nanos = 1_795_000_000, 123_456_000
    quota = core_v1.ResourceQuota()
    quota.spec.hard["pods"].string = "10"
    decoded = decode(protobuf_body("v1", "Pod", pod))
    assert decoded["metadata"]["creationTimestamp"] == "2026-11-18T11:06:40Z"
    # The probe's handler is inlined, as in Go's JSON.
    assert decoded["spec"]["containers"][0]["livenessProbe"] == {
        "httpGet": {"port": "http"},
        "tcpSocket": {"port": 8080},
        "periodSeconds": 5,
    }
    assert decode(protobuf_body("v1", "Event", event))["eventTime"] == (
        "2026-11-18T11:06:40.123456Z"
    )
    assert decode(protobuf_body("v1", "ResourceQuota", quota))["spec"] == {"hard": {"pods": "10"}}


def test_a_namespace_with_labels_and_annotations() -> None:
    namespace = core_v1.Namespace()
    namespace.metadata.name = "team"
    namespace.metadata.labels.update({"env": "dev", "tier": "web"})
    namespace.metadata.annotations["note"] = "x"
    assert decode(protobuf_body("v1", "Namespace", namespace)) == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": "team",
            "labels": {"env": "dev", "tier": "web"},
            "annotations": {"note": "x"},
        },
    }


def test_an_eviction_as_kubectl_drain_sends_it() -> None:
    eviction = policy_v1.Eviction()
    eviction.metadata.name, eviction.metadata.namespace = "web", "default"
    eviction.deleteOptions.preconditions.uid = "u-1"
    eviction.deleteOptions.dryRun.append("All")
    assert decode(protobuf_body("policy/v1", "Eviction", eviction)) == {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "web", "namespace": "default"},
        "deleteOptions": {"preconditions": {"uid": "u-1"}, "dryRun": ["All"]},
    }


def test_the_self_reviews() -> None:
    access = authorization_v1.SelfSubjectAccessReview()
    attributes = access.spec.resourceAttributes
    attributes.namespace, attributes.verb, attributes.resource = "default", "patch", "pods"
    attributes.subresource = "resize"
    rules = authorization_v1.SelfSubjectRulesReview()
    rules.spec.namespace = "team-a"
    group = "authorization.k8s.io/v1"
    assert decode(protobuf_body(group, "SelfSubjectAccessReview", access))["spec"] == {
        "resourceAttributes": {
            "namespace": "default",
            "verb": "patch",
            "resource": "pods",
            "subresource": "resize",
        }
    }
    assert decode(protobuf_body(group, "SelfSubjectRulesReview", rules))["spec"] == {
        "namespace": "team-a"
    }


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{}", "missing the k8s protobuf magic prefix"),
        (protobuf_body("v1", "Secret", core_v1.Secret()), r"no Secret \(v1\) is read here"),
        (protobuf_body("apps/v1", "Pod", core_v1.Pod()), r"no Pod \(apps/v1\) is read here"),
        (b"k8s\x00" + bytes([1 << 3 | 2, 50]) + b"short", "not a valid Unknown"),
    ],
)
def test_what_is_not_read_says_why(body: bytes, message: str) -> None:
    with pytest.raises(ProtobufError, match=message):
        decode(body)
