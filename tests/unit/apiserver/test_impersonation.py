"""The `Impersonate-*` headers: what they ask for, what must be allowed, whom a request is
then served as (kube-apiserver's impersonation filter)."""

from __future__ import annotations

import pytest

from schemas.envelope import UserInfo
from services.apiserver.auth.impersonation import (
    Impersonation,
    ImpersonationError,
    checks,
    impersonated_user,
    requested,
)


def test_no_headers_no_impersonation() -> None:
    assert requested([("authorization", "Bearer x"), ("accept", "*/*")]) is None


def test_groups_repeat_and_extras_keep_their_key() -> None:
    wanted = requested(
        [
            ("impersonate-user", "bob"),
            ("impersonate-group", "dev"),
            ("impersonate-group", "ops"),
            ("impersonate-uid", "42"),
            ("impersonate-extra-scopes", "view"),
        ]
    )
    assert wanted == Impersonation("bob", ("dev", "ops"), "42", (("scopes", "view"),))
    asked = [(c.verb, c.api_group, c.full_resource, c.namespace, c.name) for c in checks(wanted)]
    assert asked == [
        ("impersonate", "", "users", "", "bob"),
        ("impersonate", "", "groups", "", "dev"),
        ("impersonate", "", "groups", "", "ops"),
        ("impersonate", "authentication.k8s.io", "userextras/scopes", "", "view"),
        ("impersonate", "authentication.k8s.io", "uids", "", "42"),
    ]


def test_groups_without_a_user_are_refused() -> None:
    with pytest.raises(ImpersonationError, match="without impersonating a user"):
        requested([("impersonate-group", "system:masters")])


@pytest.mark.parametrize(
    ("wanted", "served"),
    [
        (Impersonation("bob"), UserInfo(username="bob", groups=("system:authenticated",))),
        (
            Impersonation("bob", ("dev",)),
            UserInfo(username="bob", groups=("dev", "system:authenticated")),
        ),
        (
            Impersonation("bob", ("system:unauthenticated",)),
            UserInfo(username="bob", groups=("system:unauthenticated",)),
        ),
        (
            Impersonation("system:anonymous"),
            UserInfo(username="system:anonymous", groups=("system:unauthenticated",)),
        ),
        (
            Impersonation("system:serviceaccount:team-a:vpa"),
            UserInfo(
                username="system:serviceaccount:team-a:vpa",
                groups=(
                    "system:serviceaccounts",
                    "system:serviceaccounts:team-a",
                    "system:authenticated",
                ),
            ),
        ),
    ],
)
def test_whom_a_request_is_served_as(wanted: Impersonation, served: UserInfo) -> None:
    assert impersonated_user(wanted) == served


def test_a_service_account_is_impersonated_in_its_namespace() -> None:
    (check,) = checks(Impersonation("system:serviceaccount:team-a:vpa"))
    assert (check.resource, check.namespace, check.name) == ("serviceaccounts", "team-a", "vpa")
