"""I/O for `inplace explain`: the pod's own events, then the histories of the pods and the
node its decisions name (bounded: the holders of at most MAX_NAMED pods)."""

from __future__ import annotations

from inplace.core.bus.consumer import Record
from inplace.core.explain.nodestory import NodeStory, node_story
from inplace.core.explain.story import PodStory, pod_story
from inplace.core.projection.replay import key_history, pods_on_node
from schemas import events as ev
from schemas.keys import object_key

MAX_NAMED = 10


def named_in(records: list[Record]) -> tuple[list[str], list[str]]:
    """(pods, nodes) the pod's Deferred / Infeasible decisions name."""
    pods: list[str] = []
    nodes: list[str] = []
    for record in records:
        payload = record.envelope.payload
        if isinstance(payload, ev.ResizeStatusChanged) and payload.decision is not None:
            if payload.decision.node not in nodes:
                nodes.append(payload.decision.node)
            for holder in payload.decision.holders:
                if holder.pod not in pods and len(pods) < MAX_NAMED:
                    pods.append(holder.pod)
    return pods, nodes


async def explain_pod(
    bootstrap: str, namespace: str, name: str, topic_prefix: str = "", upto: int | None = None
) -> tuple[PodStory, int]:
    """The story and how many of the pod's own events it was told from (0: none on record)."""
    own = await key_history(bootstrap, ev.PODS, object_key(namespace, name), topic_prefix)
    pods, nodes = named_in(own)
    others: dict[str, list[Record]] = {}
    for pod in pods:
        others[pod] = await key_history(bootstrap, ev.PODS, pod, topic_prefix)
    for node in nodes:
        others[f"node/{node}"] = await key_history(bootstrap, ev.NODES, node, topic_prefix)
    return pod_story(object_key(namespace, name), own, others, upto=upto), len(own)


async def explain_node(bootstrap: str, name: str, topic_prefix: str = "") -> NodeStory:
    own = await key_history(bootstrap, ev.NODES, name, topic_prefix)
    related = await pods_on_node(bootstrap, name, topic_prefix)
    return node_story(name, own, related)
