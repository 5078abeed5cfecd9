"""A running container whose image the pod's spec changed (`kubectl set image`) is restarted
with the new one, as the kubelet's computePodActions does ("definition changed, will be
restarted"): the pure part, what to restart and what to tell.

Regular containers only; a restartable init container (a sidecar) keeps its image until the
pod restarts.
"""

from __future__ import annotations

from dataclasses import dataclass

from schemas.k8s import Pod
from services.kubelet.podstatus import container_started


@dataclass(frozen=True, slots=True)
class ImageChange:
    container: str
    image: str


def changed_images(pod: Pod) -> list[ImageChange]:
    """The running pod's containers whose spec names another image than their status."""
    if pod.status.phase != "Running":
        return []
    reported = {cs.name: cs.image for cs in pod.status.container_statuses or []}
    return [
        ImageChange(c.name, c.image)
        for c in pod.spec.containers
        if c.image and c.name in reported and reported[c.name] != c.image
    ]


def notices(change: ImageChange) -> list[tuple[str, str]]:
    """(reason, message) of the Events a kubelet records for the restart, in order (its
    kuberuntime and image manager's words; the runtime pulls nothing, so "already present")."""
    name, image = change.container, change.image
    killing = ("Killing", f"Container {name} definition changed, will be restarted")
    return [killing, *container_started(name, image)]
