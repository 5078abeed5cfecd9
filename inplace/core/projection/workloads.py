"""Fold of the `workloads` topic into CloneSet objects: (object, event, position) → object.

metadata.generation moves only when the spec changes (Kubernetes' rule for objects with a
status subresource), so status.observedGeneration tells a reader whether the controller has
seen the newest spec.
"""

from __future__ import annotations

from inplace.core.bus.producer import Position
from inplace.core.projection.reducers import resource_version
from schemas import events as ev
from schemas.envelope import Envelope
from schemas.workload import CloneSet


def reduce_clone_set(current: CloneSet | None, env: Envelope, pos: Position) -> CloneSet | None:
    payload = env.payload
    if isinstance(payload, ev.CloneSetDeleted):
        return None
    if isinstance(payload, ev.CloneSetCreated):
        obj = payload.clone_set.model_copy(deep=True)
        obj.metadata.generation = 1
        obj.metadata.creation_timestamp = env.time
    elif current is None:
        return None  # an update or status of an object that is gone: nothing to fold into
    elif isinstance(payload, ev.CloneSetUpdated):
        new = payload.clone_set.model_copy(deep=True)
        changed = new.spec != current.spec
        new.metadata.generation = (current.metadata.generation or 1) + (1 if changed else 0)
        new.metadata.creation_timestamp = current.metadata.creation_timestamp
        new.metadata.uid = current.metadata.uid
        new.status = current.status
        obj = new
    elif isinstance(payload, ev.CloneSetStatusChanged):
        obj = current
        obj.status = payload.status.model_copy(deep=True)
    else:
        return current
    obj.metadata.namespace = payload.namespace
    obj.metadata.name = payload.name
    obj.metadata.resource_version = str(resource_version(pos))
    return obj
