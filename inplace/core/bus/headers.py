"""Judging a record by its headers, before decoding it (issue 16: read only what you need).

Every writer sets `type` (EventProducer.send). A reader that folds only some event types
skips the rest unparsed; a record without the header is always decoded, so the header only
ever saves work and never decides what is true.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from aiokafka.structs import ConsumerRecord

TYPE_HEADER = "type"  # EventProducer.send writes it on every event
# On pod records whose writer knows the pod (podheaders.py): its node, its controller's kind.
NODE_HEADER = "node"
CONTROLLER_HEADER = "controller"

# Whether to decode a raw record, judged without parsing it.
Accept = Callable[[ConsumerRecord], bool]  # type: ignore[type-arg]


def header(raw: ConsumerRecord, name: str) -> str | None:  # type: ignore[type-arg]
    """A record header's value, or None when absent."""
    for key, value in raw.headers or ():
        if key == name:
            return bytes(value).decode() if value is not None else None
    return None


def of_types(types: Collection[str]) -> Accept:
    """Take the records whose `type` header is one of `types` (or that have none)."""
    wanted = {t.encode() for t in types}

    def accept(raw: ConsumerRecord) -> bool:  # type: ignore[type-arg]
        for key, value in raw.headers or ():
            if key == TYPE_HEADER:
                return value in wanted
        return True

    return accept
