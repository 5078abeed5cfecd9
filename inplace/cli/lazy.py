"""The CLI's tools, imported when named: a role process (`inplace serve`) never imports explain,
load, pki, replay … (~0.15 s of every role's start, measured on this machine's 2 cores)."""

from __future__ import annotations

from importlib import import_module

import click
import typer
from typer.core import TyperGroup

# Subcommand → (module, attribute): a Typer app (a group of commands) or a command function.
LAZY: dict[str, tuple[str, str]] = {
    "kafka": ("inplace.cli.infra", "kafka_app"),
    "postgres": ("inplace.cli.infra", "postgres_app"),
    "replay": ("inplace.cli.replay", "app"),
    "node": ("inplace.cli.node", "app"),
    "pki": ("inplace.cli.pki", "app"),
    "secrets": ("inplace.cli.secrets", "app"),
    "load": ("inplace.cli.load", "load_cmd"),
    "explain": ("inplace.cli.explain", "explain_cmd"),
}


class LazyGroup(TyperGroup):
    """The top-level `inplace` group: the commands defined on it, and those of `LAZY`."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        # As Typer orders them: commands (the tools first), then groups.
        tools = [n for n, (_, attribute) in LAZY.items() if attribute.endswith("_cmd")]
        groups = [n for n in LAZY if n not in tools]
        return [*tools, *super().list_commands(ctx), *groups]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in LAZY:
            return _load(cmd_name)
        return super().get_command(ctx, cmd_name)


def _load(name: str) -> click.Command:
    module, attribute = LAZY[name]
    found = getattr(import_module(module), attribute)
    if isinstance(found, typer.Typer):  # a group even of one command, as add_typer makes it
        group: click.Command = typer.main.get_group(found)
        group.name = name
        return group
    single = typer.Typer(add_completion=False)
    single.command(name)(found)
    return typer.main.get_command(single)
