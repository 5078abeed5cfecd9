"""Turning a wanted capacity into events: NodeCapacityChanged plus a Normal Event on the Node.

Both the HTTP API (simulated nodes, what a cloud/VM hotplug would trigger) and the machine
poller go through `Resizer.resize`. Resizes of one node are serialized, and each one is computed
from the read model *after* the previous one is applied (LogWriter waits for it), so two
concurrent resizes never both start from the same old capacity.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import uuid
from collections import defaultdict
from collections.abc import Mapping
from datetime import UTC, datetime

from prometheus_client import Counter

from inplace.core.logwriter import LogWriter
from inplace.core.readmodel import ReadModel
from schemas import events as ev
from schemas.k8s import Event, Node, ObjectReference
from schemas.kubeevents import event_about
from schemas.nodeswap import planning_capacity
from schemas.quantity import Quantity
from services.hotplug.capacity import CapacityChange, InvalidResize, plan_resize

__all__ = ["RESIZED_REASON", "RESIZES", "NodeNotFoundError", "Resizer", "node_event"]

log = logging.getLogger(__name__)

ROLE = "hotplug"
RESIZED_REASON = "NodeResized"
# Kubernetes records Events about cluster-scoped objects such as Nodes in "default".
_EVENT_NAMESPACE = "default"

RESIZES = Counter(
    "inplace_hotplug_resizes_total",
    "Node resizes the hotplug role handled, by source (api, machine) and outcome",
    ["source", "outcome"],  # changed | unchanged | invalid | not_found
)


class NodeNotFoundError(LookupError):
    def __init__(self, name: str) -> None:
        super().__init__(f'nodes "{name}" not found')
        self.name = name


def node_event(
    node: Node,
    message: str,
    *,
    now: datetime,
    reason: str = RESIZED_REASON,
    type_: str = "Normal",
) -> Event:
    """A Normal NodeResized Event (or the given reason and type) on `node`. Named after its
    message, so the same resize seen twice aggregates into one Event with count 2 (like
    Kubernetes' event correlator) while different resizes stay separate Events."""
    name = node.metadata.name or ""
    digest = hashlib.sha256(message.encode()).hexdigest()[:10]
    return event_about(
        ObjectReference(kind="Node", name=name, uid=node.metadata.uid or name, api_version="v1"),
        name=f"{name}.{reason.lower()}.{digest}",
        namespace=_EVENT_NAMESPACE,
        reason=reason,
        message=message,
        type_=type_,  # type: ignore[arg-type]
        action="Resize",
        now=now,
        component=ROLE,
        instance=name,
        host=name,
    )


class FeatureGateDisabled(Exception):
    """InPlaceNodeResourceResize is off: the change was said (log, Event), not applied."""


GATE = "InPlaceNodeResourceResize"


class Resizer:
    def __init__(self, model: ReadModel, writer: LogWriter, *, enabled: bool = True) -> None:
        self.model = model
        self.writer = writer
        self.enabled = enabled
        self._ignored_last: dict[str, str] = {}  # node → the change last said ignored
        self._locks: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)

    async def _ignored(self, node: Node, change: CapacityChange, source: str) -> None:
        message = (
            f"Node {node.metadata.name} capacity change ignored ({source}): the {GATE} "
            f"feature gate is off ({change.describe()})"
        )
        RESIZES.labels(source, "gated").inc()
        name = node.metadata.name or ""
        if self._ignored_last.get(name) != message:  # said once per distinct change
            self._ignored_last[name] = message
            log.warning("%s", message)
            event = node_event(
                node, message, now=datetime.now(UTC), reason="NodeResizeIgnored", type_="Warning"
            )
            await self.writer.write(ev.KubeEventRecorded(event=event))
        raise FeatureGateDisabled(message)

    def node(self, name: str) -> Node | None:
        node = self.model.get("nodes", name)
        # A private copy: the read model changes its objects in place as events arrive.
        return node.model_copy(deep=True) if node is not None else None

    async def resize(
        self, name: str, requested: Mapping[str, Quantity], *, source: str
    ) -> tuple[CapacityChange, Node]:
        """Apply `requested` to node `name`; returns the change and the node as it was before.

        Publishes nothing when the capacity would not change. Raises NodeNotFoundError and
        InvalidResize (nothing published either).
        """
        async with self._locks[name]:
            node = self.node(name)
            if node is None:
                RESIZES.labels(source, "not_found").inc()
                raise NodeNotFoundError(name)
            try:
                change = plan_resize(
                    name, planning_capacity(node.status), node.status.allocatable or {}, requested
                )
            except InvalidResize:
                RESIZES.labels(source, "invalid").inc()
                raise
            if not change.changed:
                RESIZES.labels(source, "unchanged").inc()
                return change, node
            if not self.enabled:
                await self._ignored(node, change, source)
            correlation = str(uuid.uuid4())
            await self.writer.write(
                ev.NodeCapacityChanged(
                    name=name,
                    old_capacity=change.old_capacity,
                    new_capacity=change.new_capacity,
                    old_allocatable=change.old_allocatable,
                    new_allocatable=change.new_allocatable,
                ),
                correlation_id=correlation,
            )
            message = f"Node {name} resized ({source}): {change.describe()}"
            await self.writer.write(
                ev.KubeEventRecorded(event=node_event(node, message, now=datetime.now(UTC))),
                correlation_id=correlation,
            )
            RESIZES.labels(source, "changed").inc()
            log.info("%s", message)
            return change, node
