"""The one Kubernetes Event builder every role uses."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from schemas.k8s import Event, ObjectMeta
from schemas.kubeevents import (
    MAX_MESSAGE,
    Correlator,
    SpamFilter,
    event_about,
    occurrence_name,
    reference,
)

NOW = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
POD = reference("Pod", ObjectMeta(name="web-0", namespace="shop", uid="u1", resource_version="7"))


def test_an_event_names_its_object_reporter_and_cuts_its_message() -> None:
    event = event_about(
        POD,
        name="web-0.resizestarted",
        namespace="shop",
        reason="ResizeStarted",
        message="x" * 5000,
        component="kubelet",
        instance="node-1",
        host="node-1",
    ).to_k8s()
    assert event["involvedObject"] == {
        "kind": "Pod",
        "apiVersion": "v1",
        "namespace": "shop",
        "name": "web-0",
        "uid": "u1",
        "resourceVersion": "7",
    }
    assert len(event["message"]) == MAX_MESSAGE
    assert (event["reportingComponent"], event["reportingInstance"]) == ("kubelet", "node-1")
    assert event["source"] == {"component": "kubelet", "host": "node-1"}
    assert "count" not in event and "eventTime" not in event


def test_a_counted_occurrence_as_client_gos_recorder_writes_it() -> None:
    event = event_about(
        POD,
        name=occurrence_name("web-0", NOW),
        namespace="shop",
        reason="Scheduled",
        message="Successfully assigned",
        component="default-scheduler",
        instance="default-scheduler-h",
        now=NOW,
        counted=True,
    ).to_k8s()
    assert event["metadata"]["name"] == f"web-0.{1767323045678901000:x}"
    assert event["count"] == 1 and event["firstTimestamp"] == event["lastTimestamp"]
    assert event["source"] == {}


def test_the_spam_filter_allows_a_burst_per_object_then_one_per_refill() -> None:
    spam = SpamFilter(burst=3, refill_s=300.0)
    assert [spam.allow("pod-a", 0.0) for _ in range(4)] == [True, True, True, False]
    assert spam.allow("pod-b", 0.0)  # another object: its own bucket
    assert not spam.allow("pod-a", 299.0)
    assert spam.allow("pod-a", 300.0)  # one token refilled after refill_s
    assert not spam.allow("pod-a", 300.0)
    assert [spam.allow("pod-a", 300.0 + 900.0 * 10) for _ in range(4)] == [True] * 3 + [False]


def test_the_spam_filter_forgets_the_least_recent_object() -> None:
    spam = SpamFilter(burst=1, objects=2)
    assert spam.allow("a", 0.0) and spam.allow("b", 0.0)
    assert not spam.allow("a", 1.0)  # a is now the most recent; b the least
    assert spam.allow("c", 1.0)  # b forgotten
    assert spam.allow("b", 1.0)  # b again: a full bucket, as for an object never seen
    assert not spam.allow("c", 1.0)


def _occurrence(message: str, reason: str = "ResizeStarted") -> Event:
    return event_about(
        POD,
        name="",
        namespace="shop",
        reason=reason,
        message=message,
        component="kubelet",
        instance="node-1",
    )


def test_the_correlator_names_each_event_at_its_first_occurrence() -> None:
    recorder = Correlator()
    first = recorder.correlate(_occurrence("generation 2"), 0.0, NOW)
    again = recorder.correlate(_occurrence("generation 2"), 1.0, NOW + timedelta(seconds=1))
    later = recorder.correlate(_occurrence("generation 3"), 2.0, NOW + timedelta(seconds=2))
    assert first.metadata.name == occurrence_name("web-0", NOW)
    assert again.metadata.name == first.metadata.name  # the same Event: its count grows
    assert later.metadata.name > first.metadata.name  # a new one, listed after it
    assert later.message == "generation 3"


def test_the_tenth_different_message_within_ten_minutes_is_combined() -> None:
    recorder = Correlator()
    names = [
        recorder.correlate(_occurrence(f"generation {g}"), float(g), NOW + timedelta(seconds=g))
        for g in range(12)
    ]
    plain, combined = names[:9], names[9:]
    assert len({e.metadata.name for e in plain}) == 9
    assert [e.message for e in combined] == [
        f"(combined from similar events): generation {g}" for g in (9, 10, 11)
    ]
    assert len({e.metadata.name for e in combined}) == 1  # one Event, counted
    other = recorder.correlate(_occurrence("done", reason="ResizeCompleted"), 12.0, NOW)
    assert other.message == "done"  # another reason: its own


def test_the_correlator_forgets_after_ten_minutes_or_past_its_bound() -> None:
    recorder = Correlator(entries=2)
    first = recorder.correlate(_occurrence("same"), 0.0, NOW)
    soon = recorder.correlate(_occurrence("same"), 1.0, NOW + timedelta(seconds=1))
    assert soon.metadata.name == first.metadata.name
    after = recorder.correlate(_occurrence("same"), 602.0, NOW + timedelta(seconds=602))
    assert after.metadata.name != first.metadata.name  # unseen for 10 minutes: a new one
    for i in range(2):  # two other Events push it out of a cache of two
        recorder.correlate(_occurrence(f"other {i}"), 603.0, NOW + timedelta(seconds=603 + i))
    again = recorder.correlate(_occurrence("same"), 604.0, NOW + timedelta(seconds=606))
    assert again.metadata.name != after.metadata.name
