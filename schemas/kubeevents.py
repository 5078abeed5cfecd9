"""The one builder of Kubernetes Events (core/v1) every role uses, so that their shape (involved
object, source and reporting fields, message bound) is decided once. How an Event is *named*
stays with its caller: the name decides aggregation (same name = one Event whose count grows,
inplace/core/projection/reducers.py), and roles aggregate differently, as Kubernetes' do."""

from __future__ import annotations

from collections import OrderedDict
from datetime import UTC, datetime
from typing import Any

from schemas.k8s import Event, EventSource, EventType, ObjectMeta, ObjectReference

__all__ = [
    "MAX_MESSAGE",
    "Correlator",
    "SpamFilter",
    "event_about",
    "involved_key",
    "last_written",
    "occurrence_name",
    "reference",
    "reference_key",
]

# events/v1 refuses notes over 1 KiB; the recorders cut them there.
MAX_MESSAGE = 1024

# client-go's EventCorrelator (tools/record/events_cache.go), which every kubelet records
# through: a source may send 25 Events about one object, then one more every 5 minutes, and
# it remembers the last 4,096 objects.
SPAM_BURST = 25
SPAM_REFILL_S = 300.0
SPAM_OBJECTS = 4096

# Its EventAggregator: past 10 different messages about one object with one type and reason
# within 10 minutes, the next ones become one combined Event, its message prefixed so.
SIMILAR_EVENTS = 10
SIMILAR_WITHIN_S = 600.0
COMBINED = "(combined from similar events): "


def reference(
    kind: str, meta: ObjectMeta, api_version: str = "v1", *, versioned: bool = True
) -> ObjectReference:
    """The involvedObject for an object with this metadata; `versioned=False` leaves out its
    resourceVersion (the kubelet's references to pods name no version)."""
    return ObjectReference(
        kind=kind,
        api_version=api_version,
        namespace=meta.namespace,
        name=meta.name or "",
        uid=meta.uid,
        resource_version=meta.resource_version if versioned else None,
    )


def last_written(event: Event) -> datetime | None:
    """When the Event was last recorded or updated, as far as it says (what the apiserver's
    event TTL counts from)."""
    return event.last_timestamp or event.event_time or event.metadata.creation_timestamp


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


def involved_key(event: Event) -> str:
    """The object an Event is about, as the correlator's and spam filter's keys name it."""
    return reference_key(event.involved_object)


def reference_key(involved: ObjectReference) -> str:
    """`involved_key` of an Event about `involved`, before the Event is built."""
    return f"{involved.kind}/{involved.namespace}/{involved.name}/{involved.uid}"


class Correlator:
    """client-go's EventCorrelator (tools/record/events_cache.go) as a kubelet records
    through it, its spam filter aside (`SpamFilter`, applied after it): it names each Event
    and decides which ones aggregate.

    An Event is named `<object>.<unix nanos in hex>` at its first occurrence (so a LIST, in
    name order, lists an object's Events in the order they happened, which `kubectl describe`
    keeps for Events of the same second); the same Event again (object, type, reason and
    message) reuses that name, and the log's fold counts it (count + 1, lastTimestamp).
    From the 10th different message about one object, type and reason within 10 minutes,
    they are one combined Event.

    Its two caches hold 4,096 entries each, as client-go's; one per kubelet process, shared
    by the nodes it serves (their objects differ), so memory does not grow with the nodes a
    process simulates. An entry unseen for 10 minutes is dropped too."""

    __slots__ = ("_names", "_similar", "entries")

    def __init__(self, entries: int = SPAM_OBJECTS) -> None:
        self.entries = entries
        # (object, type, reason) → (its messages seen, when last); LRU order.
        self._similar: OrderedDict[tuple[str, str, str], tuple[set[str], float]] = OrderedDict()
        # (object, type, reason[, message]) → (the Event's name, when last); LRU order.
        self._names: OrderedDict[tuple[str, ...], tuple[str, float]] = OrderedDict()

    def correlate(self, event: Event, now: float, wall: datetime | None = None) -> Event:
        """`event` as the recorder writes it: named, perhaps combined. `now`: monotonic
        seconds; `wall`: the time its name is made of (now, by default)."""
        name, message = self.name_event(
            involved_key(event),
            object_name=event.involved_object.name or "",
            type_=event.type or "",
            reason=event.reason or "",
            message=event.message or "",
            now=now,
            wall=wall,
        )
        meta = event.metadata.model_copy(update={"name": name})
        return event.model_copy(update={"metadata": meta, "message": message})

    def name_event(
        self,
        involved: str,
        *,
        object_name: str,
        type_: str,
        reason: str,
        message: str,
        now: float,
        wall: datetime | None = None,
    ) -> tuple[str, str]:
        """What `correlate` decides, from the Event's fields before it is built (a writer
        that builds it once, with them): its name and its message. `involved`: its
        `involved_key`; `object_name`: its involvedObject's name."""
        similar = (involved, type_, reason)
        seen, last = self._similar.pop(similar, (set(), now))
        if now - last > SIMILAR_WITHIN_S:
            seen = set()
        seen.add(message)
        key: tuple[str, ...] = (*similar, message)
        if len(seen) >= SIMILAR_EVENTS:
            seen.discard(message)  # client-go keeps the set from growing past the bound
            key, message = similar, (COMBINED + message)[:MAX_MESSAGE]
        self._similar[similar] = (seen, now)
        found = self._names.pop(key, None)
        if found is None or now - found[1] > SIMILAR_WITHIN_S:
            name = occurrence_name(object_name, wall or datetime.now(UTC))
        else:
            name = found[0]
        self._names[key] = (name, now)
        self._forget(self._similar, now)
        self._forget(self._names, now)
        return name, message

    def _forget(self, cache: OrderedDict[Any, tuple[Any, float]], now: float) -> None:
        """Drop the least recent entries past the bound or unseen for 10 minutes."""
        while cache:
            oldest = next(iter(cache.values()))
            if len(cache) <= self.entries and now - oldest[1] <= SIMILAR_WITHIN_S:
                return
            cache.popitem(last=False)
