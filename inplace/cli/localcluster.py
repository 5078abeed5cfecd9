"""`inplace up`: broker, database and every role as supervised processes on loopback."""

from __future__ import annotations

import json
import os
import signal
import ssl
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from inplace.core.security.credentials import Credentials
from inplace.core.settings import DEFAULT_PORTS
from inplace.localinfra import KafkaBroker, LocalInfraError, PostgresCluster, free_port
from inplace.localinfra.ports import kill_process_group, port_is_free

HOST = "127.0.0.1"

TRY_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web-0"},
    "spec": {
        "containers": [
            {
                "name": "app",
                "image": "nginx",
                "resources": {
                    "requests": {"cpu": "100m", "memory": "128Mi"},
                    "limits": {"cpu": "100m", "memory": "128Mi"},
                },
            }
        ]
    },
}
TRY_RESIZE = {
    "spec": {
        "containers": [
            {"name": "app", "resources": {"requests": {"cpu": "200m"}, "limits": {"cpu": "200m"}}}
        ]
    }
}


def _quote(body: dict[str, object]) -> str:
    return "'" + json.dumps(body, separators=(",", ":")) + "'"


def pick_port(preferred: int) -> int:
    return preferred if port_is_free(HOST, preferred) else free_port(HOST)


@dataclass
class Child:
    role: str
    port: int
    log: Path
    proc: subprocess.Popen[bytes] | None = None
    restarts: int = 0
    next_start: float = 0.0
    https: bool = False
    env: dict[str, str] = field(default_factory=dict)  # this process's own settings

    @property
    def url(self) -> str:
        return f"{'https' if self.https else 'http'}://{HOST}:{self.port}"


