"""Node lifecycle, as kube-controller-manager's node lifecycle controller: a node whose kubelet
stopped posting status for the grace period (`--node-monitor-grace-period`, 50 s since
Kubernetes 1.32) gets its Ready condition Unknown ("Kubelet stopped posting node status.")
and the `node.kubernetes.io/unreachable` taints, NoSchedule (the scheduler places nothing
there) and NoExecute; a node heard again is Ready and untainted.

A kubelet's heartbeat here is its node's usage record (services/kubelet/usage.py, every
`INPLACE_KUBELET_USAGE_EVERY_S`; the node's Lease, nodeleases.py). A node never heard from
since this replica followed the `usage` topic is left as it is: with sampling off there are
no heartbeats, and a cluster without them must not go NotReady. The NoExecute taints evict
as the taint eviction controller does (`evictions`): every pod tolerates unreachable for
300 s by default, so a node silent for 50 s + 5 min loses its pods. Meanwhile its pods are
marked not ready (`pods_not_ready`, MarkPodsNotReady: Ready=False and a Warning NodeNotReady
Event each), so disruption budgets and workloads count them as down; the kubelet sets them
Ready again once its node is Ready.

`monitor` decides, `monitor_forever` writes; replicas decide alike from the same log, and
a decision written twice folds to the same node.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import UTC, datetime, timedelta

from inplace.core.readmodel import ReadModel
from schemas import events as ev
from schemas.envelope import EventPayload
from schemas.k8s import Event, Node, NodeCondition, Pod, Taint
from schemas.kubeevents import event_about, occurrence_name, reference
from schemas.podview import pod_ready
from schemas.taints import toleration_seconds
from services.apiserver.auth.identity import controller, set_current_user
from services.apiserver.deletions import deletion
from services.apiserver.writer import Writer

log = logging.getLogger(__name__)

UNREACHABLE = "node.kubernetes.io/unreachable"
COMPONENT = "node-controller"
EVICTION_COMPONENT = "taint-eviction-controller"
EVENT_NAMESPACE = "default"  # where Kubernetes records Events about cluster-scoped objects


def ready_condition(node: Node) -> NodeCondition | None:
    return next((c for c in node.status.conditions or [] if c.type == "Ready"), None)


def monitor(
    node: Node, heard: datetime | None, now: datetime, grace: timedelta
) -> list[EventPayload]:
    """What the node's last heartbeat (`heard`; None: none seen) says to write at `now`: its
    Ready condition when that changes, its taints when they no longer follow it, and an
    Event of the change."""
    name = node.metadata.name or ""
    ready = ready_condition(node)
    written: list[EventPayload] = []
    condition: NodeCondition | None = None
    if heard is not None and ready is not None:
        stale = now - heard > grace
        if stale and ready.status != "Unknown":
            condition = NodeCondition(
                type="Ready",
                status="Unknown",
                reason="NodeStatusUnknown",
                message="Kubelet stopped posting node status.",
                last_heartbeat_time=ready.last_heartbeat_time,
            )
        elif not stale and ready.status == "Unknown":
            condition = NodeCondition(
                type="Ready",
                status="True",
                reason="KubeletReady",
                message="kubelet is posting ready status",
            )
    if condition is not None:
        written.append(ev.NodeConditionChanged(name=name, condition=condition))
        status = "NodeReady" if condition.status == "True" else "NodeNotReady"
        written.append(ev.KubeEventRecorded(event=_status_event(node, status, now)))
    current = condition or ready
    unreachable = current is not None and current.status == "Unknown"
    taints = _taints(list(node.spec.taints or []), unreachable, now)
    if taints is not None:
        spec = node.spec.model_copy(deep=True)
        spec.taints = taints or None
        metadata = node.metadata.model_copy(deep=True)
        written.append(ev.NodeUpdated(name=name, metadata=metadata, spec=spec))
    return written


def _taints(taints: list[Taint], unreachable: bool, now: datetime) -> list[Taint] | None:
    """The node's taints with the unreachable ones as `unreachable` says; None: no change."""
    held = {t.effect for t in taints if t.key == UNREACHABLE}
    if unreachable and held != {"NoSchedule", "NoExecute"}:
        kept = [t for t in taints if t.key != UNREACHABLE]
        return [
            *kept,
            Taint(key=UNREACHABLE, effect="NoSchedule"),
            Taint(key=UNREACHABLE, effect="NoExecute", time_added=now),
        ]
    if not unreachable and held:
        return [t for t in taints if t.key != UNREACHABLE]
    return None


def _status_event(node: Node, status: str, now: datetime) -> Event:
    name = node.metadata.name or ""
    return event_about(
        reference("Node", node.metadata),
        name=occurrence_name(name, now),
        namespace=EVENT_NAMESPACE,
        reason=status,
        message=f"Node {name} status is now: {status}",
        now=now,
        component=COMPONENT,
        instance=COMPONENT,
        counted=True,
    )


