"""Pure: a pod's events (and those of the pods and node its decisions name) → the story of
each of its resizes: who asked, what, every decision with its inputs, what freed the room,
how long each stage took, where it is now. No I/O here; `reader` fetches the records."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime

from pydantic import BaseModel, Field

from inplace.core.bus.consumer import Record
from schemas import events as ev
from schemas.podview import TERMINAL_PHASES
from schemas.quantity import Quantity

FREEING = (ev.PodDeleted, ev.PodEvicted, ev.Allocated, ev.PodPhaseChanged, ev.NodeCapacityChanged)


class Step(BaseModel):
    time: datetime
    offset: int
    event: str
    text: str
    decision: ev.DecisionRecord | None = None
    # A refusal by ResourceQuota / LimitRange admission: the quota (used, hard) or the bounds.
    quota: ev.QuotaRefusal | None = None
    limit_range: list[ev.LimitRangeViolation] | None = None


class Resize(BaseModel):
    number: int
    correlation_id: str
    asked_by: str
    asked_at: datetime
    wanted: list[str]
    steps: list[Step] = Field(default_factory=list)
    freed_by: list[Step] = Field(default_factory=list)  # what made room while it waited
    retried: Step | None = None  # the kubelet's retry that allocated it after a Deferred wait
    outcome: str = "Proposed"
    durations_ms: dict[str, float] = Field(default_factory=dict)


class PodStory(BaseModel):
    pod: str
    node: str | None = None
    scheduling: list[Step] = Field(default_factory=list)
    resizes: list[Resize] = Field(default_factory=list)
    now: str = ""


def _ms(a: datetime, b: datetime) -> float:
    return round((b - a).total_seconds() * 1000, 1)


def _who(record: Record) -> str:
    env = record.envelope
    if env.user is not None:
        return env.user.username
    return f"{env.producer} (no authenticated user recorded)"


def _amounts(container: ev.ContainerResources) -> str:
    parts = []
    for kind, values in (
        ("requests", container.resources.requests),
        ("limits", container.resources.limits),
    ):
        if values:
            parts.append(kind + " " + ", ".join(f"{k}={v}" for k, v in sorted(values.items())))
    return f"{container.name}: " + ("; ".join(parts) if parts else "no resources")


def _wanted(payload: ev.ResizeProposed | ev.ResizeRefused) -> list[str]:
    containers = list(payload.containers)
    if isinstance(payload, ev.ResizeProposed):
        containers += payload.init_containers
    return [_amounts(c) for c in containers]


def describe_decision(record: ev.DecisionRecord) -> str:
    """ "node n1 has cpu 8 allocatable, 7700m allocated to others (ns/db-0 4, …); this pod
    asks cpu 900m" — the inputs in one sentence."""
    resources = record.short or sorted(record.requested)
    parts = []
    for r in resources:
        held = ", ".join(f"{h.pod} {h.requests[r]}" for h in record.holders if r in h.requests)
        others = record.allocated.get(r, "0")
        parts.append(
            f"{r}: {record.allocatable.get(r, '0')} allocatable on node {record.node}, "
            f"{others} allocated to other pods"
            + (f" ({held})" if held else "")
            + f", this pod asks {record.requested.get(r, '0')}"
        )
    if record.policy:
        parts.append(f"refused by the node's {record.policy}")
    return "; ".join(parts)


def describe_scheduling(record: ev.SchedulingRecord) -> str:
    """ "asks cpu 1000m, memory 1Gi of 7 nodes; closest: n6 (free cpu 700m: Insufficient cpu)…"."""
    closest = ", ".join(
        f"{n.node} (free cpu {n.free.get('cpu', '?')}, memory {n.free.get('memory', '?')}: "
        f"{'; '.join(n.reasons) or 'fits'})"
        for n in record.closest
    )
    asks = ", ".join(f"{k} {v}" for k, v in sorted(record.requested.items()))
    return f"asks {asks} of {record.nodes} nodes; closest: {closest or 'none'}"


def _scheduling_step(record: Record) -> Step | None:
    env, payload = record.envelope, record.envelope.payload
    at = {"time": env.time, "offset": record.position.offset, "event": env.type}
    if isinstance(payload, ev.PodUnschedulable):
        text = f"Unschedulable: {payload.message}"
        if payload.record is not None:
            text += f" [inputs: {describe_scheduling(payload.record)}]"
        return Step(**at, text=text)
    if isinstance(payload, ev.PodBound):
        return Step(**at, text=f"bound to node {payload.node_name}")
    return None


def _status_step(record: Record, payload: ev.ResizeStatusChanged | ev.ResizeStatusUpdate) -> Step:
    """status.resize moved (on its own, or with an Allocated / Actuated: shown as its own
    step at the same offset, named as the status event it stands for)."""
    env = record.envelope
    decision = payload.decision if isinstance(payload, ev.ResizeStatusChanged) else None
    if payload.resize is None:
        text = "completed: status.resize cleared (actual = allocated = desired)"
    elif payload.resize == "InProgress":
        text = "InProgress: the kubelet accepted it and is actuating"
    else:
        text = f"{payload.resize}: {payload.message or ''}".rstrip(": ")
        if decision is not None:
            text += f" [inputs: {describe_decision(decision)}]"
    return Step(
        time=env.time,
        offset=record.position.offset,
        event=f"{ev.ResizeStatusChanged.TYPE}({payload.resize or 'cleared'})",
        text=text,
        decision=decision,
    )


