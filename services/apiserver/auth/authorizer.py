"""Authorization: the Node rule first, then RBAC (kube-apiserver's
`--authorization-mode=Node,RBAC`), and the 403 message kube-apiserver writes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from schemas.envelope import UserInfo
from services.apiserver.auth.nodeauthorizer import Decision, authorize_node, node_name
from services.apiserver.auth.rbac import Policy, PolicyRule
from services.apiserver.auth.requestinfo import RequestInfo


@dataclass(frozen=True)
class Rules:
    """What a user may do in a namespace, as far as the authorizers can list it."""

    rules: list[PolicyRule]
    incomplete: bool = False
    evaluation_error: str = ""


class Authorizer:
    def __init__(self, policy: Policy, pod_node: Callable[[str, str], str | None]) -> None:
        self.policy = policy
        self.pod_node = pod_node

    def authorize(self, user: UserInfo, info: RequestInfo) -> Decision:
        decision = authorize_node(user, info, self.pod_node)
        if decision.allowed:
            return decision
        if self.policy.allows(user, info):
            return Decision(True)
        return decision  # denied; with the Node rule's reason when it had one

    def rules_for(self, user: UserInfo, namespace: str) -> Rules:
        """RBAC's rules; the Node rule's grants depend on the object, so for a kubelet the
        list is incomplete, with the error kube-apiserver's node authorizer gives."""
        rules = self.policy.rules_for(user, namespace)
        if node_name(user) is not None:
            return Rules(rules, True, "node authorizer does not support user rule resolution")
        return Rules(rules)


def forbidden_message(user: UserInfo, info: RequestInfo, reason: str = "") -> str:
    """`pods "x" is forbidden: User "u" cannot patch resource "pods/status" in API group ""
    in the namespace "d"` — word for word what kube-apiserver answers."""
    if not info.is_resource:
        message = f'forbidden: User "{user.username}" cannot {info.verb} path "{info.path}"'
    else:
        scope = f'in the namespace "{info.namespace}"' if info.namespace else "at the cluster scope"
        subject = f'{info.resource} "{info.name}"' if info.name else info.resource
        if info.api_group:
            subject = (
                f'{info.resource}.{info.api_group} "{info.name}"'
                if info.name
                else (f"{info.resource}.{info.api_group}")
            )
        message = (
            f'{subject} is forbidden: User "{user.username}" cannot {info.verb} resource '
            f'"{info.full_resource}" in API group "{info.api_group}" {scope}'
        )
    return f"{message}: {reason}" if reason else message