@dataclass
class LocalCluster:
    home: Path
    kafka_port: int | None = None
    postgres_port: int | None = None
    say: object = print
    # Off only behind `inplace up --insecure-http`: plain HTTP, no authentication, loopback.
    secure: bool = True
    # apiserver replicas: stateless in front of the log, each serves reads not older than the
    # resourceVersion a client brings (README "Several apiservers").
    apiservers: int = 1
    # kubelet processes: one consumer group shares the nodes between them (README "Several
    # kubelets"); each gets its own static member name.
    kubelets: int = 1
    # workload controllers: one consumer group shares the CloneSets (README "Several workload
    # controllers"); each gets its own static member name.
    workloads: int = 1
    # schedulers: one consumer group; the holder of its leader partition binds, the others
    # stand by with a warm cache (README "Scale-out", the scheduler's active/standby).
    schedulers: int = 1
    children: list[Child] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # A cluster that runs: the broker JIT-compiles fully (kafka.py, JIT_OPTIONS).
        self.broker = KafkaBroker(self.home / "kafka", port=self.kafka_port, jit="steady")
        self.database = PostgresCluster(self.home / "postgres", port=self.postgres_port)
        self.credentials = Credentials(self.home / "pki")

    def _url_of(self, role: str) -> str:
        return next(c for c in self.children if c.role == role).url

    @property
    def api_url(self) -> str:
        return self._url_of("apiserver")

    def _security_env(self, api_url: str) -> dict[str, str]:
        """Credentials for the cluster (kept across restarts: an exported kubeconfig stays
        valid), or the explicit plain-HTTP mode."""
        if not self.secure:
            return {"INPLACE_INSECURE_HTTP": "true", "INPLACE_WORKLOAD_APISERVER_URL": api_url}
        self._print("writing credentials (CA, certificates, tokens, kubeconfig) …")
        self.credentials.create(api_url)
        return {
            "INPLACE_PKI_DIR": str(self.credentials.root),
            "INPLACE_WORKLOAD_KUBECONFIG": str(self.credentials.user_kubeconfig("workload")),
            "INPLACE_APISERVER_AUDIT_LOG": str(self.home / "logs" / "audit.log"),
        }

    def _groups(self) -> tuple[tuple[str, int], ...]:
        """The roles whose processes form a consumer group, with how many to run."""
        return (
            ("kubelet", self.kubelets),
            ("workload", self.workloads),
            ("scheduler", self.schedulers),
        )

    def _firsts(self) -> list[Child]:
        """One child per role (the first apiserver stands for its replicas)."""
        seen: dict[str, Child] = {}
        for child in self.children:
            seen.setdefault(child.role, child)
        return list(seen.values())

    def _print(self, text: str) -> None:
        self.say(text)  # type: ignore[operator]

    # --- start ------------------------------------------------------------------------------

    def start(self, timeout: float = 120.0) -> None:
        (self.home / "logs").mkdir(parents=True, exist_ok=True)
        self._print("starting kafka (first run fetches its jars from Maven Central) …")
        self.broker.start()
        self._print(f"  kafka     {self.broker.bootstrap_servers}")
        self._print("starting postgres …")
        self.database.start()
        self.database.create_database("inplace")
        self._print(f"  postgres  {self.database.dsn('inplace')}")
        ports = {role: pick_port(port) for role, port in DEFAULT_PORTS.items()}
        for role, port in ports.items():
            log = self.home / "logs" / f"{role}.log"
            self.children.append(Child(role, port, log, https=self.secure))
        for replica in range(2, self.apiservers + 1):
            log = self.home / "logs" / f"apiserver-{replica}.log"
            self.children.append(Child("apiserver", free_port(HOST), log, https=self.secure))
        for role, count in self._groups():
            for replica in range(2, count + 1):
                log = self.home / "logs" / f"{role}-{replica}.log"
                self.children.append(Child(role, free_port(HOST), log, https=self.secure))
            # Members of one consumer group, each under its own static name.
            group = [c for c in self.children if c.role == role]
            for n, child in enumerate(group, start=1):
                child.env[f"INPLACE_{role.upper()}_INSTANCE"] = f"{role}-{n}"
        self.env = {
            **os.environ,
            "INPLACE_KAFKA_BOOTSTRAP": self.broker.bootstrap_servers,
            "INPLACE_POSTGRES_DSN": self.database.dsn("inplace"),
            "INPLACE_QUOTA_URL": next(c.url for c in self.children if c.role == "quota"),
            "INPLACE_HOST": HOST,
            **self._security_env(self.api_url),
        }
        self._cli("topics")
        self._cli("migrate")
        for child in self.children:
            self._spawn(child)
        self._wait_healthy(timeout)

    def _cli(self, *args: str) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "inplace.cli.main", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if done.returncode != 0:
            raise LocalInfraError(f"inplace {' '.join(args)} failed: {done.stderr.strip()}")

    def _spawn(self, child: Child) -> None:
        log = child.log.open("ab")
        child.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "inplace.cli.main",
                "serve",
                child.role,
                "--port",
                str(child.port),
            ],
            env={**self.env, **child.env},
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # our own shutdown order, not the terminal's SIGINT
        )
        log.close()

    def _wait_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        pending = {f"{c.role} {c.url}": c for c in self.children}
        verify = (
            ssl.create_default_context(cafile=self.credentials.ca_cert) if self.secure else True
        )
        with httpx.Client(timeout=2.0, verify=verify) as client:
            while pending:
                for role, child in list(pending.items()):
                    if child.proc is not None and child.proc.poll() is not None:
                        raise LocalInfraError(f"{role} exited during start; see {child.log}")
                    try:
                        r = client.get(f"{child.url}/readyz")
                        if r.status_code == 200:
                            del pending[role]
                    except httpx.HTTPError:
                        pass
                if time.monotonic() > deadline:
                    raise LocalInfraError(f"not ready after {timeout:.0f}s: {', '.join(pending)}")
                time.sleep(0.2)

    def summary(self) -> str:
        url = self.api_url
        kubeconfig = self.credentials.admin_kubeconfig
        lines = [
            "",
            "inplace local cluster is up.",
            f"  API server   {url}" + ("" if self.secure else "   (plain HTTP, no authentication)"),
            f"  Kafka        {self.broker.bootstrap_servers}",
            f"  PostgreSQL   {self.database.dsn('inplace')}",
            "  roles        " + ", ".join(f"{c.role} {c.url}/metrics" for c in self._firsts()),
            f"  logs         {self.home / 'logs'}",
        ]
        replicas = [c.url for c in self.children if c.role == "apiserver"]
        if len(replicas) > 1:
            lines.append("  API replicas " + ", ".join(replicas))
        for role, _ in self._groups():
            urls = [c.url for c in self.children if c.role == role]
            if len(urls) > 1:
                label = f"{role}s".ljust(12)
                lines.append(f"  {label} " + ", ".join(f"{url}/metrics" for url in urls))
        if self.secure:
            lines += [
                f"  credentials  {self.credentials.root}  (admin kubeconfig, tokens.csv, CA)",
                f"  audit log    {self.home / 'logs' / 'audit.log'}",
            ]
        lines += ["", "Try a resize from another shell:"]
        if self.secure:
            lines.append(f"  export KUBECONFIG={kubeconfig}")
        else:
            lines.append(f"  alias kubectl='kubectl --server {url}'")
        lines += [
            f"  export INPLACE_API_URL={url}",
            f"  export INPLACE_HOTPLUG_URL={self._url_of('hotplug')}   # inplace node resize",
            "  echo " + _quote(TRY_POD) + " | kubectl apply -f -",
            "  kubectl patch pod web-0 --subresource resize -p " + _quote(TRY_RESIZE),
            "  kubectl get pod web-0 -o json",
            "",
            "Inspect the log and the projections:",
            f"  export INPLACE_KAFKA_BOOTSTRAP={self.broker.bootstrap_servers}",
            f"  export INPLACE_POSTGRES_DSN={self.database.dsn('inplace')}",
            "  inplace replay history default/web-0    # the resize, step by step, and who asked",
            "  inplace replay rebuild                  # replay the log, compare checksums",
            "",
            "Ctrl-C stops everything.",
        ]
        return "\n".join(lines)

    # --- supervise and stop -----------------------------------------------------------------

    def supervise(self, stop_flag: list[bool]) -> None:
        """Restart a role that dies, with backoff, until asked to stop."""
        while not stop_flag[0]:
            now = time.monotonic()
            for child in self.children:
                if child.proc is None or child.proc.poll() is None:
                    continue
                if child.next_start == 0.0:
                    child.restarts += 1
                    delay = min(30.0, 0.5 * 2**child.restarts)
                    child.next_start = now + delay
                    self._print(
                        f"{child.role} exited ({child.proc.returncode}); restarting in {delay:.1f}s"
                    )
                elif now >= child.next_start:
                    child.next_start = 0.0
                    self._spawn(child)
            time.sleep(0.2)

    def stop(self) -> None:
        for child in self.children:
            if child.proc is not None and child.proc.poll() is None:
                child.proc.send_signal(signal.SIGTERM)
        for child in self.children:
            if child.proc is None:
                continue
            try:
                child.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                kill_process_group(child.proc.pid, 5.0)
        self.broker.stop()
        self.database.stop()
