"""kube-apiserver's event TTL: which Events expire, and that an expiry decided before the
Event was recorded again does not delete it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from schemas import events as ev
from schemas.k8s import Event
from services.apiserver.eventttl import expired
from tests import factories

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)


def _event(name: str, **times: datetime) -> Event:
    event = factories.kube_event("default", name)
    assert isinstance(event, Event)
    event.metadata.resource_version = f"{len(name)}024"
    event.last_timestamp = times.get("last")
    event.event_time = times.get("event_time")
    event.metadata.creation_timestamp = times.get("created")
    return event


def test_events_last_written_an_hour_ago_expire() -> None:
    events = [
        _event("old", last=NOW - HOUR),
        _event("fresh", last=NOW - HOUR + timedelta(seconds=1)),
        _event("series", event_time=NOW - 2 * HOUR),  # events.k8s.io style: eventTime
        _event("created-only", created=NOW - 3 * HOUR),
        _event("renewed", last=NOW - timedelta(minutes=5), created=NOW - 3 * HOUR),
        _event("timeless"),
    ]
    deleted = list(expired(events, NOW, HOUR))
    assert [d.event.involved_object.name for d in deleted] == ["old", "series", "created-only"]
    assert all(isinstance(d, ev.KubeEventDeleted) for d in deleted)
    assert [d.expires_version for d in deleted] == ["3024", "6024", "12024"]
