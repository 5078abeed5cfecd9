"""The node a kubelet registers: what `kubectl get nodes -o wide` and `describe node` read."""

from __future__ import annotations

import platform
from datetime import UTC, datetime

from services.kubelet.config import KubeletConfig
from services.kubelet.nodes import node_object
from services.kubelet.podstatus import host_ip


def test_a_registered_node_reports_its_kubelet_os_runtime_and_heartbeat() -> None:
    now = datetime(2026, 11, 27, 10, 0, tzinfo=UTC)
    node = node_object(KubeletConfig(), "node-0", now=now).to_k8s()
    info = node["status"]["nodeInfo"]
    assert info["kubeletVersion"] == "v1.35.0-inplace"
    assert info["containerRuntimeVersion"] == "inplace-fake://1.35.0"
    assert info["operatingSystem"] == "linux" and info["kernelVersion"] == platform.release()
    assert info["osImage"]
    labels = node["metadata"]["labels"]
    assert labels["kubernetes.io/os"] == "linux"
    assert labels["kubernetes.io/arch"] == info["architecture"] != ""
    # InternalIP and Hostname, as a kubelet reports them; its pods' hostIP is the InternalIP.
    internal, hostname = node["status"]["addresses"]
    assert (internal["type"], hostname) == ("InternalIP", {"type": "Hostname", "address": "node-0"})
    assert host_ip("node-0", node_object(KubeletConfig(), "node-0")) == internal["address"]
    assert internal["address"].startswith("fd00:10::")
    [ready] = node["status"]["conditions"]
    assert ready["lastHeartbeatTime"] == ready["lastTransitionTime"] == "2026-11-27T10:00:00Z"
