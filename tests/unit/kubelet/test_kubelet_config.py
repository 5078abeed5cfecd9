"""The kubelet process holds its fetches only while work waits in its node agents' queues,
and says how much waits there."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import REGISTRY

from inplace.core.settings import Settings
from services.kubelet.config import KubeletConfig
from services.kubelet.kubelet import BACKLOG_TO_HOLD, Kubelet
from services.kubelet.runtime_fake import FakeRuntime


@dataclass
class Queue:
    """What the kubelet asks of a node agent here: how many reconciles wait in its queue."""

    queued: int


async def test_fetches_are_held_only_while_reconciles_wait_in_the_node_queues() -> None:
    kubelet = Kubelet(Settings(), FakeRuntime(), KubeletConfig())
    model = kubelet.model
    assert model.fetch_wait_ms == 5 and model.hold_while is not None
    assert not model.hold_while()  # no node served yet
    kubelet.agents = {"a": Queue(BACKLOG_TO_HOLD - 1), "b": Queue(1)}  # type: ignore[dict-item]
    kubelet._backlog_counted = 0.0  # counted at most every BACKLOG_EVERY_S: count now
    assert model.hold_while()
    # Scraped as a gauge too (client-go's workqueue_depth, for this process's nodes).
    assert REGISTRY.get_sample_value("inplace_kubelet_queued_reconciles") == BACKLOG_TO_HOLD
    kubelet.agents["b"].queued = 0
    kubelet._backlog_counted = 0.0
    assert not model.hold_while()
    # Off altogether: INPLACE_KUBELET_FETCH_WAIT_MS=0.
    assert (
        Kubelet(Settings(), FakeRuntime(), KubeletConfig(fetch_wait_ms=0)).model.fetch_wait_ms == 0
    )
