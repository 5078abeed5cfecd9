"""What the kubelet's writes about a pod answer: the last request for it, not another
controller's note about the pod since (the node lifecycle marking it not ready between a
resize and its allocation took the resize's correlation away: `inplace load` then never saw
that resize settle)."""

from __future__ import annotations

from typing import Any

from inplace.core.bus.consumer import Record
from inplace.core.bus.producer import Position
from inplace.core.settings import Settings
from schemas import events as ev
from schemas.envelope import Envelope
from services.kubelet.config import KubeletConfig
from services.kubelet.kubelet import Kubelet
from services.kubelet.runtime_fake import FakeRuntime
from tests import factories

IDS: dict[str, Any] = {"namespace": "team-a", "name": "web", "uid": "uid-web"}


async def test_a_resize_stays_the_cause_when_the_node_lifecycle_marks_the_pod() -> None:
    proposed = Envelope.wrap(
        ev.ResizeProposed(
            **IDS,
            containers=[
                ev.ContainerResources(name="app", resources=factories.resources("300m", "128Mi"))
            ],
        ),
        producer="apiserver",
        correlation_id="resize-1",
    )
    stream = [
        Envelope.wrap(
            ev.PodCreated(**IDS, pod=factories.pod("team-a", "web")), producer="apiserver"
        ),
        Envelope.wrap(ev.PodBound(**IDS, node_name="n1"), producer="scheduler"),
        proposed,
        Envelope.wrap(ev.PodReadinessChanged(**IDS, ready=False), producer="apiserver"),
        Envelope.wrap(ev.PodUnschedulable(**IDS, message="none fits"), producer="scheduler"),
    ]
    kubelet = Kubelet(Settings(), FakeRuntime(), KubeletConfig(nodes=0))
    async for _ in factories.feed(kubelet.model, stream, kubelet._accept, 1):
        pass
    cause = kubelet.causes["team-a/web"]
    assert (cause.id, cause.correlation_id) == (proposed.id, "resize-1")


async def test_its_read_model_keeps_the_decoded_payloads_objects() -> None:
    """The kubelet keeps causes, not records, so its model folds the payload's own pod in
    instead of a deep copy of it."""
    kubelet = Kubelet(Settings(), FakeRuntime(), KubeletConfig(nodes=0))
    created = ev.PodCreated(**IDS, pod=factories.pod("team-a", "web"))
    env = Envelope.wrap(created, producer="apiserver")
    kubelet.model._apply(Record(Position(env.topic, 0, 0), env))
    assert kubelet.model.get("pods", ("team-a", "web")) is created.pod
