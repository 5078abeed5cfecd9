"""A kubelet process skips, unparsed, the records of pods bound to other processes' nodes, and
forgets such a pod once the batch is applied: a resize written before its writer saw the
binding must not leave an unbound copy behind that a later take-over of the node skips."""

from __future__ import annotations

from typing import Any

from inplace.core.settings import Settings
from schemas import events as ev
from schemas.envelope import Envelope
from services.kubelet.config import KubeletConfig
from services.kubelet.kubelet import Kubelet
from services.kubelet.runtime_fake import FakeRuntime
from tests import factories

IDS: dict[str, Any] = {"namespace": "team-a", "name": "late", "uid": "uid-late"}


def history() -> tuple[list[Envelope], dict[str, str]]:
    """The pod created unbound, bound to another process's node, then resized by a writer
    that had not seen the binding yet; and the `node` header of each record."""
    created = Envelope.wrap(
        ev.PodCreated(**IDS, pod=factories.pod("team-a", "late")), producer="apiserver"
    )
    bound = Envelope.wrap(ev.PodBound(**IDS, node_name="theirs"), producer="scheduler")
    proposed = Envelope.wrap(
        ev.ResizeProposed(
            **IDS,
            containers=[
                ev.ContainerResources(name="app", resources=factories.resources("300m", "128Mi"))
            ],
        ),
        producer="apiserver",
    )
    return [created, bound, proposed], {created.id: "", bound.id: "theirs", proposed.id: ""}


async def test_a_pod_bound_elsewhere_is_forgotten_even_within_one_batch() -> None:
    stream, nodes = history()
    for batch in (1, 3):  # a record per fetch, or all three in one
        kubelet = Kubelet(Settings(), FakeRuntime(), KubeletConfig(nodes=0))
        kubelet._filtering, kubelet.owned = True, {"ours"}  # as after its first assignment
        fed = factories.feed(kubelet.model, stream, kubelet._accept, batch, nodes)
        skipped = [n async for n in fed]
        assert skipped[-1] == 1  # the binding, unparsed
        assert ("team-a", "late") not in kubelet.model.pods, f"batches of {batch}"