def _steps(record: Record) -> list[Step]:
    """A record's step, and the status step of the status an Allocated / Actuated sets."""
    step = _step(record)
    if step is None:
        return []
    steps = [step]
    payload = record.envelope.payload
    if isinstance(payload, ev.Allocated) and payload.actuated is not None:
        # Applied before the allocation went out: its Actuated is in the same record.
        text = f"{_actuated_on(payload.node_name)} (reported with the allocation)"
        steps.append(step.model_copy(update={"event": ev.Actuated.TYPE, "text": text}))
    change = ev.resize_change(payload)
    if change is not None and not isinstance(change, ev.ResizeStatusChanged):
        steps.append(_status_step(record, change))
    return steps


def _actuated_on(node: str) -> str:
    return f"Actuated on node {node} by the runtime"


def _step(record: Record) -> Step | None:
    env, payload = record.envelope, record.envelope.payload
    at = {"time": env.time, "offset": record.position.offset, "event": env.type}
    if isinstance(payload, ev.ResizeStatusChanged):
        return _status_step(record, payload)
    if isinstance(payload, ev.Allocated):
        return Step(**at, text=f"Allocated on node {payload.node_name} (the kubelet's checkpoint)")
    if isinstance(payload, ev.Actuated):
        return Step(**at, text=_actuated_on(payload.node_name))
    if isinstance(payload, ev.ResizeRefused):
        return Step(
            **at,
            text=f"refused by the apiserver ({payload.code} {payload.reason}): {payload.message}",
            quota=payload.quota,
            limit_range=payload.limit_range,
        )
    if isinstance(payload, ev.PodDeleted):
        return Step(**at, text="the pod was deleted")
    if isinstance(payload, ev.PodEvicted):
        return Step(
            **at,
            text=f"evicted from {payload.node_name}: {payload.message or payload.reason}",
        )
    return None


def _freeing(record: Record, holder: str) -> Step | None:
    """A holder's (or the node's) event that can make room, as a step."""
    env, payload = record.envelope, record.envelope.payload
    at = {"time": env.time, "offset": record.position.offset, "event": env.type}
    if isinstance(payload, ev.PodDeleted):
        return Step(**at, text=f"{holder} was deleted")
    if isinstance(payload, ev.PodEvicted):
        return Step(**at, text=f"{holder} was evicted ({payload.reason})")
    if isinstance(payload, ev.PodPhaseChanged) and payload.phase in TERMINAL_PHASES:
        return Step(**at, text=f"{holder} ended ({payload.phase})")
    if isinstance(payload, ev.Allocated):
        sizes = "; ".join(
            _amounts(ev.ContainerResources(name=c.name, resources=c.resources))
            for c in payload.containers
        )
        return Step(**at, text=f"{holder} was (re)allocated: {sizes}")
    if isinstance(payload, ev.NodeCapacityChanged):
        cpu = payload.new_allocatable.get("cpu", Quantity("0"))
        memory = payload.new_allocatable.get("memory", Quantity("0"))
        return Step(
            **at, text=f"node {payload.name} allocatable changed to cpu {cpu}, memory {memory}"
        )
    return None


def _outcome(resize: Resize) -> str:
    last = next(
        (
            s
            for s in reversed(resize.steps)
            if s.event.startswith("ResizeStatusChanged")
            or s.event in ("ResizeRefused", "PodDeleted", "PodEvicted")
        ),
        None,
    )
    if last is None:
        return "Proposed: no kubelet has decided yet"
    if last.event == "ResizeRefused":
        return "Refused by the apiserver"
    if last.event in ("PodDeleted", "PodEvicted"):
        return "Canceled: the pod is gone"
    state = last.event.removeprefix("ResizeStatusChanged(").rstrip(")")
    return {"cleared": "Completed", "InProgress": "InProgress"}.get(state, state)


def _durations(resize: Resize) -> dict[str, float]:
    first = {}
    for step in resize.steps:
        first.setdefault(step.event, step.time)
    out: dict[str, float] = {}
    allocated = first.get("Allocated")
    actuated = first.get("Actuated")
    done = first.get("ResizeStatusChanged(cleared)")
    if allocated:
        out["admission"] = _ms(resize.asked_at, allocated)
    if allocated and actuated:
        out["actuation"] = _ms(allocated, actuated)
    if done:
        out["total"] = _ms(resize.asked_at, done)
    return out


