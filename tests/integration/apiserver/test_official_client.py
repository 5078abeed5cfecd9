"""The apiserver through the official Kubernetes Python client, as users drive it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from inplace.core.bus.producer import EventProducer
from inplace.core.projection.replay import pod_history
from inplace.core.settings import Settings
from schemas import events as ev
from schemas.envelope import Envelope
from schemas.k8sproto.k8s.io.api.core.v1 import generated_pb2 as core_v1
from tests.factories import protobuf_body
from tests.integration.conftest import RoleProcess


def core(apiserver: RoleProcess) -> client.CoreV1Api:
    config = client.Configuration(host=apiserver.url)
    return client.CoreV1Api(client.ApiClient(config))


def pod_body(name: str, cpu: str = "500m", memory: str = "256Mi", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {
            "containers": [
                {
                    "name": "c1",
                    "image": "nginx:1.27",
                    "resources": {
                        "requests": {"cpu": cpu, "memory": memory},
                        "limits": {"cpu": cpu, "memory": memory},
                    },
                }
            ],
            **spec,
        },
    }


async def call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return await asyncio.to_thread(fn, *args, **kwargs)


def status_of(exc: ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(exc.body)
    return body


async def test_create_resize_read_status_and_history(
    apiserver: RoleProcess, settings: Settings
) -> None:
    v1 = core(apiserver)
    created = await call(v1.create_namespaced_pod, "default", pod_body("web-0"))
    assert created.metadata.uid and created.status.phase == "Pending"
    assert created.status.qos_class == "Guaranteed"

    patch = {
        "spec": {
            "containers": [
                {
                    "name": "c1",
                    "resources": {
                        "requests": {"cpu": "800m", "memory": "256Mi"},
                        "limits": {"cpu": "800m", "memory": "256Mi"},
                    },
                }
            ]
        }
    }
    resized = await call(v1.patch_namespaced_pod_resize, "web-0", "default", patch)
    assert resized.spec.containers[0].resources.requests["cpu"] == "800m"
    assert resized.status.resize == "Proposed"
    assert resized.metadata.generation == 2
    assert int(resized.metadata.resource_version) > int(created.metadata.resource_version)

    # read-your-writes: a plain read right after sees the proposal
    read = await call(v1.read_namespaced_pod_resize, "web-0", "default")
    assert read.status.resize == "Proposed"
    assert read.spec.containers[0].resources.limits["cpu"] == "800m"

    history = await pod_history(settings.kafka_bootstrap, "default", "web-0", settings.topic_prefix)
    assert [h.record.envelope.type for h in history] == ["PodCreated", "ResizeProposed"]
    proposal = history[1].record.envelope.payload
    assert isinstance(proposal, ev.ResizeProposed)
    assert str(proposal.containers[0].resources.requests["cpu"]) == "800m"


async def test_list_with_selectors_and_watch_resume(apiserver: RoleProcess) -> None:
    v1 = core(apiserver)
    for name in ("a-0", "a-1"):
        await call(v1.create_namespaced_pod, "default", pod_body(name))
    other = pod_body("b-0")
    other["metadata"]["labels"] = {"app": "db"}
    await call(v1.create_namespaced_pod, "default", other)

    listed = await call(v1.list_namespaced_pod, "default", label_selector="app=web")
    assert sorted(p.metadata.name for p in listed.items) == ["a-0", "a-1"]
    by_field = await call(v1.list_pod_for_all_namespaces, field_selector="metadata.name=b-0")
    assert [p.metadata.name for p in by_field.items] == ["b-0"]

    rv = listed.metadata.resource_version
    patch = {
        "spec": {
            "containers": [
                {
                    "name": "c1",
                    "resources": {"requests": {"cpu": "600m"}, "limits": {"cpu": "600m"}},
                }
            ]
        }
    }
    await call(v1.patch_namespaced_pod_resize, "a-1", "default", patch)

    def collect() -> list[tuple[str, str, str | None]]:
        stream = watch.Watch().stream(
            v1.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=2
        )
        return [(e["type"], e["object"].metadata.name, e["object"].status.resize) for e in stream]

    assert await call(collect) == [("MODIFIED", "a-1", "Proposed")]

    def initial() -> list[tuple[str, str]]:
        stream = watch.Watch().stream(
            v1.list_namespaced_pod, "default", label_selector="app=web", timeout_seconds=1
        )
        return sorted((e["type"], e["object"].metadata.name) for e in stream)

    assert await call(initial) == [("ADDED", "a-0"), ("ADDED", "a-1")]

    with pytest.raises(ApiException) as gone:
        await call(
            lambda: list(
                watch.Watch().stream(
                    v1.list_namespaced_pod,
                    "default",
                    resource_version="999999999",
                    timeout_seconds=1,
                )
            )
        )
    assert gone.value.status == 410


async def test_stale_resource_version_is_409(apiserver: RoleProcess) -> None:
    v1 = core(apiserver)
    pod = await call(v1.create_namespaced_pod, "default", pod_body("web-1"))
    await call(
        v1.patch_namespaced_pod_resize,
        "web-1",
        "default",
        {
            "spec": {
                "containers": [
                    {
                        "name": "c1",
                        "resources": {"requests": {"cpu": "700m"}, "limits": {"cpu": "700m"}},
                    }
                ]
            }
        },
    )
    stale = pod  # its resourceVersion predates the resize
    stale.spec.containers[0].resources.requests["cpu"] = "900m"
    stale.spec.containers[0].resources.limits["cpu"] = "900m"
    with pytest.raises(ApiException) as info:
        await call(v1.replace_namespaced_pod_resize, "web-1", "default", stale)
    assert info.value.status == 409
    body = status_of(info.value)
    assert body["kind"] == "Status" and body["reason"] == "Conflict"
    assert "the object has been modified" in body["message"]


async def test_nodes_quotas_limitranges_namespaces(apiserver: RoleProcess) -> None:
    v1 = core(apiserver)
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "node-1"},
        "status": {
            "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
        },
    }
    await call(v1.create_node, node)
    nodes = await call(v1.list_node)
    assert [n.metadata.name for n in nodes.items] == ["node-1"]
    read = await call(v1.read_node, "node-1")
    assert read.status.allocatable["cpu"] == "4"

    await call(v1.create_namespace, {"metadata": {"name": "team-a"}})
    assert "team-a" in [n.metadata.name for n in (await call(v1.list_namespace)).items]
    quota = {
        "metadata": {"name": "compute"},
        "spec": {"hard": {"requests.cpu": "2", "requests.memory": "4Gi", "pods": "10"}},
    }
    await call(v1.create_namespaced_resource_quota, "team-a", quota)
    quotas = await call(v1.list_namespaced_resource_quota, "team-a")
    assert quotas.items[0].spec.hard["requests.cpu"] == "2"
    limits = {
        "metadata": {"name": "limits"},
        "spec": {
            "limits": [{"type": "Container", "max": {"cpu": "1"}, "default": {"cpu": "500m"}}]
        },
    }
    await call(v1.create_namespaced_limit_range, "team-a", limits)
    ranges = await call(v1.list_namespaced_limit_range, "team-a")
    assert ranges.items[0].spec.limits[0].max["cpu"] == "1"

    with pytest.raises(ApiException) as missing:
        await call(v1.create_namespaced_pod, "no-such-ns", pod_body("x"))
    assert missing.value.status == 404
    with pytest.raises(ApiException) as dup:
        await call(v1.create_namespaced_resource_quota, "team-a", quota)
    assert dup.value.status == 409 and status_of(dup.value)["reason"] == "AlreadyExists"


async def test_a_controllers_event_recorder_creates_then_patches_repeats(
    apiserver: RoleProcess,
) -> None:
    """client-go's recorder (what a Go VPA records with) POSTs an Event, then sends each
    repeat as a strategic merge patch of count, lastTimestamp and message."""
    v1 = core(apiserver)
    await call(v1.create_namespaced_pod, "default", pod_body("web"))
    event = {
        "metadata": {"name": "web.1870a", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "name": "web", "namespace": "default"},
        "reason": "InPlaceResizedByVPA",
        "message": "cpu 100m -> 200m",
        "type": "Normal",
        "count": 1,
        "source": {"component": "vpa-updater"},
    }
    await call(v1.create_namespaced_event, "default", event)
    repeat = {"count": 2, "lastTimestamp": "2026-11-27T10:00:00Z", "message": "cpu 200m -> 300m"}
    patched = await call(
        v1.patch_namespaced_event,
        "web.1870a",
        "default",
        repeat,
        _content_type="application/strategic-merge-patch+json",  # what client-go sends
    )
    assert (patched.count, patched.message) == (2, "cpu 200m -> 300m")
    listed = await call(
        v1.list_namespaced_event, "default", field_selector="involvedObject.name=web"
    )
    got = [e for e in listed.items if e.metadata.name == "web.1870a"]
    assert [(e.count, e.reason, e.source.component) for e in got] == [
        (2, "InPlaceResizedByVPA", "vpa-updater")
    ]
    # The VPA's clients speak protobuf (its --kube-api-content-type default): a recorder's
    # Event arrives as Kubernetes' protobuf message and reads as the JSON one above.
    proto = core_v1.Event(reason="InPlaceResizedByVPA", message="memory up", type="Normal")
    proto.metadata.name, proto.metadata.namespace = "web.1870b", "default"
    proto.involvedObject.kind, proto.involvedObject.name = "Pod", "web"
    proto.source.component, proto.count = "vpa-updater", 1
    proto.firstTimestamp.seconds = 1_795_000_000
    async with httpx.AsyncClient(base_url=apiserver.url) as http:
        created = await http.post(
            "/api/v1/namespaces/default/events",
            content=protobuf_body("v1", "Event", proto),
            headers={"content-type": "application/vnd.kubernetes.protobuf"},
        )
    assert created.status_code == 201, created.text
    stored = await call(v1.read_namespaced_event, "web.1870b", "default")
    assert (stored.reason, stored.source.component, stored.involved_object.name) == (
        "InPlaceResizedByVPA",
        "vpa-updater",
        "web",
    )
    assert stored.first_timestamp.isoformat() == "2026-11-18T11:06:40+00:00"
    # The Python client labels a node with a merge patch; status stays as registered.
    await call(
        v1.create_node, {"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4"}}}
    )
    node = await call(v1.patch_node, "n1", {"metadata": {"labels": {"pool": "db"}}})
    assert node.metadata.labels == {"pool": "db"} and node.status.allocatable["cpu"] == "4"


async def test_delete_pod(apiserver: RoleProcess) -> None:
    v1 = core(apiserver)
    await call(v1.create_namespaced_pod, "default", pod_body("gone"))
    await call(v1.delete_namespaced_pod, "gone", "default")
    with pytest.raises(ApiException) as info:
        await call(v1.read_namespaced_pod, "gone", "default")
    assert info.value.status == 404
    assert status_of(info.value)["message"] == 'pods "gone" not found'


async def _running_without_status_resources(
    settings: Settings, v1: client.CoreV1Api, name: str
) -> None:
    """A pod a pre-resize kubelet runs: Running, allocated, but no status.resources."""
    pod = await call(v1.create_namespaced_pod, "default", pod_body(name))
    uid = pod.metadata.uid
    async with EventProducer(
        settings.kafka_bootstrap, topic_prefix=settings.topic_prefix
    ) as producer:
        for payload in (
            ev.PodBound(namespace="default", name=name, uid=uid, node_name="n1"),
            ev.PodPhaseChanged(namespace="default", name=name, uid=uid, phase="Running"),
        ):
            await producer.publish(Envelope.wrap(payload, producer="test"))
    for _ in range(100):
        if (await call(v1.read_namespaced_pod, name, "default")).status.phase == "Running":
            return
        await asyncio.sleep(0.05)


def _resize(cpu: str | None = None, memory: str | None = None, **extra: Any) -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": {}, "limits": {}}
    if cpu:
        resources["requests"]["cpu"] = resources["limits"]["cpu"] = cpu
    if memory:
        resources["requests"]["memory"] = resources["limits"]["memory"] = memory
    return {"spec": {"containers": [{"name": "c1", "resources": resources, **extra}]}}


VALIDATION = [
    # (id, pod spec extras, strategic-merge patch, expected message fragment)
    (
        "only cpu and memory are resizable",
        {},
        {
            "spec": {
                "containers": [
                    {
                        "name": "c1",
                        "resources": {
                            "requests": {"ephemeral-storage": "1Gi"},
                            "limits": {"ephemeral-storage": "1Gi"},
                        },
                    }
                ]
            }
        },
        "ephemeral-storage",
    ),
    (
        "QoS class may not change",
        {},
        {
            "spec": {
                "containers": [
                    {
                        "name": "c1",
                        "resources": {"requests": {"cpu": "100m"}, "limits": {"cpu": "800m"}},
                    }
                ]
            }
        },
        "QOS Class may not change",
    ),
    (
        "requests must not exceed limits",
        {},
        {
            "spec": {
                "containers": [
                    {"name": "c1", "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}}
                ]
            }
        },
        "must be less than or equal to cpu limit",
    ),
    (
        "restartPolicy Never needs NotRequired",
        {"restartPolicy": "Never"},
        _resize(
            cpu="600m", resizePolicy=[{"resourceName": "cpu", "restartPolicy": "RestartContainer"}]
        ),
        "NotRequired",
    ),
    (
        "non-sidecar init containers are not resizable",
        {
            "initContainers": [
                {
                    "name": "init",
                    "image": "busybox",
                    "resources": {
                        "requests": {"cpu": "100m", "memory": "64Mi"},
                        "limits": {"cpu": "100m", "memory": "64Mi"},
                    },
                }
            ]
        },
        {
            "spec": {
                "initContainers": [
                    {
                        "name": "init",
                        "resources": {"requests": {"cpu": "200m"}, "limits": {"cpu": "200m"}},
                    }
                ]
            }
        },
        "initContainers",
    ),
]


@pytest.mark.parametrize(
    ("spec", "patch", "message"), [c[1:] for c in VALIDATION], ids=[c[0] for c in VALIDATION]
)
async def test_resize_validation_is_422(
    apiserver: RoleProcess, spec: dict[str, Any], patch: dict[str, Any], message: str
) -> None:
    v1 = core(apiserver)
    await call(v1.create_namespaced_pod, "default", pod_body("v", **spec))
    with pytest.raises(ApiException) as info:
        await call(v1.patch_namespaced_pod_resize, "v", "default", patch)
    assert info.value.status == 422, info.value.body
    body = status_of(info.value)
    assert body["reason"] == "Invalid" and body["kind"] == "Status"
    assert message in body["message"], body["message"]
    assert (await call(v1.read_namespaced_pod, "v", "default")).status.resize is None


async def test_resize_drops_changes_to_other_fields(apiserver: RoleProcess) -> None:
    """As kube-apiserver's resize strategy: only resources and resizePolicy are taken from the
    body; an image or label in it is ignored, not refused, and nothing is proposed."""
    v1 = core(apiserver)
    await call(v1.create_namespaced_pod, "default", pod_body("v"))
    patch = {
        "metadata": {"labels": {"sneaky": "yes"}},
        "spec": {"containers": [{"name": "c1", "image": "nginx:1.28"}]},
    }
    answered = await call(v1.patch_namespaced_pod_resize, "v", "default", patch)
    assert answered.spec.containers[0].image == "nginx:1.27"
    assert answered.metadata.labels == {"app": "web"}
    assert answered.status.resize is None


async def test_running_pod_without_status_resources_is_refused(
    apiserver: RoleProcess, settings: Settings
) -> None:
    v1 = core(apiserver)
    await _running_without_status_resources(settings, v1, "old-kubelet")
    with pytest.raises(ApiException) as info:
        await call(v1.patch_namespaced_pod_resize, "old-kubelet", "default", _resize(cpu="600m"))
    assert info.value.status == 422, info.value.body


async def test_resize_of_unscheduled_pod_is_accepted(apiserver: RoleProcess) -> None:
    v1 = core(apiserver)
    await call(v1.create_namespaced_pod, "default", pod_body("pending"))
    pod = await call(v1.patch_namespaced_pod_resize, "pending", "default", _resize(cpu="700m"))
    assert pod.status.resize == "Proposed"


async def test_regular_patch_of_resources_is_refused(apiserver: RoleProcess) -> None:
    v1 = core(apiserver)
    await call(v1.create_namespaced_pod, "default", pod_body("plain"))
    with pytest.raises(ApiException) as info:
        await call(v1.patch_namespaced_pod, "plain", "default", _resize(cpu="700m"))
    assert info.value.status == 422
    assert "Forbidden" in status_of(info.value)["message"]
    labelled = await call(
        v1.patch_namespaced_pod, "plain", "default", {"metadata": {"labels": {"tier": "gold"}}}
    )
    assert labelled.metadata.labels == {"app": "web", "tier": "gold"}  # maps merge
