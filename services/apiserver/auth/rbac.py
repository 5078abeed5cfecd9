"""RBAC as data: ClusterRoles, Roles and their bindings in rbac.authorization.k8s.io/v1 shape,
evaluated like kube-apiserver's RBAC authorizer (allow-only rules, no deny)."""

from __future__ import annotations

from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from schemas.envelope import UserInfo
from services.apiserver.auth.requestinfo import RequestInfo

DEFAULT_POLICY = "policy.yaml"


class PolicyError(ValueError):
    """A policy file that cannot be loaded; one line."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class _Meta(_Model):
    name: str
    namespace: str = ""


class PolicyRule(_Model):
    verbs: list[str]
    api_groups: list[str] = Field(default=[], alias="apiGroups")
    resources: list[str] = []
    resource_names: list[str] = Field(default=[], alias="resourceNames")
    non_resource_urls: list[str] = Field(default=[], alias="nonResourceURLs")

    def allows(self, info: RequestInfo) -> bool:
        if not _has(self.verbs, info.verb):
            return False
        if not info.is_resource:
            return any(_url_matches(p, info.path) for p in self.non_resource_urls)
        return (
            _has(self.api_groups, info.api_group)
            and (_has(self.resources, info.full_resource) or _sub_wildcard(self.resources, info))
            and (not self.resource_names or info.name in self.resource_names)
        )


class Role(_Model):
    kind: Literal["ClusterRole", "Role"]
    metadata: _Meta
    rules: list[PolicyRule] = []


class Subject(_Model):
    kind: Literal["User", "Group", "ServiceAccount"]
    name: str
    namespace: str = ""

    def matches(self, user: UserInfo) -> bool:
        if self.kind == "User":
            return self.name == user.username
        if self.kind == "Group":
            return self.name in user.groups
        return user.username == f"system:serviceaccount:{self.namespace}:{self.name}"


class RoleRef(_Model):
    kind: Literal["ClusterRole", "Role"]
    name: str


class Binding(_Model):
    kind: Literal["ClusterRoleBinding", "RoleBinding"]
    metadata: _Meta
    subjects: list[Subject] = []
    role_ref: RoleRef = Field(alias="roleRef")


def _has(values: Iterable[str], value: str) -> bool:
    return "*" in values or value in values


def _sub_wildcard(resources_: Iterable[str], info: RequestInfo) -> bool:
    """`pods/*` grants every subresource of pods; `*/scale` one subresource of everything."""
    if not info.subresource:
        return False
    return f"{info.resource}/*" in resources_ or f"*/{info.subresource}" in resources_


def _url_matches(pattern: str, path: str) -> bool:
    # RBAC's non-resource rule: exact, or a trailing `*` as prefix match.
    if pattern.endswith("*"):
        return path.startswith(pattern[:-1])
    return path == pattern


class Policy:
    def __init__(self, roles: list[Role], bindings: list[Binding]) -> None:
        self.cluster_roles = {r.metadata.name: r for r in roles if r.kind == "ClusterRole"}
        self.roles = {(r.metadata.namespace, r.metadata.name): r for r in roles if r.kind == "Role"}
        self.bindings = bindings

    @classmethod
    def load(cls, path: Path | None = None) -> Policy:
        """The policy file at `path`, or the one shipped beside this module."""
        if path is None:
            text = resources.files(__package__).joinpath(DEFAULT_POLICY).read_text()
            source = f"(built-in) {DEFAULT_POLICY}"
        else:
            try:
                text = path.read_text()
            except OSError as exc:
                raise PolicyError(f"cannot read policy {path}: {exc.strerror}") from None
            source = str(path)
        return cls.parse(text, source)

    @classmethod
    def parse(cls, text: str, source: str = "policy") -> Policy:
        try:
            documents = [d for d in yaml.safe_load_all(text) if d]
        except yaml.YAMLError as exc:
            raise PolicyError(f"{source}: not YAML: {exc}") from None
        items = [
            i for d in documents for i in (d.get("items", []) if d.get("kind") == "List" else [d])
        ]
        roles: list[Role] = []
        bindings: list[Binding] = []
        for item in items:
            kind = item.get("kind") if isinstance(item, dict) else None
            try:
                if kind in ("ClusterRole", "Role"):
                    roles.append(Role.model_validate(item))
                elif kind in ("ClusterRoleBinding", "RoleBinding"):
                    bindings.append(Binding.model_validate(item))
                else:
                    raise PolicyError(f"{source}: unsupported kind {kind!r}")
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                raise PolicyError(f"{source}: {kind} {where}: {first['msg']}") from None
        return cls(roles, bindings)

    def _rules(self, binding: Binding) -> list[PolicyRule]:
        ref = binding.role_ref
        if ref.kind == "ClusterRole":
            role = self.cluster_roles.get(ref.name)
        else:
            role = self.roles.get((binding.metadata.namespace, ref.name))
        return role.rules if role else []

    def rules_for(self, user: UserInfo, namespace: str) -> list[PolicyRule]:
        """Every rule granted to `user` in `namespace`: its cluster role bindings' and the
        namespace's role bindings' (RBAC's RulesFor, what a SelfSubjectRulesReview lists)."""
        return [
            rule
            for binding in self.bindings
            if (binding.kind == "ClusterRoleBinding" or binding.metadata.namespace == namespace)
            and any(s.matches(user) for s in binding.subjects)
            for rule in self._rules(binding)
        ]

    def allows(self, user: UserInfo, info: RequestInfo) -> bool:
        for binding in self.bindings:
            if binding.kind == "RoleBinding" and (
                not info.is_resource or binding.metadata.namespace != info.namespace
            ):
                continue  # a RoleBinding grants inside its namespace only
            if not any(s.matches(user) for s in binding.subjects):
                continue
            if any(rule.allows(info) for rule in self._rules(binding)):
                return True
        return False
