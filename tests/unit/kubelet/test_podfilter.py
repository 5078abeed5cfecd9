"""Which pod records a kubelet process decodes, and the `node` header writers set."""

from __future__ import annotations

from inplace.core.bus.nodeheader import node_of
from schemas import events as ev
from services.kubelet import podfilter
from tests import factories


def test_a_process_decodes_its_nodes_unbound_pods_and_headerless_records() -> None:
    owned = {"node-1"}
    assert podfilter.decode("node-1", owned)
    assert podfilter.decode("", owned)  # unbound: it may be bound to one of ours next
    assert podfilter.decode(None, owned)  # a writer that did not know
    assert not podfilter.decode("node-2", owned)


def test_the_node_header_comes_from_the_event_or_the_writers_view_of_the_pod() -> None:
    state = factories.fold(
        ev.PodCreated(namespace="a", name="p", uid="u", pod=factories.pod("a", "p")),
        ev.PodBound(namespace="a", name="p", uid="u", node_name="node-1"),
    )
    resize = ev.ResizeProposed(namespace="a", name="p", uid="u", containers=[])
    assert node_of(ev.PodBound(namespace="a", name="q", uid="v", node_name="n"), {}) == "n"
    assert node_of(resize, state.pods) == "node-1"
    assert node_of(resize, {}) is None  # unknown pod: no header, everyone decodes it
    created = ev.PodCreated(namespace="a", name="q", uid="v", pod=factories.pod("a", "q"))
    assert node_of(created, {}) == ""
    assert node_of(ev.NodeDeleted(name="node-1"), state.pods) is None
