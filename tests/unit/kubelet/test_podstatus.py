"""What the kubelet reports when a pod starts, and how the log folds it into the status."""

from __future__ import annotations

import ipaddress

from schemas import events as ev
from schemas.envelope import Envelope
from schemas.k8s import Node
from services.kubelet.podstatus import host_ip, image_id, pod_ip, running_event
from tests import factories


def test_pod_ips_are_deterministic_and_unique_per_uid() -> None:
    uids = [f"00000000-0000-4000-8000-{i:012x}" for i in range(5000)]
    ips = {pod_ip(u) for u in uids}
    assert len(ips) == len(uids)
    assert pod_ip(uids[0]) == pod_ip(uids[0])
    assert all(ipaddress.IPv6Address(ip) in ipaddress.IPv6Network("fd00:10:244::/64") for ip in ips)
    assert pod_ip("not-a-uuid") != pod_ip("not-a-uuid-either")


def test_host_ip_prefers_the_nodes_internal_ip() -> None:
    node = Node.model_validate(
        {
            "metadata": {"name": "n1"},
            "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.9"}]},
        }
    )
    assert host_ip("n1", node) == "10.0.0.9"
    assert host_ip("n1", None) == host_ip("n1", None) != host_ip("n2", None)


def test_image_ids() -> None:
    assert image_id("nginx:1.27").startswith("nginx@sha256:")
    assert image_id("registry:5000/team/app").startswith("registry:5000/team/app@sha256:")
    assert image_id("nginx:1.27") != image_id("nginx:1.28")


def test_the_running_event_folds_into_a_running_status() -> None:
    pod = factories.pod("default", "web")
    created = ev.PodCreated(namespace="default", name="web", uid=pod.metadata.uid or "", pod=pod)
    started = running_event(pod, "n1", None, {"app": "sb-1/app"})
    assert started.containers == [
        ev.ContainerStarted(
            name="app", container_id="inplace://sb-1/app", image_id=image_id("nginx:1.27")
        )
    ]
    folded = factories.fold(created, started).pods[("default", "web")]
    status = folded.status
    assert status.phase == "Running" and status.pod_ip == started.pod_ip
    assert status.host_ips is not None and status.host_ips[0].ip == started.host_ip
    cs = (status.container_statuses or [])[0]
    assert cs.container_id == "inplace://sb-1/app" and cs.started and cs.ready
    assert cs.state.running is not None and cs.state.running.started_at is not None
    assert status.observed_generation == folded.metadata.generation == 1
    assert {c.type for c in status.conditions or []} == {
        "PodScheduled", "PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready",
    }  # fmt: skip
    restarted = (
        factories.fold(
            created,
            started,
            ev.ContainerRestarted(
                namespace="default",
                name="web",
                uid=pod.metadata.uid or "",
                container="app",
                restart_count=1,
            ),
        )
    ).pods[("default", "web")]
    cs = (restarted.status.container_statuses or [])[0]
    assert cs.restart_count == 1 and cs.last_state.terminated is not None
    assert cs.last_state.terminated.container_id == "inplace://sb-1/app"
    assert Envelope.wrap(started, producer="t").payload == started
