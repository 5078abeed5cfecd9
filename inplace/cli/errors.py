"""Turning failures into one-line CLI errors (never a stack trace for the user)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import typer
from rich.console import Console

T = TypeVar("T")
err = Console(stderr=True, highlight=False, soft_wrap=True)


def fail(message: str, code: int = 1) -> typer.Exit:
    first = message.strip().splitlines()[0] if message.strip() else "failed"
    err.print(f"[bold red]inplace: error:[/] {first}", markup=True)
    return typer.Exit(code)


def one_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if isinstance(exc, OSError | KeyError) else text


LoopFactory = Callable[[], asyncio.AbstractEventLoop]


def run_async(coro: Coroutine[Any, Any, T], loop_factory: LoopFactory | None = None) -> T:
    """asyncio.run with every expected failure mapped to a one-line error and exit 1."""
    try:
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            return runner.run(coro)
    except typer.Exit:
        raise
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    except Exception as exc:
        raise fail(one_line(exc)) from None
