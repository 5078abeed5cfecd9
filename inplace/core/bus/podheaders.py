"""The headers of a pod record that let readers skip other pods' records unparsed (issue 16):

- `node`: the node the pod is bound to ("" while unbound). A kubelet process decodes only its
  own nodes' records (services/kubelet/podfilter.py).
- `controller`: the kind of the pod's controlling owner ("" for none). The workload controller
  decodes only the records of pods a CloneSet controls.

Writers set them beside `type` from the event and their own view of the pod. A record without
a header (an older log, a writer that does not know the pod) is decoded by everyone: a header
only ever saves work, it never decides what is true.
"""

from __future__ import annotations

from collections.abc import Mapping

from inplace.core.bus.headers import CONTROLLER_HEADER, NODE_HEADER
from inplace.core.projection.podstore import PodStore
from schemas import events as ev
from schemas.envelope import EventPayload
from schemas.k8s import Pod
from schemas.podview import controller_kind

Pods = Mapping[tuple[str, str], Pod]


def node_of(payload: EventPayload, pods: Pods) -> str | None:
    """The node a pod event concerns ("" = not bound), or None when it is not a pod event or
    the pod is unknown to the writer."""
    if not isinstance(payload, ev.PodEvent):
        return None
    direct = getattr(payload, "node_name", None)
    if isinstance(direct, str) and direct:
        return direct
    if isinstance(payload, ev.PodCreated):
        return payload.pod.spec.node_name or ""
    key = (payload.namespace, payload.name)
    if isinstance(pods, PodStore):
        return pods.node_of(key)  # a fact it keeps: no decoding
    pod = pods.get(key)
    if pod is None:
        return None
    return pod.spec.node_name or ""


def controller_of(payload: EventPayload, pods: Pods) -> str | None:
    """The kind of the pod's controller ("" = none), or None when it is not a pod event or the
    pod is unknown to the writer. Owner references are set at creation (PodUpdated does not
    carry them), so the header never changes over a pod's life."""
    if not isinstance(payload, ev.PodEvent):
        return None
    if isinstance(payload, ev.PodCreated):
        return controller_kind(payload.pod)
    key = (payload.namespace, payload.name)
    if isinstance(pods, PodStore):
        return pods.controller_of(key)  # a fact it keeps: decoded once per pod at most
    held = pods.get(key)
    return controller_kind(held) if held is not None else None


def pod_headers(payload: EventPayload, pods: Pods) -> dict[str, str]:
    """The headers a writer that holds `pods` puts on the record of `payload`."""
    found = {NODE_HEADER: node_of(payload, pods), CONTROLLER_HEADER: controller_of(payload, pods)}
    return {name: value for name, value in found.items() if value is not None}
