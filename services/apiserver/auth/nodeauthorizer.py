"""The Node authorizer and NodeRestriction in one rule: a kubelet, authenticated as
`system:node:<name>` in group `system:nodes`, reads pods and nodes, and writes only its own
Node object and the status of pods bound to it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from schemas.envelope import UserInfo
from schemas.k8s import Node
from services.apiserver.auth.requestinfo import RequestInfo

NODES_GROUP = "system:nodes"
NODE_USER_PREFIX = "system:node:"
READ = frozenset({"get", "list", "watch"})


@dataclass(frozen=True)
class Decision:
    """allowed, or not with the reason (empty when the rule has no opinion)."""

    allowed: bool
    reason: str = ""


NO_OPINION = Decision(False)


def node_name(user: UserInfo) -> str | None:
    """The node a kubelet identity speaks for, or None when `user` is not a kubelet."""
    if NODES_GROUP not in user.groups or not user.username.startswith(NODE_USER_PREFIX):
        return None
    return user.username.removeprefix(NODE_USER_PREFIX) or None


def authorize_node(
    user: UserInfo, info: RequestInfo, pod_node: Callable[[str, str], str | None]
) -> Decision:
    """`pod_node(namespace, name)` answers which node a pod is bound to (None if unknown)."""
    node = node_name(user)
    if node is None or not info.is_resource or info.api_group != "":
        return NO_OPINION
    if info.resource in ("pods", "nodes", "namespaces") and info.verb in READ:
        return Decision(True)
    if (
        info.resource == "pods"
        and info.subresource == "status"
        and info.verb in ("update", "patch")
    ):
        bound = pod_node(info.namespace, info.name)
        if bound == node:
            return Decision(True)
        return Decision(False, f'node "{node}" can only update the status of pods bound to it')
    if info.resource == "nodes" and info.subresource in ("", "status"):
        if info.verb in ("create", "update", "patch") and info.name in ("", node):
            return Decision(True)  # a create names its node in the body: see below
        return Decision(False, _not_own_node(node, info.name))
    return NO_OPINION


def _not_own_node(node: str, other: str) -> str:
    return f'node "{node}" is not allowed to modify node "{other}"'


def node_create_refusal(user: UserInfo | None, collection: str, name: str) -> str | None:
    """NodeRestriction at admission: a kubelet creates only the Node named after itself (the
    name is in the body, which authorization does not see)."""
    node = node_name(user) if user is not None else None
    if node is None or collection != "nodes" or name == node:
        return None
    return _not_own_node(node, name)


_RESTRICTED_LABELS = "node-restriction.kubernetes.io"


def node_update_refusal(user: UserInfo | None, old: Node, new: Node) -> str | None:
    """NodeRestriction on a kubelet's update of its own Node: labels under
    `node-restriction.kubernetes.io/` (set by administrators to steer workloads to nodes a
    kubelet cannot claim to be) and taints stay as they are."""
    node = node_name(user) if user is not None else None
    if node is None:
        return None
    before, after = old.metadata.labels or {}, new.metadata.labels or {}
    modified = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    forbidden = sorted(k for k in modified if _restricted(k))
    if forbidden:
        return f"is not allowed to modify labels: {', '.join(forbidden)}"
    if (old.spec.taints or []) != (new.spec.taints or []):
        return f'node "{node}" is not allowed to modify taints'
    return None


def _restricted(label: str) -> bool:
    domain = label.partition("/")[0] if "/" in label else ""
    return domain == _RESTRICTED_LABELS or domain.endswith("." + _RESTRICTED_LABELS)