def pods_not_ready(node: Node, pods: Iterable[Pod], now: datetime) -> list[EventPayload]:
    """MarkPodsNotReady: on a node whose Ready condition is not True, each pod still Ready
    gets Ready=False and a Warning NodeNotReady Event ("Node is not ready"); pods already not
    ready are left alone, so a pass repeated (or another replica's) writes nothing more."""
    ready = ready_condition(node)
    if ready is None or ready.status == "True":
        return []
    written: list[EventPayload] = []
    for pod in pods:
        if not pod_ready(pod):
            continue
        meta = pod.metadata
        ids = {"namespace": meta.namespace or "", "name": meta.name or "", "uid": meta.uid or ""}
        written.append(ev.PodReadinessChanged(**ids, ready=False))
        event = event_about(
            reference("Pod", meta),
            name=occurrence_name(meta.name or "", now),
            namespace=meta.namespace or "",
            reason="NodeNotReady",
            message="Node is not ready",
            now=now,
            type_="Warning",
            component=COMPONENT,
            instance=COMPONENT,
            counted=True,
        )
        written.append(ev.KubeEventRecorded(event=event))
    return written


def evictions(node: Node, pods: Iterable[Pod], now: datetime) -> list[EventPayload]:
    """The taint eviction controller's decision for the pods on `node`: with NoExecute taints
    on it, a pod that does not tolerate one is deleted now, one that tolerates them for a
    while (tolerationSeconds: every pod has 300 s of unreachable and not-ready by default)
    once that long has passed since the newest of them was added (its timeAdded; a taint
    without one has not started counting), and one that tolerates them for ever stays."""
    taints = [t for t in node.spec.taints or [] if t.effect == "NoExecute"]
    if not taints:
        return []
    added = [t.time_added for t in taints]
    # Counting from the newest taint; not at all while one has no timeAdded.
    since = None if None in added else max(a for a in added if a is not None)
    written: list[EventPayload] = []
    for pod in pods:
        seconds = toleration_seconds(pod.spec.tolerations or [], taints)
        if seconds is None:
            continue
        if seconds > 0 and (since is None or now - since < timedelta(seconds=seconds)):
            continue
        key = (pod.metadata.namespace or "", pod.metadata.name or "")
        written.append(deletion("pods", key, pod))
        written.append(ev.KubeEventRecorded(event=_eviction_event(pod, now)))
    return written


def _eviction_event(pod: Pod, now: datetime) -> Event:
    namespace, name = pod.metadata.namespace or "", pod.metadata.name or ""
    return event_about(
        reference("Pod", pod.metadata),
        name=occurrence_name(name, now),
        namespace=namespace,
        reason="TaintManagerEviction",
        message=f"Marking for deletion Pod {namespace}/{name}",
        now=now,
        component=EVICTION_COMPONENT,
        instance=EVICTION_COMPONENT,
        counted=True,
    )


async def monitor_forever(
    model: ReadModel,
    writer: Writer,
    heard: Callable[[], Mapping[str, float]],
    grace: timedelta,
    every: float,
) -> None:
    """Every `every` seconds (`--node-monitor-period`), write what `monitor` decides for
    each node (decided again under the node's lock, as an update is); a failed pass is
    logged and the next one tries again."""

    set_current_user(controller(COMPONENT))  # this task writes as kube's node controller
    # As the controller counts from its own first sight of a node: a restarted apiserver
    # gives every node the full grace period before calling an old heartbeat stale.
    started = datetime.now(UTC).timestamp()

    def decide(name: str, beats: Mapping[str, float], now: datetime) -> list[EventPayload]:
        node = model.get("nodes", name)
        beat = beats.get(name)
        at = datetime.fromtimestamp(max(beat, started), UTC) if beat is not None else None
        return monitor(node, at, now, grace) if node is not None else []

    def pods_on(name: str) -> Iterator[Pod]:
        on_it = (model.get("pods", key) for key in model.pods.keys_on([name]))
        return (p for p in on_it if p is not None)

    def evicted(name: str, now: datetime) -> list[EventPayload]:
        node = model.get("nodes", name)
        if node is None or not any(t.effect == "NoExecute" for t in node.spec.taints or []):
            return []
        return evictions(node, pods_on(name), now)

    def unready(name: str, now: datetime) -> list[EventPayload]:
        node = model.get("nodes", name)
        ready = ready_condition(node) if node is not None else None
        if node is None or ready is None or ready.status == "True":
            return []
        return pods_not_ready(node, pods_on(name), now)

    while True:
        await asyncio.sleep(every)
        beats, now = heard(), datetime.now(UTC)
        try:
            for name in [n for n in list(model.objects("nodes")) if decide(n, beats, now)]:
                async with writer.lock(("nodes", name)):
                    if written := decide(name, beats, now):
                        await writer.commit_all(written)
                        log.info("node %s: %s", name, ", ".join(p.TYPE for p in written))
            for name in list(model.objects("nodes")):
                if written := unready(name, now):
                    await writer.commit_all(written)
                    log.info("node %s: %d pod(s) marked not ready", name, len(written) // 2)
            for name in list(model.objects("nodes")):
                if written := evicted(name, now):
                    await writer.commit_all(written)
                    log.info("node %s: %d pod(s) evicted by its NoExecute taints",
                             name, len(written) // 2)  # fmt: skip
        except Exception as exc:  # the log unreachable, a timeout: the next pass retries
            log.warning("node lifecycle pass failed: %s", exc)
