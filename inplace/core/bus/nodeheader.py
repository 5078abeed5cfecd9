"""The `node` header of a pod record: which node the pod is bound to ("" while unbound).

Writers set it beside `type` so a reader that serves some nodes (a kubelet process) can skip
the records of other nodes' pods without decoding them (issue 16). A record without the header
(an older log, a writer that does not know) is decoded by everyone: the header only ever saves
work, it never decides what is true.
"""

from __future__ import annotations

from collections.abc import Mapping

from schemas import events as ev
from schemas.envelope import EventPayload
from schemas.k8s import Pod


def node_of(payload: EventPayload, pods: Mapping[tuple[str, str], Pod]) -> str | None:
    """The node a pod event concerns ("" = not bound), or None when it is not a pod event or
    the pod is unknown to the writer."""
    if not isinstance(payload, ev.PodEvent):
        return None
    direct = getattr(payload, "node_name", None)
    if isinstance(direct, str) and direct:
        return direct
    if isinstance(payload, ev.PodCreated):
        return payload.pod.spec.node_name or ""
    pod = pods.get((payload.namespace, payload.name))
    if pod is None:
        return None
    return pod.spec.node_name or ""
