"""The envelope is the only parser of record values: valid bytes → typed event, anything else
→ a one-line MalformedEvent (which consumers dead-letter)."""

from __future__ import annotations

import json
import typing
import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest

from schemas import events as ev
from schemas.envelope import Envelope, MalformedEvent, UserInfo, decode
from tests import factories


def _created() -> Envelope:
    return Envelope.wrap(
        ev.PodCreated(
            namespace="default", name="web", uid="u1", pod=factories.pod("default", "web")
        ),
        producer="apiserver",
    )


def test_round_trip_keeps_type_key_and_ids() -> None:
    env = _created()
    back = decode(env.encode())
    assert back == env
    assert isinstance(back.payload, ev.PodCreated)
    assert back.key == "default/web"
    assert back.topic == "pods"
    assert back.schema_version == 1


def test_caused_event_inherits_correlation_and_names_its_cause() -> None:
    proposed = Envelope.wrap(
        ev.ResizeProposed(namespace="default", name="web", uid="u1"), producer="apiserver"
    )
    allocated = Envelope.wrap(
        ev.Allocated(namespace="default", name="web", uid="u1", node_name="n1"),
        producer="kubelet",
        cause=proposed,
    )
    assert allocated.correlation_id == proposed.correlation_id
    assert allocated.causation_id == proposed.id


def test_wrap_builds_what_the_model_validates() -> None:
    """`wrap` builds the envelope without validating it again: what it builds is what the
    model validates from the same fields, its time in UTC."""
    local = datetime(2026, 1, 1, 12, tzinfo=timezone(timedelta(hours=2)))
    env = Envelope.wrap(
        ev.ResizeProposed(namespace="default", name="web", uid="u1"),
        producer="apiserver",
        time=local,
        user=UserInfo(username="alice"),
    )
    assert env.time == local
    assert env.time.tzinfo is UTC
    assert env == Envelope.model_validate(env.model_dump())
    assert env.model_dump_json() == Envelope.model_validate_json(env.encode()).model_dump_json()


def test_wrap_refuses_what_the_model_refuses() -> None:
    payload = ev.ResizeProposed(namespace="default", name="web", uid="u1")
    with pytest.raises(ValueError, match="producer"):
        Envelope.wrap(payload, producer="")
    with pytest.raises(ValueError, match="timezone"):
        Envelope.wrap(payload, producer="apiserver", time=datetime(2026, 1, 1))


def _mutate(**changes: object) -> bytes:
    data = json.loads(_created().encode())
    for path, value in changes.items():
        target = data
        *parents, leaf = path.split("__")
        for p in parents:
            target = target[p]
        if value is _DROP:
            del target[leaf]
        else:
            target[leaf] = value
    return json.dumps(data).encode()


_DROP = object()

MALFORMED = [
    ("tombstone", None, "tombstone"),
    ("not json", b"{{{", "validation error"),
    ("not an object", b"[1, 2]", "validation error"),
    ("unknown type", _mutate(type="PodTeleported"), "unknown event type 'PodTeleported'"),
    ("future schema version", _mutate(schema_version=99), "schema_version 99 is not supported"),
    ("missing correlation id", _mutate(correlation_id=_DROP), "correlation_id"),
    ("naive time", _mutate(time="2024-01-01T00:00:00"), "timezone"),
    ("unknown envelope field", _mutate(extra=1), "extra"),
    (
        "bad quantity",
        _mutate(
            payload__pod__spec__containers=[
                {"name": "app", "resources": {"requests": {"cpu": "1.2.3"}}}
            ]
        ),
        "validation error",
    ),
    ("unknown payload field", _mutate(payload__surprise=True), "surprise"),
    ("payload of another type", _mutate(type="NodeDeleted"), "validation error"),
    ("oversized", b" " * 1_000_001, "exceeds"),
]


@pytest.mark.parametrize(
    ("value", "reason"), [c[1:] for c in MALFORMED], ids=[c[0] for c in MALFORMED]
)
def test_malformed_values_raise_one_line_reasons(value: bytes | None, reason: str) -> None:
    with pytest.raises(MalformedEvent) as info:
        decode(value)
    message = str(info.value)
    assert reason in message
    assert "\n" not in message


def test_every_event_type_is_registered_once_with_a_topic() -> None:
    types = ev.event_types()
    assert {
        "PodCreated",
        "ResizeProposed",
        "ResizeStatusChanged",
        "Allocated",
        "Actuated",
        "PodBound",
        "NodeRegistered",
        "NodeCapacityChanged",
        "NodeResizeFailed",
        "ResourceQuotaCreated",
        "LimitRangeCreated",
        "KubeEventRecorded",
    } <= set(types)
    for cls in types.values():
        assert cls.TOPIC in ev.EVENT_TOPICS


def test_envelope_ids_are_uuids() -> None:
    env = _created()
    assert isinstance(env.id, uuid.UUID)


def test_no_event_type_has_a_required_nullable_field() -> None:
    """Envelopes omit nulls on the wire, so a required field that may be None would make
    the event undecodable (it would be dead-lettered)."""
    for name, cls in ev.event_types().items():
        for field_name, field in cls.model_fields.items():
            nullable = type(None) in typing.get_args(field.annotation)
            assert not (nullable and field.is_required()), f"{name}.{field_name}"


def test_cleared_resize_status_round_trips() -> None:
    env = Envelope.wrap(
        ev.ResizeStatusChanged(namespace="default", name="web", uid="u1", resize=None),
        producer="kubelet",
    )
    back = decode(env.encode())
    assert isinstance(back.payload, ev.ResizeStatusChanged)
    assert back.payload.resize is None


def test_single_pass_decoder_agrees_with_the_generic_envelope() -> None:
    """The fast path (one discriminated union over every event type) must produce exactly what
    validating the generic Envelope produces, for every kind of event the cluster writes."""
    from schemas.envelope import _fast

    stream = list(factories.cluster_stream(pods=5, resizes_per_pod=2, nodes=2))
    assert len({e.type for e in stream}) >= 8
    for env in stream:
        fast = _fast.decode(env.encode())
        assert fast == Envelope.model_validate_json(env.encode()) == env
        assert type(fast.payload) is type(env.payload)
        assert fast.model_fields_set == Envelope.model_validate_json(env.encode()).model_fields_set
