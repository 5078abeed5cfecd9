"""User impersonation (`kubectl --as`, `--as-group`): the `Impersonate-*` headers, what the
requester must be allowed to impersonate, and the user the request is then served as — the
rules of kube-apiserver's impersonation filter.

Each impersonated attribute is an `impersonate` request of its own: `users` (or
`serviceaccounts` in their namespace for `system:serviceaccount:<ns>:<name>`), `groups`,
`uids` and `userextras/<key>` (group authentication.k8s.io). Every one must be allowed, or the
request is a 403 naming the first that was not.
"""

from __future__ import annotations

from dataclasses import dataclass

from schemas.envelope import UserInfo
from services.apiserver.auth.identity import service_account_groups
from services.apiserver.auth.requestinfo import RequestInfo

USER = "impersonate-user"
GROUP = "impersonate-group"
UID = "impersonate-uid"
EXTRA_PREFIX = "impersonate-extra-"
AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
ANONYMOUS = "system:anonymous"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"


class ImpersonationError(ValueError):
    """Headers that ask for no user but for its groups, uid or extras; one line."""


@dataclass(frozen=True)
class Impersonation:
    username: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: tuple[tuple[str, str], ...] = ()


def requested(headers: list[tuple[str, str]]) -> Impersonation | None:
    """The impersonation the headers (lower-case names, in order, repeats kept) ask for;
    None when they ask for none."""
    username = uid = ""
    groups: list[str] = []
    extra: list[tuple[str, str]] = []
    for name, value in headers:
        if name == USER:
            username = value
        elif name == GROUP:
            groups.append(value)
        elif name == UID:
            uid = value
        elif name.startswith(EXTRA_PREFIX):
            extra.append((name.removeprefix(EXTRA_PREFIX), value))
    if not username:
        if groups or uid or extra:
            raise ImpersonationError(
                "requested impersonation of groups, a uid or extras without impersonating a user"
            )
        return None
    return Impersonation(username, tuple(groups), uid, tuple(extra))


def _impersonate(resource: str, name: str, group: str = "", **more: str) -> RequestInfo:
    return RequestInfo(
        verb="impersonate",
        path="",
        is_resource=True,
        api_group=group,
        api_version="v1",
        resource=resource,
        name=name,
        **more,
    )


def checks(wanted: Impersonation) -> list[RequestInfo]:
    """The `impersonate` requests the requester must be allowed, in kube-apiserver's order."""
    if wanted.username.startswith(SERVICE_ACCOUNT_PREFIX):
        namespace, _, name = wanted.username.removeprefix(SERVICE_ACCOUNT_PREFIX).partition(":")
        found = [_impersonate("serviceaccounts", name, namespace=namespace)]
    else:
        found = [_impersonate("users", wanted.username)]
    found += [_impersonate("groups", g) for g in wanted.groups]
    found += [
        _impersonate("userextras", value, "authentication.k8s.io", subresource=key)
        for key, value in wanted.extra
    ]
    if wanted.uid:
        found.append(_impersonate("uids", wanted.uid, "authentication.k8s.io"))
    return found


def impersonated_user(wanted: Impersonation) -> UserInfo:
    """Who the request is served as: the groups asked for, a service account's own groups
    when none were, and system:authenticated (system:unauthenticated for the anonymous user)
    unless either was asked for."""
    groups = list(wanted.groups)
    if not groups and wanted.username.startswith(SERVICE_ACCOUNT_PREFIX):
        namespace = wanted.username.removeprefix(SERVICE_ACCOUNT_PREFIX).partition(":")[0]
        groups = service_account_groups(namespace)
    if wanted.username == ANONYMOUS:
        if UNAUTHENTICATED not in groups:
            groups.append(UNAUTHENTICATED)
    elif AUTHENTICATED not in groups and UNAUTHENTICATED not in groups:
        groups.append(AUTHENTICATED)
    return UserInfo(username=wanted.username, groups=tuple(groups))
