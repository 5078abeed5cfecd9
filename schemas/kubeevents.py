"""The one builder of Kubernetes Events (core/v1) every role uses, so that their shape (involved
object, source and reporting fields, message bound) is decided once. How an Event is *named*
stays with its caller: the name decides aggregation (same name = one Event whose count grows,
inplace/core/projection/reducers.py), and roles aggregate differently, as Kubernetes' do."""

from __future__ import annotations

from datetime import datetime

from schemas.k8s import Event, EventSource, EventType, ObjectMeta, ObjectReference

__all__ = ["MAX_MESSAGE", "SpamFilter", "event_about", "occurrence_name", "reference"]

# events/v1 refuses notes over 1 KiB; the recorders cut them there.
MAX_MESSAGE = 1024

# client-go's EventCorrelator (tools/record/events_cache.go), which every kubelet records
# through: a source may send 25 Events about one object, then one more every 5 minutes, and
# it remembers the last 4,096 objects.
SPAM_BURST = 25
SPAM_REFILL_S = 300.0
SPAM_OBJECTS = 4096


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


class SpamFilter:
    """The correlator's spam filter: a token bucket per involved object (`key`), `burst`
    deep, refilled at one token every `refill_s`; the least recently seen object is forgotten
    past `objects`. An Event it refuses is not written at all (client-go skips it), so a pod
    resized over and over stops adding Event records while its status still tells each
    resize. One per reporter (a kubelet's node), as each kubelet has its own recorder."""

    __slots__ = ("_buckets", "burst", "objects", "refill_s")

    def __init__(
        self, burst: int = SPAM_BURST, refill_s: float = SPAM_REFILL_S, objects: int = SPAM_OBJECTS
    ) -> None:
        self.burst = burst
        self.refill_s = refill_s
        self.objects = objects
        self._buckets: dict[str, tuple[float, float]] = {}  # key → (tokens, at), LRU order

    def allow(self, key: str, now: float) -> bool:
        """Take a token for an Event about `key` at `now` (monotonic seconds), if one is left."""
        tokens, at = self._buckets.pop(key, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - at) / self.refill_s)
        allowed = tokens >= 1.0
        self._buckets[key] = (tokens - 1.0 if allowed else tokens, now)  # now the newest
        if len(self._buckets) > self.objects:
            del self._buckets[next(iter(self._buckets))]
        return allowed
