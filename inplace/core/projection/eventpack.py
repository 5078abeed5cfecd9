"""An Event's JSON packed small, as an EventStore holds it out of its hot set (jsonpack.py)."""

from __future__ import annotations

from datetime import UTC, datetime

from inplace.core.projection.jsonpack import JsonPacker
from schemas.k8s import Event, ObjectMeta
from schemas.kubeevents import event_about, reference


def event_json(event: Event) -> bytes:
    """An Event's Kubernetes JSON, in one pass."""
    return event.k8s_json()


def _typical() -> list[bytes]:
    """The JSON of a few typical Events: a pod scheduled, a container started, a resize."""
    at = datetime(2026, 1, 1, tzinfo=UTC)
    pod = ObjectMeta(name="web-0", namespace="default", uid="00000000-0000-0000-0000-000000000000")
    words = [
        ("Scheduled", "Successfully assigned default/web-0 to node-0", None),
        ("Started", "Started container app", "node-0"),
        ("ResizeStarted", 'Pod resize started: {"containers":[{"name":"app","resources":'
         '{"limits":{"cpu":"100m","memory":"128Mi"},"requests":{"cpu":"100m","memory":'
         '"128Mi"}}}],"generation":2}', "node-0"),
    ]  # fmt: skip
    return [
        event_json(
            event_about(
                reference("Pod", pod),
                name="web-0.1",
                namespace="default",
                reason=reason,
                message=message,
                component="kubelet" if host else "default-scheduler",
                instance=host or "default-scheduler",
                host=host,
                now=at,
                counted=host is not None,
            )
        )
        for reason, message, host in words
    ]


_EVENTS = JsonPacker(_typical())
pack, unpack = _EVENTS.pack, _EVENTS.unpack
