"""Authentication: a client certificate our CA signed (CN = user, O = groups), or a bearer
token from the token file. Anything else is anonymous; a bad token is a 401, never anonymous."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache

from inplace.core.security.credentials import Token
from inplace.core.security.pki import subject_of
from schemas.envelope import UserInfo

AUTHENTICATED = "system:authenticated"


class Unauthorized(Exception):
    """Credentials were presented and are not valid (kube answers 401 "Unauthorized")."""


def _signed_in(username: str, groups: Sequence[str]) -> UserInfo:
    extra = () if AUTHENTICATED in groups else (AUTHENTICATED,)
    return UserInfo(username=username, groups=(*groups, *extra))


@lru_cache(maxsize=1024)
def _certificate_user(der: bytes) -> UserInfo | None:
    # The TLS handshake already checked the chain against our CA; this only reads the subject.
    try:
        username, groups = subject_of(der)
    except ValueError:
        return None
    return _signed_in(username, groups) if username else None


class Authenticator:
    def __init__(self, tokens: Sequence[Token]) -> None:
        self._tokens: Mapping[str, UserInfo] = {
            t.token: _signed_in(t.user, t.groups) for t in tokens
        }

    def authenticate(self, authorization: str | None, client_cert: bytes | None) -> UserInfo | None:
        """The user, or None for an anonymous request; raises Unauthorized on bad credentials."""
        if client_cert is not None:
            user = _certificate_user(client_cert)
            if user is not None:
                return user
        if authorization is None:
            return None
        scheme, _, token = authorization.strip().partition(" ")
        if scheme.lower() != "bearer":
            return None  # like kube-apiserver: other schemes are not ours to judge
        user = self._tokens.get(token.strip())
        if user is None:
            raise Unauthorized
        return user
