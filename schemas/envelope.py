"""The one envelope every event on the log travels in (DESIGN.md §1).

Bytes become typed events here and nowhere else: `decode` is the only parser of record values,
so a consumer either gets a valid `Envelope` or a `MalformedEvent` it can dead-letter.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, ClassVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializeAsAny,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

MAX_EVENT_BYTES = 1_000_000  # Kafka's default message.max.bytes


class MalformedEvent(ValueError):
    """A record value that is not a valid envelope; the reason is one line, fit for a log."""


class PayloadModel(BaseModel):
    """camelCase JSON like the Kubernetes objects payloads carry; unknown fields refused."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True)


class EventPayload(PayloadModel):
    """Base of every event payload. Subclasses declare their type name, topic and version."""

    TYPE: ClassVar[str]
    TOPIC: ClassVar[str]
    VERSION: ClassVar[int] = 1
    registry: ClassVar[dict[str, type[EventPayload]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "TYPE" in cls.__dict__:
            if cls.TYPE in EventPayload.registry:
                raise TypeError(f"event type {cls.TYPE} registered twice")
            EventPayload.registry[cls.TYPE] = cls

    def partition_key(self) -> str:
        """Key that orders this event: namespace/name for pods, node name for nodes, …"""
        raise NotImplementedError


class Envelope(BaseModel):
    """id, type, schema version, key, time, producer, correlation and causation ids + payload."""

    model_config = ConfigDict(extra="forbid")

    id: uuid.UUID = Field(default_factory=uuid.uuid4)
    type: str
    schema_version: int = Field(ge=1)
    key: str = Field(min_length=1)
    time: datetime
    producer: str = Field(min_length=1)
    # One per user request, carried through every hop: Proposed → Allocated → Actuated.
    correlation_id: str = Field(min_length=1)
    causation_id: uuid.UUID | None = None
    payload: SerializeAsAny[EventPayload]

    @field_validator("time")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        if value.tzinfo is None:
            raise ValueError("time must carry a timezone")
        return value.astimezone(UTC)

    @model_validator(mode="before")
    @classmethod
    def _typed_payload(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        type_name = data.get("type")
        payload = data.get("payload")
        event_cls = EventPayload.registry.get(type_name) if isinstance(type_name, str) else None
        if event_cls is None:
            raise ValueError(f"unknown event type {type_name!r}")
        if data.get("schema_version") not in (None, event_cls.VERSION):
            raise ValueError(
                f"{type_name} schema_version {data.get('schema_version')} is not supported "
                f"(this build reads version {event_cls.VERSION})"
            )
        if not isinstance(payload, event_cls):
            data = {**data, "payload": event_cls.model_validate(payload)}
        return data

    @classmethod
    def wrap(
        cls,
        payload: EventPayload,
        *,
        producer: str,
        correlation_id: str | None = None,
        cause: Envelope | None = None,
        time: datetime | None = None,
    ) -> Envelope:
        """Envelope a new event; a caused event inherits its cause's correlation id."""
        if correlation_id is None:
            correlation_id = cause.correlation_id if cause else str(uuid.uuid4())
        return cls(
            type=payload.TYPE,
            schema_version=payload.VERSION,
            key=payload.partition_key(),
            time=time or datetime.now(UTC),
            producer=producer,
            correlation_id=correlation_id,
            causation_id=cause.id if cause else None,
            payload=payload,
        )

    @property
    def topic(self) -> str:
        return self.payload.TOPIC

    def encode(self) -> bytes:
        return self.model_dump_json(by_alias=True, exclude_none=True).encode()


def decode(value: bytes | None) -> Envelope:
    """Parse one record value; any problem becomes a one-line MalformedEvent."""
    if value is None:
        raise MalformedEvent("empty record value (tombstone) on an event topic")
    if len(value) > MAX_EVENT_BYTES:
        raise MalformedEvent(f"record value of {len(value)} bytes exceeds {MAX_EVENT_BYTES}")
    try:
        return Envelope.model_validate_json(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "envelope"
        bad = first.get("input")
        short = isinstance(bad, str | int | float) and len(str(bad)) <= 64
        got = f" (got {bad!r})" if short else ""
        raise MalformedEvent(
            f"{exc.error_count()} validation error(s); first at {where}: {first['msg']}{got}"
        ) from None
