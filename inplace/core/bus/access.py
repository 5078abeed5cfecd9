"""Who may do what on the log (issue 17's `secure` profile): one SCRAM principal per role, and
ACLs so that each role writes only the topics of the events it owns.

`grants` is the table as data (pure); `provision` makes it so on a broker, through an admin
principal: SCRAM credentials for each role (AlterUserScramCredentials) and the ACLs
(CreateAcls), idempotently. aiokafka's admin client has neither API, so this one step uses
kafka-python's (run in a thread: it is synchronous).

Every role reads every event topic (its read model) and may park malformed records on the
dead-letter topic; its consumer groups start with its name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final, Literal

from inplace.core.bus.auth import KafkaAuth
from schemas.events import DEAD_LETTER, EVENT_TOPICS
from schemas.usage import USAGE

__all__ = ["ROLES", "ROLE_WRITES", "Grant", "grants", "provision"]

# The topics of the events each role writes (schemas/events.py: each event type's TOPIC).
ROLE_WRITES: Final[Mapping[str, tuple[str, ...]]] = {
    "apiserver": ("pods", "nodes", "policy", "k8s-events", "workloads"),
    "kubelet": ("pods", "nodes", "k8s-events", "usage"),  # usage: its resource samples
    "scheduler": ("pods", "k8s-events"),
    "quota": ("policy",),
    "hotplug": ("nodes", "k8s-events"),
    "projector": (),
    "workload": (),  # writes through the apiserver only
    "reader": (),  # `inplace replay`, `explain`, `state`: read-only tooling
}
ROLES: Final = tuple(ROLE_WRITES)

Operation = Literal["READ", "WRITE", "DESCRIBE"]
Resource = Literal["TOPIC", "GROUP"]


@dataclass(frozen=True, order=True)
class Grant:
    """One ALLOW ACL: `principal` may `operation` on the resource (name, or names starting
    with it when `prefixed`)."""

    principal: str
    resource: Resource
    name: str
    operation: Operation
    prefixed: bool = False


def grants(role: str, topic_prefix: str = "") -> list[Grant]:
    """The ACLs of one role's principal (`User:<role>`)."""
    if role not in ROLE_WRITES:
        raise ValueError(f"unknown role {role!r}; roles: {', '.join(ROLES)}")
    user = f"User:{role}"
    out: list[Grant] = []
    for topic in EVENT_TOPICS:
        name = f"{topic_prefix}{topic}"
        out += [Grant(user, "TOPIC", name, "READ"), Grant(user, "TOPIC", name, "DESCRIBE")]
        if topic in ROLE_WRITES[role]:
            out.append(Grant(user, "TOPIC", name, "WRITE"))
    # Resource usage: the kubelet samples it, every role may read it (the apiserver serves it).
    usage = f"{topic_prefix}{USAGE}"
    out += [Grant(user, "TOPIC", usage, "READ"), Grant(user, "TOPIC", usage, "DESCRIBE")]
    if USAGE in ROLE_WRITES[role]:
        out.append(Grant(user, "TOPIC", usage, "WRITE"))
    if role != "reader":
        out.append(Grant(user, "TOPIC", f"{topic_prefix}{DEAD_LETTER}", "WRITE"))
    out.append(Grant(user, "TOPIC", f"{topic_prefix}{DEAD_LETTER}", "READ"))
    out.append(Grant(user, "TOPIC", f"{topic_prefix}{DEAD_LETTER}", "DESCRIBE"))
    for group in sorted({role, f"{topic_prefix}{role}"}):
        out.append(Grant(user, "GROUP", group, "READ", prefixed=True))
    return sorted(out)


def provision(
    bootstrap: str,
    admin: KafkaAuth,
    passwords: Mapping[str, str],
    *,
    topic_prefix: str = "",
    mechanism: str = "SCRAM-SHA-512",
) -> list[Grant]:
    """Create (or reset) each role's SCRAM credential and its ACLs; returns the ACLs.

    Blocking (kafka-python); call it in a thread from async code.
    """
    from kafka.admin import (
        ACL,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        KafkaAdminClient,
        ResourcePattern,
        ResourceType,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    client = KafkaAdminClient(bootstrap_servers=bootstrap, **admin.kafka_python())
    try:
        scram = ScramMechanism[mechanism.replace("-", "_")]
        errors = client.alter_user_scram_credentials(
            [
                UserScramCredentialUpsertion(user, scram, password)
                for user, password in sorted(passwords.items())
            ]
        )
        for user, error in sorted((errors or {}).items()):
            if error:
                raise RuntimeError(f"SCRAM credential of {user}: {error}")
        wanted = [g for role in passwords for g in grants(role, topic_prefix)]
        pattern = {True: ACLResourcePatternType.PREFIXED, False: ACLResourcePatternType.LITERAL}
        acls = [
            ACL(
                principal=g.principal,
                host="*",
                operation=ACLOperation[g.operation],
                permission_type=ACLPermissionType.ALLOW,
                resource_pattern=ResourcePattern(
                    ResourceType[g.resource],
                    g.name,
                    pattern[g.prefixed],
                ),
            )
            for g in wanted
        ]
        result = client.create_acls(acls)
        failed = result.get("failed") or []
        if failed:
            acl, error = failed[0]
            raise RuntimeError(f"creating ACL {acl}: {error}")
        return sorted(wanted)
    finally:
        client.close()


def roles_of(names: Iterable[str]) -> list[str]:
    """`names` checked against the table (an unknown role is a one-line error)."""
    out = []
    for name in names:
        if name not in ROLE_WRITES:
            raise ValueError(f"unknown role {name!r}; roles: {', '.join(ROLES)}")
        out.append(name)
    return out
