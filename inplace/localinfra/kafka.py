"""A real single-node Apache Kafka broker (KRaft, no ZooKeeper, no Docker) for local use.

The broker jars come from Maven Central through ``mvn dependency:copy-dependencies`` and are
cached outside the repository (:func:`default_cache_dir`). :class:`KafkaBroker` owns one data
directory::

    <data_dir>/server.properties   written on every start
    <data_dir>/log4j.properties    written on every start
    <data_dir>/ports.json          {"port": ..., "controller_port": ...}: reused on restart
    <data_dir>/cluster.id          KRaft cluster id used to format the storage
    <data_dir>/kafka-data/         log.dirs (topic partitions + the KRaft metadata log)
    <data_dir>/broker.pid          pid of the broker JVM (also its process group id)
    <data_dir>/broker.log          the JVM's stdout/stderr
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import os
import re
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from aiokafka.admin import AIOKafkaAdminClient
from pydantic import SecretStr

from inplace.core.bus.auth import KafkaAuth
from inplace.localinfra.ports import (
    LocalInfraError,
    ManagedServer,
    free_port,
    kill_process_group,
    pid_alive,
    pid_cmdline,
    port_is_free,
    port_is_open,
    read_json,
    read_pid_file,
    run_coroutine_sync,
    tail_file,
    wait_pid_gone,
    write_json_atomic,
)

__all__ = [
    "KAFKA_VERSION",
    "SLF4J_BINDING",
    "KafkaBroker",
    "LocalInfraError",
    "default_cache_dir",
    "ensure_kafka_jars",
    "find_java",
]

KAFKA_VERSION = "3.9.1"
SCALA_VERSION = "2.13"
# log4j 1.x binding (reload4j) so the broker's own log4j configuration is honoured.
SLF4J_BINDING = ("org.slf4j", "slf4j-reload4j", "1.7.36")
MAVEN_DEPENDENCY_PLUGIN_VERSION = "3.6.1"

_HOST = "127.0.0.1"
# The secure profile's admin principal (a super user; the roles are SCRAM users).
SASL_ADMIN = "admin"
_MARKER = ".complete"
_MVN_TIMEOUT_S = 900.0
_JAVA_HINT = "java not found: install a JDK 17 (apt-get install openjdk-17-jre-headless)"
_MVN_HINT = "mvn not found: install Maven to fetch the Kafka jars (apt-get install maven)"


def default_cache_dir() -> Path:
    """``$INPLACE_CACHE_DIR`` or ``~/.cache/inplace``."""
    env = os.environ.get("INPLACE_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "inplace"


def find_java() -> Path:
    """The ``java`` launcher: ``$JAVA_HOME/bin/java``, else the one on PATH."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("java")
    if not found:
        raise LocalInfraError(_JAVA_HINT)
    return Path(found)


def _find_mvn() -> Path:
    found = shutil.which("mvn")
    if not found:
        raise LocalInfraError(_MVN_HINT)
    return Path(found)


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """Exclusive advisory lock on ``path`` (created if needed), held for the with-block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _pom_xml(version: str) -> str:
    group, artifact, binding_version = SLF4J_BINDING
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0"
         xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
         xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 http://maven.apache.org/xsd/maven-4.0.0.xsd">
  <modelVersion>4.0.0</modelVersion>
  <groupId>inplace.localinfra</groupId>
  <artifactId>kafka-jars</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_{SCALA_VERSION}</artifactId>
      <version>{version}</version>
    </dependency>
    <dependency>
      <groupId>{group}</groupId>
      <artifactId>{artifact}</artifactId>
      <version>{binding_version}</version>
    </dependency>
  </dependencies>
  <build>
    <pluginManagement>
      <plugins>
        <plugin>
          <groupId>org.apache.maven.plugins</groupId>
          <artifactId>maven-dependency-plugin</artifactId>
          <version>{MAVEN_DEPENDENCY_PLUGIN_VERSION}</version>
        </plugin>
      </plugins>
    </pluginManagement>
  </build>
</project>
"""


