"""Which pod records a kubelet process decodes (by their `node` header)."""

from __future__ import annotations

from services.kubelet import podfilter


def test_a_process_decodes_its_nodes_unbound_pods_and_headerless_records() -> None:
    owned = {"node-1"}
    assert podfilter.decode("node-1", owned)
    assert podfilter.decode("", owned)  # unbound: it may be bound to one of ours next
    assert podfilter.decode(None, owned)  # a writer that did not know
    assert not podfilter.decode("node-2", owned)
