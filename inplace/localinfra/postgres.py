"""A real local PostgreSQL cluster (initdb + pg_ctl, no Docker) bound to 127.0.0.1.

Files, for ``data_dir = <parent>/<name>``::

    <parent>/<name>/            PGDATA (initdb output; also holds the unix socket)
    <parent>/<name>.json        {"port": ...}: the port is reused on restart
    <parent>/<name>.log         server log (pg_ctl's and the postmaster's stdout/stderr)
    <parent>/.<name>.lock       serialises concurrent start() calls

PostgreSQL refuses to run as root. When we are root, the cluster belongs to the ``postgres``
OS user and ``initdb`` / ``pg_ctl`` run through ``runuser -u postgres --``. That user must be
able to traverse every directory above PGDATA; when it cannot (say the repo lives under
``/root``, mode 700), PGDATA is placed under :data:`RELOCATE_ROOT` and ``data_dir`` becomes a
symlink to it, so the cluster still "lives" at ``data_dir`` for everyone else.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import pwd
import re
import shlex
import shutil
import signal
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import asyncpg

from inplace.localinfra.ports import (
    LocalInfraError,
    ManagedServer,
    free_port,
    pid_alive,
    pid_cmdline,
    port_is_free,
    port_is_open,
    read_json,
    read_pid_file,
    run_coroutine_sync,
    wait_pid_gone,
    with_log_tail,
    write_json_atomic,
)

__all__ = ["PG_LIB_ROOT", "PG_OS_USER", "RELOCATE_ROOT", "PostgresCluster", "find_pg_bin"]

#: Debian/Ubuntu install every major version under ``/usr/lib/postgresql/<major>/bin``.
PG_LIB_ROOT = Path("/usr/lib/postgresql")
#: OS user that owns and runs the cluster when we are root.
PG_OS_USER = "postgres"
#: Where PGDATA goes (as root) when the postgres user cannot reach the requested data_dir.
RELOCATE_ROOT = Path("/var/lib/inplace/postgres")

_HOST = "127.0.0.1"
_APT_HINT = "install PostgreSQL (apt-get update && apt-get install -y postgresql)"
# sun_path is 108 bytes; keep a margin for the ".s.PGSQL.<port>.lock" file next to it.
_MAX_SOCKET_PATH = 100


def _version_key(path: Path) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", path.parent.parent.name))


def find_pg_bin(name: str) -> Path:
    """A PostgreSQL server binary: first on PATH, then the newest ``/usr/lib/postgresql/*/bin``."""
    found = shutil.which(name)
    if found:
        return Path(found)
    candidates = [path for path in PG_LIB_ROOT.glob(f"*/bin/{name}") if os.access(path, os.X_OK)]
    if candidates:
        return max(candidates, key=_version_key)
    raise LocalInfraError(f"{name} not found on PATH or in {PG_LIB_ROOT}/*/bin: {_APT_HINT}")


def _server_bins() -> tuple[Path, Path]:
    """``initdb`` and ``pg_ctl`` from the same installation (same major version)."""
    initdb = find_pg_bin("initdb").resolve()
    pg_ctl = initdb.parent / "pg_ctl"
    if not os.access(pg_ctl, os.X_OK):
        pg_ctl = find_pg_bin("pg_ctl").resolve()
    return initdb, pg_ctl


def _is_root() -> bool:
    return os.geteuid() == 0


def _pg_account() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(PG_OS_USER)
    except KeyError:
        raise LocalInfraError(
            f"running as root, but there is no '{PG_OS_USER}' OS user to run PostgreSQL as "
            f"(PostgreSQL refuses root): {_APT_HINT}, or: useradd --system {PG_OS_USER}"
        ) from None


