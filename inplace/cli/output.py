"""What `inplace` commands print, for humans and for scripts: `-o table|json|yaml`.

- `table` (the default): a rich table on a terminal; when stdout is not a terminal, plain
  columns with every cell in full (no ellipsis, no wrapping), so `grep`/`awk` see whole values
  (`inplace replay history ns/pod | grep ResizeProposed` finds every proposal).
- `json`: one stable document; for commands that print a stream of rows (`replay history`,
  `dead-letters`), JSON lines, one object per row.
- `yaml`: the same document (or the list of rows) as YAML.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import typer
import yaml
from rich.console import Console
from rich.table import Table

from inplace.cli.errors import fail

__all__ = ["FORMATS", "OUTPUT", "Format", "check_format", "print_document", "print_rows"]

Format = Literal["table", "json", "yaml"]
FORMATS: tuple[Format, ...] = ("table", "json", "yaml")
OUTPUT = typer.Option("table", "-o", "--output", help="table | json | yaml")


def check_format(value: str) -> Format:
    """The `-o` value, or a one-line error and exit 2 (typer's code for a bad option)."""
    for fmt in FORMATS:
        if value == fmt:
            return fmt
    raise fail(f"--output must be one of {', '.join(FORMATS)}, not {value!r}", code=2)


def _cell(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)


def plain_table(columns: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> str:
    """Columns padded to their widest cell, separated by two spaces; nothing cut."""
    cells = [[_cell(row.get(c)) for c in columns] for row in rows]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.upper().ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip()]
    for r in cells:
        lines.append("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())
    return "\n".join(lines)


def print_rows(
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[str],
    fmt: Format,
    *,
    console: Console | None = None,
    title: str | None = None,
) -> None:
    """Rows of one kind: a table (under `title`, if any), JSON lines, or a YAML list."""
    if fmt == "json":
        for row in rows:
            sys.stdout.write(json.dumps(row, sort_keys=True, default=str) + "\n")
        return
    if fmt == "yaml":
        sys.stdout.write(yaml.safe_dump([dict(r) for r in rows], sort_keys=False))
        return
    if not sys.stdout.isatty():
        sys.stdout.write((f"{title}\n" if title else "") + plain_table(columns, rows) + "\n")
        return
    table = Table(*columns, title=title)
    for row in rows:
        table.add_row(*(_cell(row.get(c)) for c in columns))
    (console or Console()).print(table)


def print_document(document: Mapping[str, Any], fmt: Format) -> bool:
    """One document as JSON or YAML; False for `table` (the command prints its own)."""
    if fmt == "json":
        sys.stdout.write(json.dumps(document, indent=2, sort_keys=True, default=str) + "\n")
        return True
    if fmt == "yaml":
        sys.stdout.write(
            yaml.safe_dump(json.loads(json.dumps(document, default=str)), sort_keys=False)
        )
        return True
    return False
