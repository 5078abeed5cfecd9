"""Low-level helpers shared by the local Kafka and PostgreSQL launchers.

This is the leaf module of :mod:`inplace.localinfra`: it holds the error type, port
probing, process liveness checks and a way to run a coroutine to completion from synchronous
code, whether or not the calling thread already runs an event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, Self, TypeVar

T = TypeVar("T")


class LocalInfraError(RuntimeError):
    """A local Kafka / PostgreSQL server could not be provided.

    The message is meant for humans: the first line says what went wrong (and how to fix it
    where we know), later lines (if any) carry the tail of the server's log.
    """


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port on ``host`` that nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_is_open(host: str, port: int, timeout: float = 0.5) -> bool:
    """True if something accepts TCP connections on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def port_is_free(host: str, port: int) -> bool:
    """True if we could bind ``host:port`` ourselves (nobody else holds it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # Same option the servers use, so a port in TIME_WAIT still counts as free.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return False
            raise
    return True


def pid_alive(pid: int) -> bool:
    """True if process ``pid`` exists and is not a zombie."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by someone else
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no procfs: trust kill(0)
    # Field 3 is the state; the command name (field 2) may contain spaces and parens.
    state = stat.rsplit(")", 1)[-1].split()[0]
    return state not in ("Z", "X")


def pid_cmdline(pid: int) -> list[str]:
    """The argv of ``pid`` (empty if unknown or gone)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def read_pid_file(path: Path) -> int | None:
    """The pid stored in the first line of ``path``, or None."""
    try:
        first = path.read_text().split("\n", 1)[0].strip()
        return int(first)
    except (OSError, ValueError):
        return None


def kill_process_group(pid: int, timeout: float) -> None:
    """SIGTERM the process group led by ``pid``, wait, then SIGKILL if it is still there."""

    def _signal(sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)

    _signal(signal.SIGTERM)
    if wait_pid_gone(pid, timeout):
        return
    _signal(signal.SIGKILL)
    if not wait_pid_gone(pid, 10.0):
        raise LocalInfraError(f"process {pid} did not exit after SIGKILL")


def wait_pid_gone(pid: int, timeout: float) -> bool:
    """Wait up to ``timeout`` s for ``pid`` to disappear (reaping it if it is our child)."""
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)
        if not pid_alive(pid):
            # It may have turned into a zombie right after the waitpid above: reap it now.
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def tail_file(path: Path, lines: int = 30) -> str:
    """The last ``lines`` lines of a text file ('' if it cannot be read)."""
    try:
        with path.open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - 64 * 1024))
            data = fh.read()
    except OSError:
        return ""
    return "\n".join(data.decode(errors="replace").splitlines()[-lines:])


def with_log_tail(message: str, log: Path, lines: int = 30) -> str:
    """``message`` followed by the tail of ``log`` (if there is any)."""
    tail = tail_file(log, lines)
    if not tail:
        return message
    return f"{message}\n--- last lines of {log} ---\n{tail}"


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object from ``path``; {} if missing or unreadable."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` to ``path`` via a temp file + rename (never a half-written file)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)


def run_coroutine_sync(factory: Callable[[], Coroutine[Any, Any, T]], timeout: float) -> T:
    """Run ``factory()`` to completion on a fresh event loop in a helper thread.

    Works whether or not the calling thread already runs an asyncio loop (a nested
    ``asyncio.run`` would fail there). Exceptions from the coroutine are re-raised here.
    """
    result: list[T] = []
    error: list[BaseException] = []

    def _runner() -> None:
        try:
            result.append(asyncio.run(asyncio.wait_for(factory(), timeout)))
        except BaseException as exc:
            error.append(exc)

    thread = threading.Thread(target=_runner, name="localinfra-probe", daemon=True)
    thread.start()
    thread.join(timeout + 10.0)
    if thread.is_alive():
        raise TimeoutError(f"helper thread did not finish within {timeout + 10.0:.0f}s")
    if error:
        raise error[0]
    return result[0]


class ManagedServer:
    """`with server:` starts it and stops it on the way out (broker and database alike)."""

    def start(self, timeout: float = 60.0) -> None:
        raise NotImplementedError

    def stop(self, timeout: float = 20.0) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
