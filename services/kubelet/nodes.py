"""The simulated nodes one kubelet process hosts (like kwok): names, capacity, allocatable."""

from __future__ import annotations

import platform
from datetime import UTC, datetime
from functools import cache
from pathlib import Path

from schemas.base import format_time
from schemas.k8s import Node, ResourceList
from schemas.kubeschema import KUBERNETES_VERSION
from schemas.quantity import Quantity
from schemas.resources import subtract
from services.kubelet.config import KubeletConfig
from services.kubelet.podstatus import host_ip


def node_names(config: KubeletConfig) -> list[str]:
    return [f"{config.node_prefix}-{i}" for i in range(config.nodes)]


# Go's GOARCH names for what `uname -m` says (kubernetes.io/arch, nodeInfo.architecture).
_GOARCH = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm", "ppc64le": "ppc64le"}


def node_object(config: KubeletConfig, name: str, now: datetime | None = None) -> Node:
    """A Ready node with capacity, and allocatable = capacity - reserved (the kubelet's
    --system-reserved/--kube-reserved), reporting this machine's OS, kernel and architecture,
    this kubelet's version and runtime, and when it was last heard from (`kubectl get nodes
    -o wide`, `kubectl describe node`)."""
    when = format_time(now or datetime.now(UTC))
    arch, kernel, os_image = _machine()
    capacity: ResourceList = {
        "cpu": Quantity.parse(config.node_cpu),
        "memory": Quantity.parse(config.node_memory),
        "pods": Quantity.from_int(config.node_pods),
    }
    reserved: ResourceList = {
        "cpu": Quantity.parse(config.reserved_cpu),
        "memory": Quantity.parse(config.reserved_memory),
    }
    allocatable = subtract(capacity, reserved)
    return Node.model_validate(
        {
            "metadata": {
                "name": name,
                "labels": {
                    "kubernetes.io/hostname": name,
                    "kubernetes.io/os": "linux",
                    "kubernetes.io/arch": arch,
                    "type": "inplace-simulated",
                },
            },
            "status": {
                # As a kubelet reports its node: InternalIP (its pods' hostIP) and Hostname.
                "addresses": [
                    {"type": "InternalIP", "address": host_ip(name, None)},
                    {"type": "Hostname", "address": name},
                ],
                "capacity": {k: str(v) for k, v in capacity.items()},
                "allocatable": {k: str(v) for k, v in allocatable.items()},
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "reason": "KubeletReady",
                        "message": "kubelet is posting ready status",
                        "lastHeartbeatTime": when,
                        "lastTransitionTime": when,
                    }
                ],
                "nodeInfo": {
                    "kernelVersion": kernel,
                    "osImage": os_image,
                    "containerRuntimeVersion": f"inplace-{config.runtime}://{KUBERNETES_VERSION}",
                    "kubeletVersion": f"v{KUBERNETES_VERSION}-inplace",
                    "operatingSystem": "linux",
                    "architecture": arch,
                },
            },
        }
    )


@cache
def _machine() -> tuple[str, str, str]:
    """This machine's architecture, kernel and OS image, read once for all its nodes."""
    arch = _GOARCH.get(platform.machine(), platform.machine())
    return arch, platform.release(), _os_image()


def _os_image() -> str:
    """PRETTY_NAME of /etc/os-release, as the kubelet reports it."""
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.partition("=")[2].strip().strip('"')
    except OSError:
        pass
    return "Linux"
