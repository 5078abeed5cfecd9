"""Writing events decided together: sent in order, one read-your-writes wait per partition."""

from __future__ import annotations

import asyncio
from typing import Any

from inplace.core.bus.producer import Position
from inplace.core.logwriter import LogWriter
from inplace.core.projection.state import ClusterState
from schemas import events as ev
from schemas.envelope import Envelope
from tests import factories


class Producer:
    def __init__(self) -> None:
        self.sent: list[tuple[str, str | None]] = []

    async def send(
        self, envelope: Envelope, *, headers: dict[str, str] | None = None
    ) -> asyncio.Future[Position]:
        self.sent.append((envelope.type, (headers or {}).get("node")))
        future: asyncio.Future[Position] = asyncio.get_running_loop().create_future()
        topic = envelope.payload.TOPIC
        future.set_result(Position(topic, 0, sum(1 for _ in self.sent)))
        return future


class Model:
    topics = [ev.PODS]

    def __init__(self) -> None:
        self.state = ClusterState()
        self.waited: list[Position] = []

    async def wait_for(self, position: Position, within: float) -> None:
        self.waited.append(position)


async def test_events_decided_together_are_written_in_order_and_waited_for_once() -> None:
    producer, model = Producer(), Model()
    writer = LogWriter(producer, model, "kubelet")  # type: ignore[arg-type]
    ids: dict[str, Any] = {"namespace": "a", "name": "p", "uid": "u"}
    positions = await writer.write_all(
        [
            ev.ResizeStatusChanged(**ids, resize="InProgress"),
            ev.ResizeStatusChanged(**ids, resize=None),
            ev.KubeEventRecorded(event=factories.kube_event("a", "p")),
        ]
    )
    assert [t for t, _ in producer.sent] == [
        "ResizeStatusChanged",
        "ResizeStatusChanged",
        "KubeEventRecorded",
    ]
    # The last pods record only: the model applies a partition in order; k8s-events it does
    # not follow.
    assert model.waited == [positions[1]]
