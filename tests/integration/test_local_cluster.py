"""`inplace up` from nothing (two apiserver replicas, two kubelets, two schedulers): every role
healthy, then Ctrl-C leaves no process behind."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import time
from pathlib import Path

import httpx

from inplace.core.settings import DEFAULT_PORTS
from inplace.localinfra import PostgresCluster
from inplace.localinfra.ports import pid_alive, pid_cmdline
from tests.conftest import make_tmp_dir

REPO = Path(__file__).resolve().parents[2]


def _descendants(pid: int) -> set[int]:
    """Every live process whose parent chain reaches pid (from /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _scrape(home: Path, text: str, label: str, pattern: str) -> list[list[str]]:
    """`pattern`'s matches in the /metrics of each of the two processes `up` printed under
    `label` (e.g. "kubelets   https://…/metrics, https://…/metrics")."""
    urls = re.search(rf"{label} +(\S+)/metrics, (\S+)/metrics", text)
    assert urls is not None, text
    context = ssl.create_default_context(cafile=home / "pki" / "ca.crt")
    with httpx.Client(timeout=5, verify=context) as client:
        return [
            re.findall(pattern, client.get(f"{url}/metrics").text, re.M) for url in urls.groups()
        ]


SCALED = ("--apiservers", "2", "--kubelets", "2", "--schedulers", "2")


def test_up_starts_everything_and_ctrl_c_stops_everything() -> None:
    home = make_tmp_dir("inplace-up-")
    env = {**os.environ, "INPLACE_HOME": str(home), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "inplace.cli.main", "up", *SCALED],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    output: list[str] = []
    spawned: set[int] = set()
    try:
        deadline = time.monotonic() + 240
        assert proc.stdout is not None
        for line in proc.stdout:
            output.append(line)
            if "Ctrl-C stops everything" in line or time.monotonic() > deadline:
                break
        text = "".join(output)
        assert "inplace local cluster is up." in text, text
        roles = dict(re.findall(r"(\w+) (https?://127\.0\.0\.1:\d+)/metrics", text))
        assert set(roles) == set(DEFAULT_PORTS)
        assert roles["apiserver"].startswith("https://"), "the API is TLS by default"
        with httpx.Client(
            timeout=5, verify=ssl.create_default_context(cafile=home / "pki" / "ca.crt")
        ) as client:
            for role, url in roles.items():
                assert client.get(f"{url}/healthz").status_code == 200, role
                metrics = client.get(f"{url}/metrics").text
                assert "inplace_events_consumed_total" in metrics or "python_info" in metrics
            # Without credentials the API answers 401 (health above stays open).
            assert client.get(f"{roles['apiserver']}/api/v1/pods").status_code == 401
        assert (home / "pki" / "kubeconfig").stat().st_mode & 0o777 == 0o600
        # The walkthrough `up` prints works as printed (docs that run never rot).
        walkthrough = text.split("Try a resize from another shell:\n", 1)[1].split("\n\n")[0]
        script = "\n".join(
            ln.strip() for ln in walkthrough.splitlines() if not ln.strip().startswith("(")
        )
        assert f"export KUBECONFIG={home / 'pki' / 'kubeconfig'}" in script
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "HOME": str(home)},  # kubectl's cache stays in the test's home
        )
        assert done.returncode == 0, done.stderr
        # The last command prints the pod as JSON; the ones before print one line each.
        pod = json.loads(done.stdout[done.stdout.index("{") :])
        assert pod["spec"]["containers"][0]["resources"]["limits"]["cpu"] == "200m"
        assert pod["status"].get("resize") in ("Proposed", "InProgress", None)  # may be done
        # Two kubelet processes share the nodes: each node served by exactly one of them.
        served = _scrape(
            home, text, "kubelets", r'^inplace_kubelet_node_owned\{node="([^"]+)"\} 1\.0$'
        )
        assert sorted(served[0] + served[1]) == ["node-0"], served
        # Two schedulers: one leads (it bound web-0), the other stands by.
        leading = _scrape(home, text, "schedulers", r"^inplace_scheduler_leading (\S+)$")
        assert sorted(leading) == [["0.0"], ["1.0"]], leading
        # The second replica serves what went through the first (the same credentials).
        replicas = re.search(r"API replicas (https://\S+), (https://\S+)", text)
        assert replicas is not None and replicas.group(1) == roles["apiserver"], text
        kubeconfig = {
            **os.environ,
            "HOME": str(home),
            "KUBECONFIG": str(home / "pki" / "kubeconfig"),
        }
        for _ in range(50):
            read = subprocess.run(
                ["kubectl", "--server", replicas.group(2), "get", "pod", "web-0", "-o", "json"],
                capture_output=True,
                text=True,
                timeout=30,
                env=kubeconfig,
            )
            if read.returncode == 0:
                break
            time.sleep(0.2)
        assert read.returncode == 0, read.stderr
        assert json.loads(read.stdout)["metadata"]["uid"] == pod["metadata"]["uid"]
        # The kubelet's node as `kubectl get nodes -o wide` shows it: version, OS, runtime.
        nodes = subprocess.run(
            ["kubectl", "get", "nodes", "-o", "wide", "--no-headers"],
            capture_output=True,
            text=True,
            timeout=30,
            env=kubeconfig,
        )
        assert nodes.returncode == 0, nodes.stderr
        cells = nodes.stdout.split()
        assert cells[:2] == ["node-0", "Ready"] and "v1.35.0-inplace" in cells, nodes.stdout
        assert cells[-1] == "inplace-fake://1.35.0", nodes.stdout
        assert cells[5].startswith("fd00:10::"), nodes.stdout  # INTERNAL-IP
        # The printed exports name this cluster, and an `inplace` command that reads
        # INPLACE_API_URL and KUBECONFIG (a small `inplace load`) works with them as printed.
        exports = dict(re.findall(r"export (\w+)=(\S+)", text))
        assert exports["INPLACE_API_URL"] == roles["apiserver"], text
        assert exports["KUBECONFIG"] == str(home / "pki" / "kubeconfig")
        small_load = ("--nodes", "1", "--pods", "2", "--resizes", "2", "--deferred", "0")
        loaded = subprocess.run(
            [sys.executable, "-m", "inplace.cli.main", "load", *small_load, "--infeasible", "0"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=180,
            env={**env, **exports, "COLUMNS": "250"},
        )
        assert loaded.returncode == 0, loaded.stdout + loaded.stderr
        assert "all resizes accounted for" in loaded.stdout, loaded.stdout
        # Roles and the broker are our children; pg_ctl daemonizes the postmaster.
        spawned = _descendants(proc.pid)
        assert len(spawned) >= len(DEFAULT_PORTS) + 3  # + the broker, 2nd replica, 2nd kubelet
        # A cluster that runs: its broker's JIT is the JVM's full tiered one, not C1 only.
        broker = [pid_cmdline(p) for p in spawned if "kafka.Kafka" in pid_cmdline(p)]
        assert len(broker) == 1 and not any("TieredStopAtLevel" in a for a in broker[0])
        postmaster = PostgresCluster(home / "postgres").pid
        assert postmaster is not None
        spawned.add(postmaster)
        # A hard-killed role is restarted by the supervisor.
        api = next(
            p for p in spawned if "serve\x00apiserver" in Path(f"/proc/{p}/cmdline").read_text()
        )
        os.kill(api, signal.SIGKILL)
        for line in proc.stdout:
            output.append(line)
            if "apiserver exited" in line:
                break
    finally:
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=90)
        output.append(rest)
        shutil.rmtree(home, ignore_errors=True)  # ~50 MB a run (the broker's and PG's data)
    assert proc.returncode == 0, "".join(output)
    assert "stopped." in "".join(output)
    left = {p for p in spawned if pid_alive(p)}
    assert not left, f"processes left behind: {left}"
