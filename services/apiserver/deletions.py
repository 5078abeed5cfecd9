"""The event that deletes an object the API holds: one rule for a DELETE of each kind and for
the content a namespace's deletion takes with it."""

from __future__ import annotations

from typing import Any

from schemas import events as ev
from schemas.envelope import EventPayload
from schemas.k8s import Event


def deletion(collection: str, key: Any, held: Any) -> EventPayload:
    """The deletion of `held`, the object at `key` (a name, or namespace and name) in
    `collection`. An Event's deletion carries the Event: it keys to its object's partition."""
    if collection == "nodes":
        return ev.NodeDeleted(name=key)
    if collection == "namespaces":
        return ev.NamespaceDeleted(namespace=key)
    namespace, name = key
    if collection == "pods":
        return ev.PodDeleted(namespace=namespace, name=name, uid=held.metadata.uid or "")
    if collection == "clonesets":
        return ev.CloneSetDeleted(namespace=namespace, name=name)
    if collection == "resourcequotas":
        return ev.ResourceQuotaDeleted(namespace=namespace, name=name)
    if collection == "limitranges":
        return ev.LimitRangeDeleted(namespace=namespace, name=name)
    if collection == "poddisruptionbudgets":
        return ev.PodDisruptionBudgetDeleted(namespace=namespace, name=name)
    if collection == "events":
        event = held if isinstance(held, Event) else Event.model_validate(held)
        return ev.KubeEventDeleted(event=event)
    raise ValueError(f"no deletion for {collection}")
