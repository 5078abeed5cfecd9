"""The cluster as of some point in the log: an in-memory fold of records with the reducers.

The projector loads the objects a batch touches into one of these, applies the batch and
writes back what changed; `inplace replay state --at` folds from offset 0 to a position.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from inplace.core.bus.consumer import Record
from inplace.core.projection import reducers
from inplace.core.projection.workloads import reduce_clone_set
from schemas import events as ev
from schemas.k8s import Event, LimitRange, Node, Pod, ResourceQuota
from schemas.workload import CloneSet

NsName = tuple[str, str]


@dataclass
class ClusterState:
    pods: dict[NsName, Pod] = field(default_factory=dict)
    nodes: dict[str, Node] = field(default_factory=dict)
    namespaces: dict[str, dict[str, Any]] = field(default_factory=dict)
    quotas: dict[NsName, ResourceQuota] = field(default_factory=dict)
    limit_ranges: dict[NsName, LimitRange] = field(default_factory=dict)
    events: dict[NsName, Event] = field(default_factory=dict)
    # Kept in memory by read models only; the projector has no table for them yet.
    clone_sets: dict[NsName, CloneSet] = field(default_factory=dict)
    # Keys whose object changed (or vanished) since the last `take_touched`, per collection.
    touched: dict[str, set[Any]] = field(default_factory=dict)
    # The caller never looks at an applied record again (the rebuild): reducers may keep the
    # payload's objects instead of deep-copying them.
    adopt_payloads: bool = False

    def apply(self, record: Record) -> None:
        env, pos, adopt = record.envelope, record.position, self.adopt_payloads
        payload = env.payload
        if not payload.CHANGES_STATE:
            return
        if isinstance(payload, ev.PodEvent):
            key = (payload.namespace, payload.name)
            _put(self, "pods", key, reducers.reduce_pod(self.pods.get(key), env, pos, adopt=adopt))
        elif isinstance(payload, ev.NodeEvent):
            name = payload.name
            node = reducers.reduce_node(self.nodes.get(name), env, pos, adopt=adopt)
            _put(self, "nodes", name, node)
        elif isinstance(payload, ev.PolicyEvent):
            kind, ns, name = reducers.policy_key(payload)
            if kind == "Namespace":
                _put(self, "namespaces", name, _namespace(payload, env.time, pos))
            elif kind == "ResourceQuota":
                quota = reducers.reduce_quota(self.quotas.get((ns, name)), env, pos, adopt=adopt)
                _put(self, "quotas", (ns, name), quota)
            else:
                current = self.limit_ranges.get((ns, name))
                lr = reducers.reduce_limit_range(current, env, pos, adopt=adopt)
                _put(self, "limit_ranges", (ns, name), lr)
        elif isinstance(payload, ev.KubeEventRecorded):
            meta = payload.event.metadata
            key = (meta.namespace or "default", meta.name or "")
            event = reducers.reduce_event(self.events.get(key), env, pos, adopt=adopt)
            _put(self, "events", key, event)
        elif isinstance(payload, ev.CloneSetEvent):
            key = (payload.namespace, payload.name)
            _put(self, "clone_sets", key, reduce_clone_set(self.clone_sets.get(key), env, pos))

    def take_touched(self) -> dict[str, set[Any]]:
        touched, self.touched = self.touched, {}
        return touched


def _put(state: ClusterState, collection: str, key: Any, obj: Any) -> None:
    objects: dict[Any, Any] = getattr(state, collection)
    if obj is None:
        objects.pop(key, None)
    else:
        objects[key] = obj
    touched = state.touched.get(collection)
    if touched is None:
        state.touched[collection] = touched = set()
    touched.add(key)


def _namespace(payload: ev.PolicyEvent, when: Any, pos: Any) -> dict[str, Any] | None:
    if isinstance(payload, ev.NamespaceDeleted):
        return None
    labels = payload.labels if isinstance(payload, ev.NamespaceCreated) else {}
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": payload.namespace,
            "labels": labels,
            "resourceVersion": str(reducers.resource_version(pos)),
            "creationTimestamp": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
        },
        "status": {"phase": "Active"},
    }