def _traversable_by(directory: Path, account: pwd.struct_passwd) -> bool:
    """True if ``account`` may search ``directory`` and all its ancestors (mode bits only)."""
    gids = {account.pw_gid}
    gids.update(
        os.getgrouplist(account.pw_name, account.pw_gid) if hasattr(os, "getgrouplist") else []
    )
    path = directory.resolve()
    for part in (path, *path.parents):
        try:
            st = part.stat()
        except OSError:
            return False
        if st.st_uid == account.pw_uid:
            ok = bool(st.st_mode & stat.S_IXUSR)
        elif st.st_gid in gids:
            ok = bool(st.st_mode & stat.S_IXGRP)
        else:
            ok = bool(st.st_mode & stat.S_IXOTH)
        if not ok:
            return False
    return True


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    with path.open("a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


class PostgresCluster(ManagedServer):
    """One PostgreSQL cluster: a data directory plus the server process serving it."""

    def __init__(
        self,
        data_dir: Path,
        port: int | None = None,
        fsync: bool = True,
        user: str = "postgres",
    ) -> None:
        self.data_dir = Path(data_dir).expanduser().absolute()
        self.fsync = fsync
        #: database superuser role (``initdb -U``), used in :meth:`dsn`
        self.user = user
        self._requested_port = port
        self._port: int | None = port

    # -- paths ---------------------------------------------------------------------------
    @property
    def state_file(self) -> Path:
        return self.data_dir.parent / f"{self.data_dir.name}.json"

    @property
    def log_file(self) -> Path:
        return self.data_dir.parent / f"{self.data_dir.name}.log"

    @property
    def real_data_dir(self) -> Path:
        """PGDATA as the server sees it (``data_dir`` with symlinks resolved)."""
        return self.data_dir.resolve()

    # -- public API ----------------------------------------------------------------------
    @property
    def port(self) -> int:
        """The running server's port if it runs, else the one given, else the remembered one."""
        running = self._running_port() if self.pid is not None else None
        if running is not None:
            self._port = running
        if self._port is None:
            stored = read_json(self.state_file).get("port")
            if isinstance(stored, int):
                self._port = stored
        if self._port is None:
            raise LocalInfraError(
                f"PostgreSQL cluster in {self.data_dir} has no port yet: call start() first"
            )
        return self._port

    def dsn(self, database: str = "postgres") -> str:
        return f"postgresql://{quote(self.user, safe='')}@{_HOST}:{self.port}/" + quote(
            database, safe=""
        )

    @property
    def pid(self) -> int | None:
        """Pid of the live postmaster of this cluster, or None."""
        pid = read_pid_file(self.real_data_dir / "postmaster.pid")
        if pid is None or not pid_alive(pid):
            return None
        argv = pid_cmdline(pid)
        if argv and "postgres" not in Path(argv[0]).name:
            return None  # stale postmaster.pid, pid reused by an unrelated process
        return pid

    def is_running(self) -> bool:
        """True if the postmaster from ``postmaster.pid`` is alive and accepts TCP on its port."""
        if self.pid is None:
            return False
        port = self._running_port()
        return port is not None and port_is_open(_HOST, port)

    def start(self, timeout: float = 60.0) -> None:
        """initdb (first time only) and start the server; no-op if it already runs."""
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        with _file_lock(self.data_dir.parent / f".{self.data_dir.name}.lock"):
            if self.pid is not None:
                # A postmaster already serves this data dir (maybe still starting up).
                self._wait_for_running(timeout)
                return
            initdb, pg_ctl = _server_bins()
            account = _pg_account() if _is_root() else None
            if account is not None and shutil.which("runuser") is None:
                raise LocalInfraError("runuser not found (util-linux): needed to run PostgreSQL")
            self._choose_port()  # before initdb: a busy port fails fast
            real = self._prepare_data_dir(account)
            if not (real / "PG_VERSION").is_file():
                self._initdb(initdb, real, account)
            self._pg_ctl_start(pg_ctl, real, account, timeout)

    def stop(self, timeout: float = 30.0) -> None:
        """``pg_ctl stop -m fast`` (immediate, then SIGKILL, as fallbacks). Idempotent."""
        if not self.data_dir.exists():
            return
        pid = self.pid
        if pid is None:
            return
        real = self.real_data_dir
        _, pg_ctl = _server_bins()
        account = _pg_account() if _is_root() else None
        for mode, wait in (("fast", timeout), ("immediate", 10.0)):
            cmd = [str(pg_ctl), "stop", "-D", str(real), "-m", mode, "-w", "-t", str(int(wait))]
            subprocess.run(
                self._as_pg(cmd, account),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=wait + 10,
                check=False,
                cwd="/",
            )
            if wait_pid_gone(pid, 1.0):
                return
        _terminate_postmaster(pid)

    def create_database(self, name: str) -> None:
        """``CREATE DATABASE name`` unless it already exists."""
        dsn = self.dsn("postgres")

        async def _create() -> None:
            conn = await asyncpg.connect(dsn, timeout=10)
            try:
                await conn.execute(f"CREATE DATABASE {_quote_ident(name)}")
            except asyncpg.DuplicateDatabaseError:
                pass
            finally:
                await conn.close()

        try:
            run_coroutine_sync(_create, timeout=60.0)
        except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise LocalInfraError(
                f"could not create database {name!r} via {dsn}: {reason}"
            ) from exc

    def __repr__(self) -> str:
        return f"PostgresCluster(data_dir={str(self.data_dir)!r}, port={self._port})"

    # -- internals -----------------------------------------------------------------------
    def _wait_for_running(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not self.is_running():
            pid = self.pid
            if pid is None:
                raise LocalInfraError(
                    with_log_tail(
                        f"PostgreSQL in {self.data_dir} exited while starting", self.log_file
                    )
                )
            if time.monotonic() >= deadline:
                raise LocalInfraError(
                    with_log_tail(
                        f"PostgreSQL postmaster {pid} of {self.data_dir} runs but does not accept "
                        f"connections on {_HOST}:{self._running_port()}",
                        self.log_file,
                    )
                )
            time.sleep(0.1)
        self._port = self._running_port()

    def _running_port(self) -> int | None:
        """The port from line 4 of postmaster.pid."""
        try:
            lines = (self.real_data_dir / "postmaster.pid").read_text().splitlines()
            return int(lines[3])
        except (OSError, ValueError, IndexError):
            return None

    @staticmethod
    def _as_pg(cmd: list[str], account: pwd.struct_passwd | None) -> list[str]:
        if account is None:
            return cmd
        return ["runuser", "-u", account.pw_name, "--", *cmd]

    def _prepare_data_dir(self, account: pwd.struct_passwd | None) -> Path:
        """Return the real PGDATA path, relocating it (as root) if the postgres user can't reach
        ``data_dir``."""
        data_dir = self.data_dir
        if account is None or _traversable_by(data_dir.parent, account):
            return data_dir.resolve()
        if data_dir.is_symlink():
            real = data_dir.resolve()
            if _traversable_by(real.parent, account):
                return real
            raise LocalInfraError(
                f"{data_dir} points to {real}, which the '{account.pw_name}' OS user cannot reach"
            )
        if data_dir.is_dir() and any(data_dir.iterdir()):
            raise LocalInfraError(
                f"the '{account.pw_name}' OS user cannot reach {data_dir} (a parent directory "
                "lacks o+x); move it or pass a data dir under /var/lib or /tmp"
            )
        digest = hashlib.sha256(str(data_dir).encode()).hexdigest()[:12]
        real = RELOCATE_ROOT / f"{data_dir.name}-{digest}"
        RELOCATE_ROOT.mkdir(parents=True, exist_ok=True)
        for part in (RELOCATE_ROOT, RELOCATE_ROOT.parent):  # our own dirs, e.g. /var/lib/inplace
            part.chmod(part.stat().st_mode | 0o755)
        if not _traversable_by(RELOCATE_ROOT, account):
            raise LocalInfraError(
                f"the '{account.pw_name}' OS user can reach neither {data_dir} nor {RELOCATE_ROOT}"
            )
        if real.exists():
            # Orphan of an earlier link that was deleted: the user threw that cluster away.
            self._kill_orphan(real)
            shutil.rmtree(real)
        if data_dir.is_dir():
            data_dir.rmdir()
        os.symlink(real, data_dir)
        return real

    @staticmethod
    def _kill_orphan(real: Path) -> None:
        pid = read_pid_file(real / "postmaster.pid")
        if pid is not None and pid_alive(pid):
            _terminate_postmaster(pid)

    def _initdb(self, initdb: Path, real: Path, account: pwd.struct_passwd | None) -> None:
        if real.exists() and any(real.iterdir()):
            raise LocalInfraError(
                f"{real} is not empty and holds no PostgreSQL cluster (no PG_VERSION); "
                "remove it or pick another data dir"
            )
        # initdb into a sibling, rename into place when done: a killed initdb leaves no
        # half-made cluster behind that a later start() would mistake for a real one.
        staging = real.with_name(f".{real.name}.initdb")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(mode=0o700)
        if account is not None:
            os.chown(staging, account.pw_uid, account.pw_gid)
        cmd = [
            str(initdb),
            "-D",
            str(staging),
            "-A",
            "trust",
            "-U",
            self.user,
            "-E",
            "UTF8",
            "--locale=C",
            "--no-instructions",
        ]
        if not self.fsync:
            cmd.append("--no-sync")  # throwaway cluster: don't fsync what initdb writes
        try:
            proc = subprocess.run(
                self._as_pg(cmd, account),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
                cwd="/",
            )
        except subprocess.TimeoutExpired as exc:
            shutil.rmtree(staging, ignore_errors=True)
            raise LocalInfraError(f"initdb of {real} did not finish within 300s") from exc
        if proc.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            output = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-20:])
            raise LocalInfraError(f"initdb of {real} failed (exit {proc.returncode})\n{output}")
        if real.is_dir():
            real.rmdir()
        os.rename(staging, real)

    def _choose_port(self) -> None:
        """The explicit port wins, then the remembered one, then a fresh free one."""
        port = self._requested_port
        if port is None:
            stored = read_json(self.state_file).get("port")
            port = stored if isinstance(stored, int) else None
        if port is None:
            port = free_port(_HOST)
        if not port_is_free(_HOST, port):
            raise LocalInfraError(
                f"PostgreSQL port {_HOST}:{port} is in use by another process: "
                f"free it or pass another port (ports are kept in {self.state_file})"
            )
        self._port = port
        write_json_atomic(self.state_file, {"port": port})

    def _server_options(self, real: Path) -> str:
        port = self.port
        socket_dir = str(real)
        options = [f"-p {port}", "-c listen_addresses=127.0.0.1", "-c max_connections=200"]
        if len(f"{socket_dir}/.s.PGSQL.{port}.lock") <= _MAX_SOCKET_PATH:
            options.append(f"-k {shlex.quote(socket_dir)}")
        else:
            options.append("-c unix_socket_directories=''")  # TCP only
        if not self.fsync:
            options += ["-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off"]
        return " ".join(options)

    def _pg_ctl_start(
        self, pg_ctl: Path, real: Path, account: pwd.struct_passwd | None, timeout: float
    ) -> None:
        cmd = [
            str(pg_ctl),
            "start",
            "-w",
            "-t",
            str(max(1, int(timeout))),
            "-D",
            str(real),
            "-o",
            self._server_options(real),
        ]
        # No "-l": pg_ctl and the postmaster write to our stdout, which is the log file opened
        # here. That works even when the postgres user could not open a file in its directory.
        with self.log_file.open("ab") as log:
            stamp = time.strftime("%Y-%m-%d %H:%M:%S")
            log.write(f"\n=== inplace: starting PostgreSQL at {stamp} ===\n".encode())
            log.flush()
            try:
                proc = subprocess.run(
                    self._as_pg(cmd, account),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    timeout=timeout + 15,
                    check=False,
                    cwd="/",
                    start_new_session=True,
                )
            except subprocess.TimeoutExpired as exc:
                self.stop(timeout=10)
                raise LocalInfraError(
                    with_log_tail(f"pg_ctl start of {real} hung for {timeout:.0f}s", self.log_file)
                ) from exc
        if proc.returncode != 0 or not self.is_running():
            self.stop(timeout=10)
            raise LocalInfraError(
                with_log_tail(
                    f"PostgreSQL in {real} did not start on {_HOST}:{self.port} "
                    f"(pg_ctl exit {proc.returncode})",
                    self.log_file,
                )
            )


def _terminate_postmaster(pid: int) -> None:
    """SIGQUIT (immediate shutdown: it takes its backends down too), then SIGKILL."""
    for sig, wait in ((signal.SIGQUIT, 10.0), (signal.SIGKILL, 10.0)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
        if wait_pid_gone(pid, wait):
            return
    raise LocalInfraError(f"PostgreSQL postmaster {pid} did not exit")


def _quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
