"""The one envelope every event on the log travels in (DESIGN.md §1).

Bytes become typed events here and nowhere else: `decode` is the only parser of record values,
so a consumer either gets a valid `Envelope` or a `MalformedEvent` it can dead-letter.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializeAsAny,
    TypeAdapter,
    ValidationError,
    create_model,
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
    # False for events that only record something (a refused request): no object changes.
    CHANGES_STATE: ClassVar[bool] = True
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


def _utc(value: datetime) -> datetime:
    if value.tzinfo is None:
        raise ValueError("time must carry a timezone")
    return value.astimezone(UTC)


class UserInfo(BaseModel):
    """Who asked for an event (the authenticated user of the API request that wrote it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    username: str = Field(min_length=1)
    groups: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Cause:
    """What an event caused by another takes from it: its id and correlation id. A role that
    answers later keeps this, not the envelope (a PodCreated's carries the whole pod)."""

    id: uuid.UUID
    correlation_id: str


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
    # Set on events written on behalf of an API request (who asked), not on the events
    # other roles write in reaction to them.
    user: UserInfo | None = None
    payload: SerializeAsAny[EventPayload]

    _time_is_utc = field_validator("time")(lambda value: _utc(value))

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
        cause: Envelope | Cause | None = None,
        time: datetime | None = None,
        user: UserInfo | None = None,
    ) -> Envelope:
        """Envelope a new event; a caused event inherits its cause's correlation id.

        Every field is typed already (the payload validated when it was built, its type and
        version are its class's), so the envelope is built without validating it again: the
        model's validators (routing the payload by type, among them) were ~20 µs a write,
        more than encoding it. What they would check of the arguments is checked here."""
        if correlation_id is None:
            correlation_id = cause.correlation_id if cause else str(uuid.uuid4())
        key = payload.partition_key()
        if not (key and producer and correlation_id):
            raise ValueError("an event needs a key, a producer and a correlation id")
        fields = {
            "id": uuid.uuid4(),
            "type": payload.TYPE,
            "schema_version": payload.VERSION,
            "key": key,
            "time": datetime.now(UTC) if time is None else _utc(time),
            "producer": producer,
            "correlation_id": correlation_id,
            "causation_id": cause.id if cause else None,
            "user": user,
            "payload": payload,
        }
        return _built(fields, set(fields))

    @property
    def topic(self) -> str:
        return self.payload.TOPIC

    def as_cause(self) -> Cause:
        return Cause(self.id, self.correlation_id)

    def encode(self) -> bytes:
        return self.model_dump_json(by_alias=True, exclude_none=True).encode()


# --- decoding ---------------------------------------------------------------------------------
#
# Every role decodes every event it follows, so this is the hottest code in the system. The
# generic `Envelope` routes its payload in a Python `before` validator, which makes pydantic
# build a dict of the whole JSON and validate the payload in a second pass. The fast path below
# validates bytes in ONE pass inside pydantic-core: a union of one envelope model per event type,
# discriminated by `type`. Only a record that fails it goes through `Envelope` again, so the
# error message a dead letter carries stays the generic model's.


def _typed_envelope(event_cls: type[EventPayload]) -> type[BaseModel]:
    """An envelope that accepts exactly this event type, version and payload class."""
    fields: dict[str, Any] = {
        name: (info.annotation, info) for name, info in Envelope.model_fields.items()
    }
    fields["type"] = (Literal[event_cls.TYPE], ...)  # type: ignore[name-defined]
    fields["schema_version"] = (Literal[event_cls.VERSION], ...)  # type: ignore[name-defined]
    fields["payload"] = (event_cls, ...)
    return create_model(
        f"{event_cls.__name__}Envelope",
        __config__=ConfigDict(extra="forbid"),
        __validators__={"time_is_utc": field_validator("time")(lambda value: _utc(value))},
        **fields,
    )


class _FastDecoder:
    """The discriminated union over the registry, rebuilt when an event type is registered."""

    def __init__(self) -> None:
        self._known = 0  # types in the union; the registry only ever grows
        self._adapter: TypeAdapter[Any] | None = None

    def adapter(self) -> TypeAdapter[Any]:
        if self._adapter is None or self._known != len(EventPayload.registry):
            models = tuple(_typed_envelope(c) for c in EventPayload.registry.values())
            union = Annotated[Union[models], Field(discriminator="type")]  # type: ignore[valid-type]  # noqa: UP007
            self._adapter = TypeAdapter(union)
            self._known = len(EventPayload.registry)
        return self._adapter

    def decode(self, value: bytes) -> Envelope:
        typed = self.adapter().validate_json(value)
        # Same fields, already validated: adopted without a second validation.
        return _built(typed.__dict__, typed.__pydantic_fields_set__)


def _built(fields: dict[str, Any], fields_set: set[str]) -> Envelope:
    """An Envelope of fields validated already: what model_construct does, minus its
    per-field default handling, which costs as much as the validation saved."""
    envelope = _new_envelope(Envelope)
    _set(envelope, "__dict__", fields)
    _set(envelope, "__pydantic_fields_set__", fields_set)
    _set(envelope, "__pydantic_extra__", None)
    _set(envelope, "__pydantic_private__", None)
    return envelope


_new_envelope = object.__new__
_set = object.__setattr__


_fast = _FastDecoder()


def decode(value: bytes | None) -> Envelope:
    """Parse one record value; any problem becomes a one-line MalformedEvent."""
    if value is None:
        raise MalformedEvent("empty record value (tombstone) on an event topic")
    if len(value) > MAX_EVENT_BYTES:
        raise MalformedEvent(f"record value of {len(value)} bytes exceeds {MAX_EVENT_BYTES}")
    try:
        return _fast.decode(value)
    except ValidationError:
        pass
    try:  # the generic model names the problem the way our dead letters always have
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
