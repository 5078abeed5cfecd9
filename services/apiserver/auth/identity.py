"""The user a request is served for, visible to the code that writes its events."""

from __future__ import annotations

from contextvars import ContextVar

from schemas.envelope import UserInfo

ANONYMOUS = UserInfo(username="system:anonymous", groups=("system:unauthenticated",))
# Plain-HTTP loopback mode has no authentication: everything runs as this (kube-apiserver's old
# insecure port did the same).
UNSECURED = UserInfo(username="system:unsecured", groups=("system:masters", "system:authenticated"))


def service_account_groups(namespace: str) -> list[str]:
    """The groups a service account of `namespace` is in (besides system:authenticated)."""
    return ["system:serviceaccounts", f"system:serviceaccounts:{namespace}"]


def controller(name: str) -> UserInfo:
    """A kube-controller-manager controller's identity (its service account in kube-system),
    which the apiserver's own loops write as: the node lifecycle, the namespace sweep."""
    groups = (*service_account_groups("kube-system"), "system:authenticated")
    return UserInfo(username=f"system:serviceaccount:kube-system:{name}", groups=groups)


_current: ContextVar[UserInfo | None] = ContextVar("inplace_request_user", default=None)


def current_user() -> UserInfo | None:
    return _current.get()


def set_current_user(user: UserInfo) -> None:
    _current.set(user)
