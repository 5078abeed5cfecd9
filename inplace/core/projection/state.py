"""The cluster as of some point in the log: an in-memory fold of records with the reducers.

The projector loads the objects a batch touches into one of these, applies the batch and
writes back what changed; `inplace replay state --at` folds from offset 0 to a position.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from inplace.core.bus.consumer import Record
from inplace.core.bus.producer import Position
from inplace.core.projection import reducers
from inplace.core.projection.podstore import PodStore
from inplace.core.projection.workloads import reduce_clone_set
from schemas import events as ev
from schemas.envelope import EventPayload
from schemas.k8s import Event, LimitRange, Node, Pod, ResourceQuota
from schemas.policy import PodDisruptionBudget
from schemas.workload import CloneSet

NsName = tuple[str, str]


@dataclass
class ClusterState:
    # A plain dict of decoded pods (the projector's batch, a replay), or a PodStore holding
    # them as JSON (read models, which hold every pod for as long as they run).
    pods: MutableMapping[NsName, Pod] = field(default_factory=dict)
    nodes: dict[str, Node] = field(default_factory=dict)
    namespaces: dict[str, dict[str, Any]] = field(default_factory=dict)
    resourcequotas: dict[NsName, ResourceQuota] = field(default_factory=dict)
    limitranges: dict[NsName, LimitRange] = field(default_factory=dict)
    poddisruptionbudgets: dict[NsName, PodDisruptionBudget] = field(default_factory=dict)
    # Likewise a dict, or an EventStore holding them as JSON (read models: eventstore.py).
    events: MutableMapping[NsName, Event] = field(default_factory=dict)
    # Kept in memory by read models only; the projector has no table for them yet.
    clonesets: dict[NsName, CloneSet] = field(default_factory=dict)
    # The kubelet's allocation checkpoint: each pod's latest Allocated (requests and limits),
    # gone with the pod's deletion or eviction. None: not kept (a read model that has no use
    # for it saves the memory); the projector and the kubelet keep it. Held as the JSON of
    # the Allocated (`allocation_json`, the projector's row): a kubelet decodes one when it
    # re-admits that pod (decoded, ~2.6 KB of heap for every pod of the cluster, vs ~0.3 KB).
    allocations: dict[NsName, bytes] | None = field(default_factory=dict)
    # The allocations their holder keeps elsewhere from now on (a kubelet's node checkpoint,
    # once it re-admitted the pod): their Allocated is not kept here too.
    claimed: Callable[[NsName], bool] | None = None
    # Keys whose object changed (or vanished) since the last `take_touched`, per collection.
    touched: dict[str, set[Any]] = field(default_factory=dict)
    # The caller never looks at an applied record again (the rebuild): reducers may keep the
    # payload's objects instead of deep-copying them.
    adopt_payloads: bool = False

    def apply(self, record: Record) -> bool:
        """Fold one record; False when its precondition refused it (ev.Conditional: the
        object was changed after the version its writer decided from), so nothing changed."""
        env, pos, adopt = record.envelope, record.position, self.adopt_payloads
        payload = env.payload
        if not payload.CHANGES_STATE:
            return True
        try:
            collection, key = reducers.locate(payload)
        except TypeError:
            return True  # an event no collection holds (nothing to fold)
        objects: dict[Any, Any] = getattr(self, collection)
        if collection == "pods" and _seen(self.pods, key, pos):
            return True  # applied already (a holder that loaded this pod from a newer snapshot)
        if isinstance(payload, ev.Conditional) and payload.precondition is not None:
            if not _at_version(objects, key, payload.precondition):
                return False
        current = objects.get(key)
        if collection == "namespaces":
            new = reducers.reduce_namespace(current, env, pos)
        elif collection == "clonesets":
            new = reduce_clone_set(current, env, pos)
        else:
            new = _REDUCERS[collection](current, env, pos, adopt=adopt)
        _put(self, collection, key, new)
        if collection == "pods":
            self._checkpoint(key, payload)
        return True

    def _checkpoint(self, key: NsName, payload: EventPayload) -> None:
        if self.allocations is None:
            return
        if isinstance(payload, ev.Allocated):
            claimed = self.claimed is not None and self.claimed(key)
            _put(self, "allocations", key, None if claimed else allocation_json(payload))
        elif isinstance(payload, ev.PodDeleted | ev.PodEvicted):
            _put(self, "allocations", key, None)

    def take_touched(self) -> dict[str, set[Any]]:
        touched, self.touched = self.touched, {}
        return touched


_REDUCERS: dict[str, Any] = {
    "pods": reducers.reduce_pod,
    "nodes": reducers.reduce_node,
    "resourcequotas": reducers.reduce_quota,
    "limitranges": reducers.reduce_limit_range,
    "poddisruptionbudgets": reducers.reduce_pdb,
    "events": reducers.reduce_event,
}


def _seen(pods: MutableMapping[NsName, Pod], key: NsName, position: Position) -> bool:
    """A pod's events all share one partition, so its resourceVersion orders them: an event at
    or before it is already folded in."""
    if isinstance(pods, PodStore):
        held = pods.resource_version(key)
    else:
        pod = pods.get(key)
        held = int(pod.metadata.resource_version or 0) if pod is not None else None
    return held is not None and held >= reducers.resource_version(position)


def _at_version(objects: MutableMapping[Any, Any], key: Any, version: str) -> bool:
    """Does the object under `key` still have resourceVersion `version`? One that is gone
    does not refuse: its reducer decides what an update of nothing is."""
    if isinstance(objects, PodStore):
        held = objects.resource_version(key)  # without decoding the pod
        return held is None or str(held) == version
    obj = objects.get(key)
    return obj is None or resource_version_of(obj) == version


def resource_version_of(obj: Any) -> str | None:
    """An object's metadata.resourceVersion, from a model or from its JSON (namespaces are
    kept as their JSON)."""
    if isinstance(obj, dict):
        rv: str | None = obj.get("metadata", {}).get("resourceVersion")
    else:
        rv = obj.metadata.resource_version
    return rv


_NOT_CHECKPOINTED = {"actuated"}


def allocation_json(allocated: ev.Allocated) -> bytes:
    """An Allocated as the checkpoint holds it (and the projection's `allocations` row): the
    allocation, without the actual resources it may report."""
    raw: bytes = allocated.__pydantic_serializer__.to_json(
        allocated, by_alias=True, exclude_none=True, exclude=_NOT_CHECKPOINTED
    )
    return raw


def _put(state: ClusterState, collection: str, key: Any, obj: Any) -> None:
    objects: dict[Any, Any] = getattr(state, collection)
    if obj is None:
        # Not pop: MutableMapping.pop reads the object first, and a store (PodStore,
        # EventStore) would decode what it drops.
        if key in objects:
            del objects[key]  # noqa: RUF051
    else:
        objects[key] = obj
    touched = state.touched.get(collection)
    if touched is None:
        state.touched[collection] = touched = set()
    touched.add(key)
