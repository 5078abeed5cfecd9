"""The kubeconfig an `inplace` command talks with (`--kubeconfig`, else $KUBECONFIG)."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from inplace.cli.errors import fail
from inplace.core.security.kubeconfig import Endpoint, KubeconfigError, load

KUBECONFIG = typer.Option(
    None,
    "--kubeconfig",
    envvar="KUBECONFIG",
    help="credentials: CA, client certificate or token (`inplace up` writes one)",
)


def endpoint_of(kubeconfig: Path | None) -> Endpoint | None:
    """The current context's endpoint; a path list (a:b, as kubectl allows) uses the first."""
    if kubeconfig is None or not str(kubeconfig):
        return None
    first = Path(str(kubeconfig).split(os.pathsep)[0])
    try:
        return load(first)
    except KubeconfigError as exc:
        raise fail(str(exc)) from None
