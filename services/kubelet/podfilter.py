"""Which pod records a kubelet process decodes: a pure function of the record's `node` header
and the nodes the process serves (issue 16: a process reads the work of its own nodes).

Decoded: records of our nodes, of unbound pods ("": any process may be the one it is bound to
next, so each keeps them until the binding says otherwise) and records without the header
(a writer that did not know: decoding is always safe). Skipped: records of other processes'
nodes; the pod, if this process held it while unbound, is forgotten.
"""

from __future__ import annotations

from collections.abc import Collection


def decode(node: str | None, owned: Collection[str]) -> bool:
    return node is None or node == "" or node in owned
