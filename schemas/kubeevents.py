"""The one builder of Kubernetes Events (core/v1) every role uses, so that their shape (involved
object, source and reporting fields, message bound) is decided once. How an Event is *named*
stays with its caller: the name decides aggregation (same name = one Event whose count grows,
inplace/core/projection/reducers.py), and roles aggregate differently, as Kubernetes' do."""

from __future__ import annotations

from datetime import datetime

from schemas.k8s import Event, EventSource, EventType, ObjectMeta, ObjectReference

__all__ = ["MAX_MESSAGE", "event_about", "occurrence_name", "reference"]

# events/v1 refuses notes over 1 KiB; the recorders cut them there.
MAX_MESSAGE = 1024


def reference(kind: str, meta: ObjectMeta, api_version: str = "v1") -> ObjectReference:
    """The involvedObject for an object with this metadata."""
    return ObjectReference(
        kind=kind,
        api_version=api_version,
        namespace=meta.namespace,
        name=meta.name or "",
        uid=meta.uid,
        resource_version=meta.resource_version,
    )


def occurrence_name(object_name: str, now: datetime) -> str:
    """`<name>.<unix nanos in hex>`: a name per occurrence, as client-go's recorder makes."""
    nanos = int(now.timestamp() * 1_000_000) * 1000
    return f"{object_name}.{nanos:x}"


def event_about(
    involved: ObjectReference,
    *,
    name: str,
    namespace: str | None,
    reason: str,
    message: str,
    component: str,
    instance: str,
    type_: EventType = "Normal",
    action: str | None = None,
    now: datetime | None = None,
    host: str | None = None,
    counted: bool = False,
) -> Event:
    """An Event on `involved` reported by `component` (`instance`: which one of them).

    `now` sets eventTime (and first/lastTimestamp with count 1 when `counted`); without it the
    log's record time stands in when the Event is folded. `host` fills the legacy source."""
    return Event(
        metadata=ObjectMeta(name=name, namespace=namespace),
        involved_object=involved,
        reason=reason,
        message=message[:MAX_MESSAGE],
        type=type_,
        action=action,
        # The legacy source only where the reporter fills it (kubelet-style, with its host).
        source=EventSource(component=component, host=host) if host else EventSource(),
        event_time=now,
        first_timestamp=now if counted else None,
        last_timestamp=now if counted else None,
        count=1 if counted else None,
        reporting_component=component,
        reporting_instance=instance,
    )
