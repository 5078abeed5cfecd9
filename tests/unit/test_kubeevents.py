"""The one Kubernetes Event builder every role uses."""

from __future__ import annotations

from datetime import UTC, datetime

from schemas.k8s import ObjectMeta
from schemas.kubeevents import MAX_MESSAGE, SpamFilter, event_about, occurrence_name, reference

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
