"""Pure: a node's own events and the pod events that concern it → its capacity changes,
evictions, and starvation periods (resizes Deferred on it, how long, what they waited on)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from pydantic import BaseModel, Field

from inplace.core.bus.consumer import Record
from inplace.core.explain.story import describe_decision
from schemas import events as ev


class NodeChange(BaseModel):
    time: datetime
    event: str
    text: str


class Starvation(BaseModel):
    """A resize Deferred on this node, from the decision until it was allocated (or not)."""

    pod: str
    since: datetime
    until: datetime | None = None
    waited_ms: float | None = None
    inputs: str


class NodeStory(BaseModel):
    node: str
    changes: list[NodeChange] = Field(default_factory=list)
    evictions: list[NodeChange] = Field(default_factory=list)
    starvation: list[Starvation] = Field(default_factory=list)


def _listed(amounts: dict[str, object]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(amounts.items()) if k in ("cpu", "memory"))


def _change(record: Record) -> NodeChange | None:
    env, p = record.envelope, record.envelope.payload
    if isinstance(p, ev.NodeRegistered):
        allocatable = (p.node.status.allocatable or {}) if p.node.status else {}
        text = f"registered, allocatable {_listed(dict(allocatable))}"
    elif isinstance(p, ev.NodeCapacityChanged):
        text = (
            f"capacity {_listed(dict(p.old_capacity))} -> {_listed(dict(p.new_capacity))}; "
            f"allocatable {_listed(dict(p.old_allocatable))} -> {_listed(dict(p.new_allocatable))}"
        )
    elif isinstance(p, ev.NodeUpdated):
        # What placement reads: a pod waiting on this node is waiting on these.
        labels = ", ".join(f"{k}={v}" for k, v in sorted((p.metadata.labels or {}).items()))
        taints = ", ".join(f"{t.key}={t.value or ''}:{t.effect}" for t in p.spec.taints or [])
        text = (
            f"updated: {'cordoned' if p.spec.unschedulable else 'schedulable'}; "
            f"labels {labels or '<none>'}; taints {taints or '<none>'}"
        )
    elif isinstance(p, ev.NodeResizeFailed):
        text = f"resize failed: {p.message}"
    elif isinstance(p, ev.NodeConditionChanged):
        text = f"condition {p.condition.type}={p.condition.status} ({p.condition.reason or ''})"
    elif isinstance(p, ev.NodeDeleted):
        text = "deleted"
    else:
        return None
    return NodeChange(time=env.time, event=env.type, text=text)


def node_story(name: str, own: Sequence[Record], pods: Iterable[Record]) -> NodeStory:
    story = NodeStory(node=name)
    story.changes = [c for r in own if (c := _change(r)) is not None]
    waiting: dict[str, Starvation] = {}
    for record in pods:
        env, p = record.envelope, record.envelope.payload
        pod = env.key
        if isinstance(p, ev.PodEvicted):
            story.evictions.append(
                NodeChange(time=env.time, event=env.type, text=f"{pod}: {p.message or p.reason}")
            )
        elif isinstance(p, ev.ResizeStatusChanged) and p.decision is not None:
            if p.resize == "Deferred" and pod not in waiting:
                waiting[pod] = Starvation(
                    pod=pod, since=env.time, inputs=describe_decision(p.decision)
                )
                story.starvation.append(waiting[pod])
        elif isinstance(p, ev.Allocated) and pod in waiting:
            period = waiting.pop(pod)
            period.until = env.time
            period.waited_ms = round((env.time - period.since).total_seconds() * 1000, 1)
    return story


def render_node(story: NodeStory) -> Iterable[str]:
    yield f"node {story.node}"
    yield "capacity and conditions:"
    for c in story.changes or []:
        yield f"  {c.time.isoformat()}  {c.text}"
    if not story.changes:
        yield "  nothing on record"
    yield "evictions:"
    for e in story.evictions:
        yield f"  {e.time.isoformat()}  {e.text}"
    if not story.evictions:
        yield "  none"
    yield "starvation (resizes Deferred on this node):"
    for s in story.starvation:
        until = (
            f"until {s.until.isoformat()} ({s.waited_ms:.1f} ms)" if s.until else "still waiting"
        )
        yield f"  {s.pod} since {s.since.isoformat()} {until}: {s.inputs}"
    if not story.starvation:
        yield "  none"
