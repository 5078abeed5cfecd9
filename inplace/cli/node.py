"""`inplace node resize <node> --cpu/--memory/--swap`: hotplug a node (KEP-3953).

Calls the hotplug role's API, as a cloud or VM hotplug would, and prints the node's capacity and
allocatable before and after. Errors are one line and exit 1: unknown node, bad quantity,
server down.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import typer
from rich.console import Console

from inplace.cli.errors import fail
from inplace.cli.kubeconfig import KUBECONFIG, endpoint_of
from inplace.cli.output import OUTPUT, check_format, print_document

app = typer.Typer(help="Nodes: resize a node's CPU, memory and swap in place (KEP-3953).")
out = Console(highlight=False, soft_wrap=True)

DEFAULT_URL = "http://127.0.0.1:8084"


def _default_url() -> str:
    return os.environ.get("INPLACE_HOTPLUG_URL") or DEFAULT_URL


def _error(response: httpx.Response) -> str:
    """The message of a Kubernetes Status body, or the HTTP status line."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and body.get("message"):
        return str(body["message"])
    return f"HTTP {response.status_code} {response.reason_phrase}"


def _arrow(old: dict[str, str], new: dict[str, str], name: str) -> str:
    before, after = old.get(name, "0"), new.get(name, "0")
    return after if before == after else f"{before} -> {after}"


def _rows(result: dict[str, Any]) -> list[tuple[str, str, str]]:
    old_cap, new_cap = result["oldCapacity"], result["newCapacity"]
    old_alloc, new_alloc = result["oldAllocatable"], result["newAllocatable"]
    names = [*new_cap, *(n for n in new_alloc if n not in new_cap)]
    return [(n, _arrow(old_cap, new_cap, n), _arrow(old_alloc, new_alloc, n)) for n in names]


@app.command("resize")
def resize_cmd(
    node: str = typer.Argument(..., help="node name"),
    cpu: str | None = typer.Option(None, help="new CPU capacity, e.g. 16"),
    memory: str | None = typer.Option(None, help="new memory capacity, e.g. 64Gi"),
    swap: str | None = typer.Option(None, help="new swap capacity, e.g. 8Gi (0: no swap)"),
    server: str | None = typer.Option(
        None,
        help="hotplug API URL (default: $INPLACE_HOTPLUG_URL or http://127.0.0.1:8084)",
        show_default=False,
    ),
    kubeconfig: Path | None = KUBECONFIG,
    output: str = OUTPUT,
) -> None:
    """Resize NODE in place and print its capacity and allocatable, old -> new
    (`-o json|yaml`: the hotplug API's answer as one document).

    The hotplug API takes admins only (group system:masters) when the cluster runs with
    credentials: the kubeconfig's client certificate (or token) and CA are used."""
    fmt = check_format(output)
    body = {k: v for k, v in {"cpu": cpu, "memory": memory, "swap": swap}.items() if v is not None}
    if not body:
        raise fail("nothing to resize: give --cpu, --memory and/or --swap")
    url = (server or _default_url()).rstrip("/")
    endpoint = f"{url}/api/v1/nodes/{quote(node, safe='')}/resize"
    credentials = endpoint_of(kubeconfig)
    try:
        response = httpx.post(
            endpoint,
            json=body,
            timeout=60,
            verify=credentials.ssl_context() if credentials else True,
            headers=credentials.headers() if credentials else None,
        )
    except httpx.HTTPError as exc:
        raise fail(f"cannot reach the hotplug service at {url}: {exc}") from None
    if response.status_code != 200:
        raise fail(_error(response))
    result = response.json()
    if print_document(result, fmt):
        return
    if not result.get("changed"):
        out.print(f"node/{node} unchanged")
    else:
        out.print(f"node/{node} resized")
    rows = _rows(result)
    width = max(len("RESOURCE"), *(len(r[0]) for r in rows))
    cap_width = max(len("CAPACITY"), *(len(r[1]) for r in rows))
    out.print(f"{'RESOURCE':<{width}}  {'CAPACITY':<{cap_width}}  ALLOCATABLE")
    for name, capacity, allocatable in rows:
        out.print(f"{name:<{width}}  {capacity:<{cap_width}}  {allocatable}")