def pod_story(
    pod: str,
    records: Sequence[Record],
    others: Mapping[str, Sequence[Record]] | None = None,
    *,
    upto: int | None = None,
) -> PodStory:
    """`records`: the pod's own events in log order; `others`: histories of the holders the
    decisions name (`ns/name`) and of the node (`node/NAME`), to tell what freed the room."""
    story = PodStory(pod=pod)
    if upto is not None:
        records, others = cut_at(records, others or {}, upto)
    current: Resize | None = None
    for record in records:
        payload = record.envelope.payload
        if isinstance(payload, ev.PodBound):
            story.node = payload.node_name
        placed = _scheduling_step(record)
        if placed is not None:
            story.scheduling.append(placed)
            continue
        if isinstance(payload, ev.ResizeProposed | ev.ResizeRefused):
            if current is not None:
                _close(current, others or {})
            current = Resize(
                number=len(story.resizes) + 1,
                correlation_id=record.envelope.correlation_id,
                asked_by=_who(record),
                asked_at=record.envelope.time,
                wanted=_wanted(payload),
            )
            story.resizes.append(current)
            if isinstance(payload, ev.ResizeProposed):
                continue
        if current is not None:
            current.steps.extend(_steps(record))
    if current is not None:
        _close(current, others or {})
    story.now = story.resizes[-1].outcome if story.resizes else "no resize on record"
    return story


def cut_at(
    records: Sequence[Record], others: Mapping[str, Sequence[Record]], upto: int
) -> tuple[list[Record], dict[str, list[Record]]]:
    """Everything as of offset `upto` of the pod's partition: the pod's events up to it; of the
    other histories, those on the same partition up to that offset, and those elsewhere (other
    partitions, the nodes topic) no later than the last event known to precede the cut."""
    own = [r for r in records if r.position.offset <= upto]
    if not records:
        return own, {name: [] for name in others}
    here = (records[0].position.topic, records[0].position.partition)

    def same(r: Record) -> bool:
        return (r.position.topic, r.position.partition) == here

    before = [r.envelope.time for r in own] + [
        r.envelope.time
        for history in others.values()
        for r in history
        if same(r) and r.position.offset <= upto
    ]
    cut = max(before, default=None)

    def known(r: Record) -> bool:
        if same(r):
            return r.position.offset <= upto
        return cut is not None and r.envelope.time <= cut

    return own, {name: [r for r in history if known(r)] for name, history in others.items()}


def _close(resize: Resize, others: Mapping[str, Sequence[Record]]) -> None:
    resize.outcome = _outcome(resize)
    resize.durations_ms = _durations(resize)
    waits = [s for s in resize.steps if s.decision is not None and s.event.endswith("(Deferred)")]
    if not waits:
        return
    start = waits[0].time
    allocated = next((s for s in resize.steps if s.event == "Allocated" and s.time >= start), None)
    end = allocated.time if allocated is not None else None
    named = {h.pod for s in waits if s.decision for h in s.decision.holders}
    named |= {f"node/{s.decision.node}" for s in waits if s.decision}
    for name in sorted(named):
        for record in others.get(name, ()):
            t = record.envelope.time
            if t < start or (end is not None and t > end):
                continue
            step = _freeing(record, name)
            if step is not None:
                resize.freed_by.append(step)
    resize.freed_by.sort(key=lambda s: s.time)
    if allocated is not None:
        resize.retried = _retry(allocated, resize.freed_by)


def _retry(allocated: Step, freed_by: Sequence[Step]) -> Step:
    """The retry that allocated a Deferred resize, and the last thing that freed room before."""
    trigger = next((s for s in reversed(freed_by) if s.time <= allocated.time), None)
    after = (
        trigger.text
        if trigger is not None
        else "no recorded change to the holders or the node (the periodic retry)"
    )
    return Step(
        time=allocated.time,
        offset=allocated.offset,
        event="Retried",
        text=f"retried at {allocated.time.isoformat()} after {after}",
    )


def render(story: PodStory) -> Iterable[str]:
    """The narrative, line by line, for a terminal or a pipe."""
    yield f"pod {story.pod}" + (f" on node {story.node}" if story.node else "")
    if story.scheduling:
        yield "scheduling:"
        for step in story.scheduling:
            yield f"  {step.time.isoformat()}  {step.text}"
    if not story.resizes:
        yield "  no resize on record"
    for r in story.resizes:
        yield ""
        yield f"resize {r.number}: asked by {r.asked_by} at {r.asked_at.isoformat()} (correlation {r.correlation_id})"  # noqa: E501
        for want in r.wanted:
            yield f"  wanted   {want}"
        t0 = r.asked_at
        retry = r.retried
        allocated = next(
            (s for s in r.steps if retry and s.event == "Allocated" and s.offset == retry.offset),
            None,
        )
        for step in sorted([*r.steps, *r.freed_by], key=lambda s: s.time):
            if retry is not None and step is allocated:
                yield f"  +{_ms(t0, retry.time):>9.1f} ms  {retry.text}"
            mark = "freed the room: " if step in r.freed_by else ""
            yield f"  +{_ms(t0, step.time):>9.1f} ms  {mark}{step.text}"
        stages = ", ".join(f"{k} {v:.1f} ms" for k, v in r.durations_ms.items())
        yield f"  outcome  {r.outcome}" + (f" ({stages})" if stages else "")
    yield ""
    yield f"now: {story.now}"
