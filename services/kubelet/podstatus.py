"""What the kubelet reports when a pod starts running: addresses and container identities.

Pure and deterministic (a replay of the log reproduces every value):
- `podIP`: simulated, unique per pod: an IPv6 unique-local address whose low 64 bits come
  from the pod's UID (random UUIDs do not collide where a hash into an IPv4 /8 would);
- `hostIP`: the node's InternalIP when it reports one, else a unique-local address derived
  from its name;
- `containerID`: `inplace://<runtime id>` (a real kubelet writes `<runtime name>://<id>`);
- `imageID`: the image name with a digest derived from it, as runtimes report a pulled image.
The reducer turns the event into containerStatuses[].state.running, `started`, `ready`,
the addresses and the Initialized / ContainersReady / Ready / PodReadyToStartContainers
conditions. With it, the Events a kubelet records for each container it starts
(`start_notices`).
"""

from __future__ import annotations

import hashlib
import ipaddress
import uuid
from collections.abc import Mapping

from schemas import events as ev
from schemas.k8s import Node, Pod
from schemas.keys import pod_key
from schemas.resources import is_sidecar

__all__ = [
    "container_id",
    "container_started",
    "host_ip",
    "image_id",
    "node_ready",
    "pod_ip",
    "ready_again",
    "running_event",
    "start_notices",
]

_POD_PREFIX = bytes.fromhex("fd00001002440000")  # fd00:10:244:0::/64
_HOST_PREFIX = bytes.fromhex("fd00001000000000")  # fd00:10::/64
RUNTIME_SCHEME = "inplace"


def _low64(text: str) -> bytes:
    try:
        return uuid.UUID(text).bytes[8:]
    except ValueError:
        return hashlib.sha256(text.encode()).digest()[:8]


def pod_ip(uid: str) -> str:
    return str(ipaddress.IPv6Address(_POD_PREFIX + _low64(uid)))


def host_ip(node_name: str, node: Node | None) -> str:
    for address in (node.status.addresses or []) if node is not None else []:
        if address.type == "InternalIP":
            return address.address
    low = hashlib.sha256(node_name.encode()).digest()[:8]
    return str(ipaddress.IPv6Address(_HOST_PREFIX + low))


def container_id(runtime_id: str) -> str:
    return f"{RUNTIME_SCHEME}://{runtime_id}"


def image_id(image: str | None) -> str:
    name = (image or "").split("@", 1)[0]
    repository = name.rsplit(":", 1)[0] if ":" in name.rsplit("/", 1)[-1] else name
    digest = hashlib.sha256(name.encode()).hexdigest()
    return f"{repository}@sha256:{digest}"


def running_event(
    pod: Pod, node_name: str, node: Node | None, runtime_ids: Mapping[str, str]
) -> ev.PodPhaseChanged:
    """PodPhaseChanged(Running) for a pod whose containers the runtime just started."""
    images = {c.name: c.image for c in pod.spec.containers}
    sidecars = {c.name: c.image for c in pod.spec.init_containers or [] if is_sidecar(c)}
    started = [
        ev.ContainerStarted(
            name=name,
            container_id=container_id(rid),
            image_id=image_id(images.get(name, sidecars.get(name))),
            init=name in sidecars,
        )
        for name, rid in runtime_ids.items()
    ]
    return ev.PodPhaseChanged(
        **ev.pod_ids(pod),
        observed_generation=pod.metadata.generation,
        phase="Running",
        pod_ip=pod_ip(pod.metadata.uid or pod_key(pod)),
        host_ip=host_ip(node_name, node),
        containers=started,
    )


def container_started(name: str, image: str | None) -> list[tuple[str, str]]:
    """(reason, message) of the Events a kubelet records starting one container, in its image
    manager's and kuberuntime's words; the runtime pulls nothing, so the image is "already
    present on machine"."""
    return [
        ("Pulled", f'Container image "{image}" already present on machine'),
        ("Created", f"Created container: {name}"),
        ("Started", f"Started container {name}"),
    ]


def start_notices(pod: Pod, runtime_ids: Mapping[str, str]) -> list[tuple[str, str]]:
    """The Events of a pod's start: each container the runtime started, in its order
    (sidecars first, as the kubelet starts them)."""
    images = {c.name: c.image for c in [*(pod.spec.init_containers or []), *pod.spec.containers]}
    return [notice for name in runtime_ids for notice in container_started(name, images.get(name))]


def node_ready(node: Node | None) -> bool:
    """The node's Ready condition is True."""
    conditions = node.status.conditions or [] if node is not None else []
    return any(c.type == "Ready" and c.status == "True" for c in conditions)


def ready_again(pod: Pod, node: Node | None) -> bool:
    """Whether the kubelet sets the pod Ready again: it runs with its containers ready, but its
    Ready condition was set False apart from them (the node lifecycle controller's
    MarkPodsNotReady while the node was silent), and its node is Ready now. The kubelet's
    status sync derives Ready from ContainersReady, so this is what its next sync writes."""
    if pod.status.phase != "Running" or not node_ready(node):
        return False
    conditions = {c.type: c.status for c in pod.status.conditions or []}
    return conditions.get("Ready") == "False" and conditions.get("ContainersReady") == "True"