def ensure_kafka_jars(cache_dir: Path | None = None, version: str = KAFKA_VERSION) -> Path:
    """Return ``<cache_dir>/kafka-<version>/`` holding the broker's jars, downloading if needed.

    Idempotent and safe to call from several processes at once (``flock`` on a lock file next
    to the directory). The jars are fetched into a staging directory which is renamed into
    place only once complete (with a ``.complete`` marker inside), so an interrupted download
    is simply redone next time.
    """
    cache = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    cache = cache.absolute()
    target = cache / f"kafka-{version}"
    if (target / _MARKER).is_file():
        return target
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # e.g. ~/.cache a symlink to nowhere
        raise LocalInfraError(
            f"cannot use {cache} for Kafka's jars: {exc.strerror} "
            "(set INPLACE_CACHE_DIR to a directory you can write)"
        ) from None
    with _file_lock(cache / f".kafka-{version}.lock"):
        if (target / _MARKER).is_file():
            return target  # another process finished the download while we waited
        find_java()  # mvn needs it too; give the clearer message first
        mvn = _find_mvn()
        staging = cache / f".kafka-{version}.partial"
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(target, ignore_errors=True)  # leftover without marker: incomplete
        staging.mkdir(parents=True)
        # The throwaway project lives in the cache too, so a killed run leaves nothing elsewhere.
        project = cache / f".kafka-{version}.pom"
        shutil.rmtree(project, ignore_errors=True)
        project.mkdir()
        try:
            (project / "pom.xml").write_text(_pom_xml(version))
            cmd = [
                str(mvn),
                "-q",
                "-B",
                "dependency:copy-dependencies",
                "-DincludeScope=runtime",
                f"-DoutputDirectory={staging}",
            ]
            try:
                proc = subprocess.run(
                    cmd,
                    cwd=project,
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    text=True,
                    timeout=_MVN_TIMEOUT_S,
                    check=False,
                )
            except subprocess.TimeoutExpired as exc:
                shutil.rmtree(staging, ignore_errors=True)
                raise LocalInfraError(
                    f"mvn did not fetch the Kafka {version} jars within {_MVN_TIMEOUT_S:.0f}s"
                ) from exc
        finally:
            shutil.rmtree(project, ignore_errors=True)
        if proc.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            output = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-30:])
            raise LocalInfraError(
                f"mvn failed (exit {proc.returncode}) fetching the Kafka {version} jars "
                f"from Maven Central\n{output}".rstrip()
            )
        main_jar = staging / f"kafka_{SCALA_VERSION}-{version}.jar"
        if not main_jar.is_file():
            shutil.rmtree(staging, ignore_errors=True)
            raise LocalInfraError(f"mvn finished but {main_jar.name} is missing from its output")
        jars = sorted(p.name for p in staging.glob("*.jar"))
        (staging / _MARKER).write_text("\n".join(jars) + "\n")
        os.rename(staging, target)
        return target


def _new_cluster_id() -> str:
    """A KRaft cluster id, generated like ``org.apache.kafka.common.Uuid.randomUuid()``."""
    while True:
        raw = uuid.uuid4().bytes
        text = base64.urlsafe_b64encode(raw).decode().rstrip("=")
        # Kafka rejects the reserved all-zero / metadata-topic ids and ids starting with '-'.
        if not text.startswith("-") and int.from_bytes(raw, "big") > 1:
            return text


def _heap_bytes(heap: str) -> int:
    match = re.fullmatch(r"(\d+)([kKmMgG]?)", heap.strip())
    if not match:
        raise ValueError(f"bad JVM heap size {heap!r} (expected e.g. '512m' or '1g')")
    scale = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[match.group(2).lower()]
    return int(match.group(1)) * scale


_LOG4J_PROPERTIES = """\
log4j.rootLogger=WARN, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.server.KafkaRaftServer=INFO
log4j.logger.kafka.Kafka$=INFO
"""


Jit = Literal["quick", "steady"]  # KafkaBroker.JIT_OPTIONS


