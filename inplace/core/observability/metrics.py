"""Prometheus metrics shared by every role (each role adds its own next to these)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

EVENTS_CONSUMED = Counter(
    "inplace_events_consumed_total", "Events a role consumed from the log", ["role", "type"]
)
EVENTS_SKIPPED = Counter(
    "inplace_events_skipped_total",
    "Records a role skipped by their headers without decoding (types or nodes it does not serve)",
    ["role"],
)
EVENTS_PRODUCED = Counter(
    "inplace_events_produced_total", "Events a role wrote to the log", ["role", "type"]
)
OWN_WRITES = Counter(
    "inplace_own_writes_total",
    "A role's own writes its read model applied on the broker's ack, or waited to fetch back",
    ["role", "how"],
)
LOG_WRITE_SECONDS = Histogram(
    "inplace_log_write_seconds",
    "From handing a write (an event, or events decided together) to the producer to the "
    "broker's ack of its last record: the log round trip read-your-writes costs",
    ["role"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
DEAD_LETTERS = Counter(
    "inplace_dead_letters_total",
    "Records a role could not parse and parked on the dead-letter topic",
    ["role", "topic"],
)
BATCH_SECONDS = Histogram(
    "inplace_consume_batch_seconds", "Time to handle one consumed batch", ["role"]
)
MALFORMED = Counter(
    "inplace_malformed_records_total",
    "Records a read model skipped because they could not be parsed",
    ["role", "topic"],
)

START_SOURCE = Gauge(
    "inplace_read_model_start_source",
    "Where a read model started: 1 for `snapshot` (the projection) or `log` (offset 0)",
    ["role", "source"],
)
FETCH_WAIT = Gauge(
    "inplace_read_model_fetch_wait_ms",
    "How long the broker may hold a read model's fetches now (0 while a request waits on it)",
    ["role"],
)
SNAPSHOT_OBJECTS = Gauge(
    "inplace_read_model_snapshot_objects",
    "Objects a read model loaded from the projection",
    ["role"],
)
