"""The credentials directory one cluster shares (`inplace pki init`, `inplace up`).

    ca.crt ca.key              the cluster CA (ca.key never leaves this directory)
    server.crt server.key      serving certificate of every role's HTTPS endpoint
    users/<name>.crt .key      client certificates (CN = user, O = groups)
    users/<name>.kubeconfig    one kubeconfig per identity (admin, workload controller, …)
    tokens.csv                 bearer tokens, kube-apiserver's --token-auth-file format
    kubeconfig                 the admin's kubeconfig (what `inplace up` tells you to export)

Creating it again keeps the CA and every existing credential (a restart does not invalidate
the kubeconfig you exported); `rotate` reissues certificates and tokens under the same CA.
"""

from __future__ import annotations

import csv
import io
import secrets
import ssl
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from inplace.core.security import kubeconfig, pki

# Who the roles and the first user are. Groups decide what each may do (services/apiserver
# policy); names are what the audit log and the event envelopes record.
ADMIN = ("inplace-admin", ("system:masters",))
IDENTITIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "admin": ADMIN,
    "apiserver": ("system:apiserver", ("system:masters",)),  # calls the quota webhook
    "workload": ("system:inplace:workload-controller", ("system:inplace:controllers",)),
    "scheduler": ("system:kube-scheduler", ()),
}
SERVER_HOSTS = ("localhost", "127.0.0.1", "::1")


@dataclass(frozen=True)
class Token:
    token: str
    user: str
    uid: str
    groups: tuple[str, ...]


def parse_tokens(text: str) -> list[Token]:
    """kube-apiserver's token file: `token,user,uid,"group1,group2"` per line."""
    tokens = []
    for row in csv.reader(io.StringIO(text)):
        if not row or row[0].startswith("#"):
            continue
        if len(row) < 3 or not row[0] or not row[1]:
            raise ValueError(f"token file line {row!r}: want token,user,uid[,groups]")
        groups = tuple(g for g in (row[3].split(",") if len(row) > 3 else []) if g)
        tokens.append(Token(row[0], row[1], row[2], groups))
    return tokens


def render_tokens(tokens: Iterable[Token]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for t in tokens:
        writer.writerow([t.token, t.user, t.uid, ",".join(t.groups)])
    return out.getvalue()


@dataclass(frozen=True)
class Credentials:
    """Paths inside one credentials directory."""

    root: Path

    @property
    def ca_cert(self) -> Path:
        return self.root / "ca.crt"

    @property
    def ca_key(self) -> Path:
        return self.root / "ca.key"

    @property
    def server_cert(self) -> Path:
        return self.root / "server.crt"

    @property
    def server_key(self) -> Path:
        return self.root / "server.key"

    @property
    def tokens(self) -> Path:
        return self.root / "tokens.csv"

    @property
    def admin_kubeconfig(self) -> Path:
        return self.root / "kubeconfig"

    def user_cert(self, name: str) -> Path:
        return self.root / "users" / f"{name}.crt"

    def user_key(self, name: str) -> Path:
        return self.root / "users" / f"{name}.key"

    def user_kubeconfig(self, name: str) -> Path:
        return self.root / "users" / f"{name}.kubeconfig"

    def exists(self) -> bool:
        return self.ca_cert.is_file() and self.server_cert.is_file() and self.tokens.is_file()

    def ca(self) -> pki.KeyPair:
        return pki.KeyPair(self.ca_cert.read_bytes(), self.ca_key.read_bytes())

    def client_context(self, name: str) -> ssl.SSLContext:
        """TLS for calling another role as users/<name>: trusts our CA, presents that cert."""
        context = ssl.create_default_context(cafile=self.ca_cert)
        context.load_cert_chain(self.user_cert(name), self.user_key(name))
        return context

    def read_tokens(self) -> list[Token]:
        return parse_tokens(self.tokens.read_text()) if self.tokens.is_file() else []

    # --- creating ---------------------------------------------------------------------------

    def create(self, server: str, hosts: Sequence[str] = (), *, rotate: bool = False) -> None:
        """Make what is missing (everything but the CA when `rotate`), then write kubeconfigs
        for `server` (the apiserver URL clients use)."""
        self.root.mkdir(parents=True, exist_ok=True)
        self.root.chmod(0o700)
        if not self.ca_cert.is_file():
            ca = pki.new_ca()
            kubeconfig.write_private(self.ca_key, ca.key_pem)
            self.ca_cert.write_bytes(ca.cert_pem)
        ca = self.ca()
        if rotate or not self.server_cert.is_file():
            served = pki.issue(
                ca, "inplace-server", hosts=[*SERVER_HOSTS, *hosts], server=True, client=False
            )
            self.server_cert.write_bytes(served.cert_pem)
            kubeconfig.write_private(self.server_key, served.key_pem)
        tokens = {t.user: t for t in ([] if rotate else self.read_tokens())}
        for name, (user, groups) in IDENTITIES.items():
            self.issue_user(name, user, groups, replace=rotate)
            if user not in tokens:
                tokens[user] = Token(secrets.token_urlsafe(32), user, name, groups)
        kubeconfig.write_private(self.tokens, render_tokens(tokens.values()))
        self.write_kubeconfigs(server)

    def issue_user(
        self, name: str, user: str, groups: Sequence[str], *, replace: bool = False
    ) -> None:
        """A client certificate for `user` in `groups`, stored as users/<name>.crt/.key."""
        if self.user_cert(name).is_file() and not replace:
            return
        issued = pki.issue(self.ca(), user, organizations=groups)
        kubeconfig.write_private(self.user_key(name), issued.key_pem)
        self.user_cert(name).write_bytes(issued.cert_pem)

    def write_kubeconfigs(self, server: str) -> None:
        ca = self.ca_cert.read_bytes()
        for name in sorted(p.stem for p in (self.root / "users").glob("*.crt")):
            text = kubeconfig.render(
                server=server,
                ca_pem=ca,
                user=name,
                cert_pem=self.user_cert(name).read_bytes(),
                key_pem=self.user_key(name).read_bytes(),
            )
            kubeconfig.write_private(self.user_kubeconfig(name), text)
        kubeconfig.write_private(self.admin_kubeconfig, self.user_kubeconfig("admin").read_text())