class KafkaBroker(ManagedServer):
    """One single-node KRaft Kafka broker process bound to 127.0.0.1."""

    PID_FILE = "broker.pid"
    LOG_FILE = "broker.log"
    PORTS_FILE = "ports.json"
    CLUSTER_ID_FILE = "cluster.id"
    LOG_DIRS = "kafka-data"
    #: The JIT, by what the broker is for (`jit`). "quick", C1 only: ready ~1.7 s sooner
    #: (2.5-3.0 s instead of 4.2-4.8 s on 2 cores), for the throwaway brokers of a test run
    #: and the short-lived storage tool. "steady", the JVM's own tiered C1 + C2: it compiles
    #: for its first tens of seconds, then serves more per core, for a cluster that runs
    #: (`inplace up`, the benches' clusters): the closed loop after 6,000 warm-up resizes did
    #: 11% more resizes/s on it, four pairs of four (README, Performance).
    JIT_OPTIONS: dict[Jit, tuple[str, ...]] = {
        "quick": ("-XX:TieredStopAtLevel=1",),
        "steady": (),
    }
    #: One parallel GC thread instead of G1's concurrent ones: with fewer request threads
    #: (`_properties`) the broker took ~10% less of the cores under the closed-loop bench.
    JVM_OPTIONS: tuple[str, ...] = ("-XX:+UseParallelGC", "-XX:ParallelGCThreads=1")

    def __init__(
        self,
        data_dir: Path,
        port: int | None = None,
        controller_port: int | None = None,
        heap: str = "512m",
        jars_dir: Path | None = None,
        extra_properties: dict[str, str] | None = None,
        sasl_admin_password: str | None = None,
        jit: Jit = "quick",
    ) -> None:
        self.data_dir = Path(data_dir).expanduser().absolute()
        self.jit = jit
        # The secure profile's broker: SASL only, an admin over PLAIN, roles over SCRAM, ACLs.
        self.sasl_admin_password = sasl_admin_password
        self.heap = heap
        self.jars_dir = Path(jars_dir).expanduser().absolute() if jars_dir else None
        self.extra_properties: dict[str, str] = dict(extra_properties or {})
        self._requested_port = port
        self._requested_controller_port = controller_port
        self._port: int | None = port
        self._controller_port: int | None = controller_port
        self._proc: subprocess.Popen[bytes] | None = None
        _heap_bytes(heap)  # validate early

    # -- paths ---------------------------------------------------------------------------
    @property
    def pid_file(self) -> Path:
        return self.data_dir / self.PID_FILE

    @property
    def log_file(self) -> Path:
        return self.data_dir / self.LOG_FILE

    @property
    def ports_file(self) -> Path:
        return self.data_dir / self.PORTS_FILE

    @property
    def log_dirs(self) -> Path:
        return self.data_dir / self.LOG_DIRS

    @property
    def server_properties_file(self) -> Path:
        return self.data_dir / "server.properties"

    @property
    def log4j_properties_file(self) -> Path:
        return self.data_dir / "log4j.properties"

    # -- public API ----------------------------------------------------------------------
    @property
    def port(self) -> int:
        """The client (PLAINTEXT) port.

        That of the running broker (ports.json) if there is one, else the one given, else the
        one remembered in ports.json.
        """
        if self._port is None or self._live_pid() is not None:
            stored = read_json(self.ports_file).get("port")
            if isinstance(stored, int):
                self._port = stored
        if self._port is None:
            raise LocalInfraError(
                f"Kafka broker in {self.data_dir} has no port yet: call start() first"
            )
        return self._port

    @property
    def controller_port(self) -> int:
        if self._controller_port is None or self._live_pid() is not None:
            stored = read_json(self.ports_file).get("controller_port")
            if isinstance(stored, int):
                self._controller_port = stored
        if self._controller_port is None:
            raise LocalInfraError(
                f"Kafka broker in {self.data_dir} has no controller port yet: call start() first"
            )
        return self._controller_port

    @property
    def bootstrap_servers(self) -> str:
        return f"{_HOST}:{self.port}"

    @property
    def pid(self) -> int | None:
        """Pid of the live broker JVM of this data dir, or None."""
        return self._live_pid()

    def is_running(self) -> bool:
        """True if the broker process from the pid file is alive and its port answers."""
        if self._live_pid() is None:
            return False
        try:
            port = self.port
        except LocalInfraError:
            return False
        return port_is_open(_HOST, port)

    def start(self, timeout: float = 90.0) -> None:
        """Start the broker (if not already running) and wait until a client can bootstrap."""
        deadline = time.monotonic() + timeout
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with _file_lock(self.data_dir / ".start.lock"):
            pid = self._live_pid()
            if pid is not None:
                # The running broker's ports (ports.json) win over any port asked for now.
                self._load_ports(override=True)
                if self._port is not None and port_is_open(_HOST, self._port):
                    return
                # Alive but not answering yet (another start() in progress): wait for it.
                self._wait_ready(pid, deadline, timeout)
                return
            java = find_java()
            jars = self.jars_dir or ensure_kafka_jars()
            if not any(jars.glob("kafka_*.jar")):
                raise LocalInfraError(f"no Kafka jars in {jars}")
            self._choose_ports()
            self._write_config()
            self._format_storage(java, jars)
            pid = self._launch(java, jars)
            try:
                self._wait_ready(pid, deadline, timeout)
            except BaseException:
                self._kill(pid, 10.0)
                raise

    def stop(self, timeout: float = 20.0) -> None:
        """Stop the broker: SIGTERM its process group, SIGKILL after ``timeout``. Idempotent."""
        pid = self._live_pid()
        if pid is not None:
            self._kill(pid, timeout)
        with contextlib.suppress(FileNotFoundError):
            self.pid_file.unlink()

    def __repr__(self) -> str:
        return f"KafkaBroker(data_dir={str(self.data_dir)!r}, port={self._port})"

    # -- internals -----------------------------------------------------------------------
    def _live_pid(self) -> int | None:
        if self._proc is not None and self._proc.poll() is not None:
            self._proc = None
        pid = read_pid_file(self.pid_file)
        if pid is None or not pid_alive(pid):
            return None
        argv = pid_cmdline(pid)
        if argv and ("kafka.Kafka" not in argv or str(self.server_properties_file) not in argv):
            return None  # stale pid file: the pid now belongs to an unrelated process
        return pid

    def _load_ports(self, override: bool = False) -> None:
        """Take the ports from ports.json where none was asked for (or always, if override)."""
        stored = read_json(self.ports_file)
        if (override or self._requested_port is None) and isinstance(stored.get("port"), int):
            self._port = stored["port"]
        if (override or self._requested_controller_port is None) and isinstance(
            stored.get("controller_port"), int
        ):
            self._controller_port = stored["controller_port"]

    def _choose_ports(self) -> None:
        """Explicit ports win, then the ones in ports.json, then fresh free ones."""
        self._port = self._requested_port
        self._controller_port = self._requested_controller_port
        self._load_ports()
        if self._port is None:
            self._port = free_port(_HOST)
        if self._controller_port is None:
            self._controller_port = free_port(_HOST)
            while self._controller_port == self._port:
                self._controller_port = free_port(_HOST)
        if self._port == self._controller_port:
            raise LocalInfraError(f"Kafka port and controller port are both {self._port}")
        for name, port in (("port", self._port), ("controller port", self._controller_port)):
            if not port_is_free(_HOST, port):
                raise LocalInfraError(
                    f"Kafka {name} {_HOST}:{port} is in use by another process: "
                    f"free it or pass another port (ports are kept in {self.ports_file})"
                )
        write_json_atomic(
            self.ports_file, {"port": self._port, "controller_port": self._controller_port}
        )

    def _properties(self) -> dict[str, str]:
        port, cport = self.port, self.controller_port
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@{_HOST}:{cport}",
            "listeners": f"PLAINTEXT://{_HOST}:{port},CONTROLLER://{_HOST}:{cport}",
            "advertised.listeners": f"PLAINTEXT://{_HOST}:{port}",
            "inter.broker.listener.name": "PLAINTEXT",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.log_dirs),
            "num.partitions": "1",
            "default.replication.factor": "1",
            "min.insync.replicas": "1",
            "auto.create.topics.enable": "false",
            # Keep the log forever by default: topics set their own retention.
            "log.retention.hours": "-1",
            "log.retention.ms": "-1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "1",
            "group.initial.rebalance.delay.ms": "0",
            # One broker on the same few cores as every client: 1 network thread and 2 request
            # handlers (defaults 3 and 8) and fewer background threads switch less.
            "num.network.threads": "1",
            "num.io.threads": "2",
            "background.threads": "2",
        }
        if self.sasl_admin_password is not None:
            props.update(_sasl_properties(port, cport, self.sasl_admin_password))
        props.update(self.extra_properties)
        return props

    def admin_auth(self) -> KafkaAuth:
        """The admin principal of a SASL broker (PLAIN; a super user)."""
        if self.sasl_admin_password is None:
            return KafkaAuth()
        return KafkaAuth(
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN",
            username=SASL_ADMIN,
            password=SecretStr(self.sasl_admin_password),
        )

    def _write_config(self) -> None:
        lines = [f"{key}={_escape_property(value)}" for key, value in self._properties().items()]
        self.server_properties_file.write_text(
            "# written by inplace.localinfra.kafka on every start\n" + "\n".join(lines) + "\n"
        )
        self.log4j_properties_file.write_text(_LOG4J_PROPERTIES)

    def _java_base(self, java: Path, jars: Path, jit: Jit = "quick") -> list[str]:
        return [
            str(java),
            *self.JIT_OPTIONS[jit],
            *self.JVM_OPTIONS,
            "-Djava.awt.headless=true",
            f"-Dlog4j.configuration=file:{self.log4j_properties_file}",
            f"-Dkafka.logs.dir={self.data_dir / 'logs'}",
            "-cp",
            f"{jars}/*",
        ]

    def _format_storage(self, java: Path, jars: Path) -> None:
        if (self.log_dirs / "meta.properties").is_file():
            return
        id_file = self.data_dir / self.CLUSTER_ID_FILE
        cluster_id = id_file.read_text().strip() if id_file.is_file() else ""
        if not cluster_id:
            cluster_id = _new_cluster_id()
            id_file.write_text(cluster_id + "\n")
        cmd = [
            *self._java_base(java, jars),
            "kafka.tools.StorageTool",
            "format",
            "-t",
            cluster_id,
            "-c",
            str(self.server_properties_file),
            "--ignore-formatted",
        ]
        proc = subprocess.run(
            cmd,
            cwd=self.data_dir,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if proc.returncode != 0:
            output = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-20:])
            raise LocalInfraError(
                f"formatting Kafka storage in {self.log_dirs} failed (exit {proc.returncode})\n"
                f"{output}".rstrip()
            )

    def _launch(self, java: Path, jars: Path) -> int:
        heap_bytes = _heap_bytes(self.heap)
        xms = "256m" if heap_bytes >= 256 << 20 else self.heap
        cmd = [
            str(java),
            f"-Xms{xms}",
            f"-Xmx{self.heap}",
            "-XX:+ExitOnOutOfMemoryError",
            *self._java_base(java, jars, self.jit)[1:],
            "kafka.Kafka",
            str(self.server_properties_file),
        ]
        with self.log_file.open("ab") as log:
            stamp = time.strftime("%Y-%m-%d %H:%M:%S")
            log.write(f"\n=== inplace: starting Kafka broker at {stamp} ===\n".encode())
            log.flush()
            self._proc = subprocess.Popen(
                cmd,
                cwd=self.data_dir,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        tmp = self.pid_file.with_name(f".{self.PID_FILE}.tmp")
        tmp.write_text(f"{self._proc.pid}\n")
        os.replace(tmp, self.pid_file)
        return self._proc.pid

    def _alive(self, pid: int) -> bool:
        if self._proc is not None and self._proc.pid == pid:
            return self._proc.poll() is None
        return pid_alive(pid)

    def _wait_ready(self, pid: int, deadline: float, timeout: float) -> None:
        port = self.port
        last_error = ""
        while True:
            if not self._alive(pid):
                code = ""
                if self._proc is not None and self._proc.pid == pid:
                    code = f" with code {self._proc.returncode}"
                raise LocalInfraError(
                    self._startup_failure(f"Kafka broker exited{code} during startup")
                )
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                detail = f" (last probe error: {last_error})" if last_error else ""
                raise LocalInfraError(
                    self._startup_failure(
                        f"Kafka broker on {_HOST}:{port} not ready within {timeout:.0f}s{detail}"
                    )
                )
            if port_is_open(_HOST, port, timeout=0.5):
                try:
                    if run_coroutine_sync(
                        lambda: _probe(self.bootstrap_servers, self.admin_auth()),
                        timeout=min(10.0, remaining),
                    ):
                        return
                    last_error = "cluster metadata lists no broker yet"
                except Exception as exc:  # a failed probe just means: not ready yet
                    last_error = f"{type(exc).__name__}: {exc}".splitlines()[0]
            time.sleep(0.1)

    def _startup_failure(self, summary: str, lines: int = 25) -> str:
        """``summary: <root cause from broker.log>`` plus the log's tail without stack frames."""
        text = tail_file(self.log_file, 2000)
        marker = text.rfind("=== inplace: starting Kafka broker")
        run = text[marker:].splitlines()[1:] if marker >= 0 else text.splitlines()
        cause = _root_cause(run)
        first = f"{summary}: {cause}" if cause else summary
        kept = [line for line in run if line.strip() and not _STACK_FRAME.match(line)]
        if not kept:
            return first
        return f"{first}\n--- last lines of {self.log_file} ---\n" + "\n".join(kept[-lines:])

    def _kill(self, pid: int, timeout: float) -> None:
        kill_process_group(pid, timeout)
        if self._proc is not None and self._proc.pid == pid:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=5)
            self._proc = None
        wait_pid_gone(pid, 1.0)

    def log_tail(self, lines: int = 30) -> str:
        """The last lines of broker.log (for diagnostics)."""
        return tail_file(self.log_file, lines)


def plain_jaas(admin_password: str) -> str:
    """The broker's PLAIN login: the admin's own credential and the only PLAIN user."""
    return (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{SASL_ADMIN}" password="{admin_password}" '
        f'user_{SASL_ADMIN}="{admin_password}";'
    )


def _sasl_properties(port: int, cport: int, admin_password: str) -> dict[str, str]:
    """SASL on the client (and inter-broker) listener: the admin over PLAIN (its password in the
    JAAS line, the broker's only PLAIN user), every role over SCRAM-SHA-512 (credentials made by
    `inplace kafka provision`), and the standard KRaft authorizer, deny unless allowed. The
    controller listener stays PLAINTEXT on loopback; its ANONYMOUS principal is the broker."""
    plain = plain_jaas(admin_password)
    return {
        "listeners": f"SASL_PLAINTEXT://{_HOST}:{port},CONTROLLER://{_HOST}:{cport}",
        "advertised.listeners": f"SASL_PLAINTEXT://{_HOST}:{port}",
        "inter.broker.listener.name": "SASL_PLAINTEXT",
        "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": plain,
        "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": (
            "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        ),
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": f"User:{SASL_ADMIN};User:ANONYMOUS",
        "allow.everyone.if.no.acl.found": "false",
    }


async def _probe(bootstrap_servers: str, auth: KafkaAuth | None = None) -> bool:
    """True once an admin client bootstraps and the metadata names a broker and controller."""
    admin = AIOKafkaAdminClient(
        bootstrap_servers=bootstrap_servers,
        **(auth or KafkaAuth()).aiokafka(),
        client_id="inplace-localinfra-probe",
        request_timeout_ms=5000,
    )
    try:
        await admin.start()
        info: dict[str, Any] = await admin.describe_cluster()
    finally:
        await admin.close()
    brokers = info.get("brokers") or []
    return bool(brokers) and info.get("controller_id", -1) != -1


_STACK_FRAME = re.compile(r"^\s+(at |\.\.\. \d+ more)")
_CAUSED_BY = re.compile(r"^Caused by: ([\w.$]+)(?::\s*(.*))?$")
_LOG_PROBLEM = re.compile(r"\] (ERROR|FATAL) (.*)$")


def _root_cause(lines: list[str]) -> str:
    """The most telling error in a broker log: the innermost non-JDK ``Caused by`` message,
    else the innermost cause, else the last ERROR/FATAL line."""
    causes: list[tuple[str, str]] = []
    for line in lines:
        match = _CAUSED_BY.match(line.strip())
        if match:
            causes.append((match.group(1), (match.group(2) or "").strip() or match.group(1)))
    for cls, message in reversed(causes):
        if not cls.startswith(("java.", "javax.", "sun.", "jdk.")):
            return message
    if causes:
        return causes[-1][1]
    for line in reversed(lines):
        match = _LOG_PROBLEM.search(line)
        if match:
            return match.group(2).strip()
    return ""


def _escape_property(value: str) -> str:
    """Escape a value for a Java .properties file (backslashes and line breaks)."""
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
