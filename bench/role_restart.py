"""Role restart on a long history (issue 16): time until ready, records read and memory, from
the projection snapshot versus the whole log from offset 0.

Builds the history straight onto the log, streamed (nodes registered, pods created, bound and
Running, then many resize flows each; the Kubernetes Events a cluster holds for its pods within
the event TTL: Scheduled, Pulled, Created, Started and the last resize's two, `--kube-events`),
lets the projector catch up, stops it, then starts each role and times /readyz (and, for the
apiserver, until it serves its Events). Not a test: prints figures. BENCH_LOG_LEVEL=INFO shows
each role's own log lines (when it loaded the snapshot, joined its group, served).

    .venv/bin/python -m bench.role_restart --nodes 1000 --pods 50000 --resizes 20 \
        --roles apiserver,scheduler,quota,hotplug,workload,kubelet --offset0 apiserver

`--kubelets 2 --pin` times two kubelet processes sharing the nodes, each on a core of its own.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import httpx

from inplace.core.bus.producer import EventProducer
from inplace.core.bus.topics import ensure_topics
from inplace.core.settings import Settings
from inplace.localinfra import KafkaBroker, PostgresCluster, free_port
from schemas import events as ev
from schemas.envelope import Envelope
from schemas.k8s import Event, Node, ObjectMeta, Pod, ResourceRequirements
from schemas.kubeevents import event_about, occurrence_name, reference

# Events are written as of the bench's start: within the apiserver's event TTL while it runs.
T0 = datetime.now(UTC)


def _pod(name: str, node: str) -> Pod:
    amounts = {"cpu": "10m", "memory": "16Mi"}
    container = {
        "name": "app",
        "image": "nginx",
        "resources": {"requests": amounts, "limits": amounts},
    }
    return Pod.model_validate(
        {
            "metadata": {"name": name, "namespace": "default", "uid": name},
            "spec": {"containers": [container], "nodeName": node},
        }
    )


def _node(name: str) -> Node:
    amounts = {"cpu": "64", "memory": "256Gi", "pods": "110"}
    return Node.model_validate(
        {
            "metadata": {"name": name, "annotations": {"inplace.io/simulated": "true"}},
            "status": {"capacity": amounts, "allocatable": amounts},
        }
    )


def _kube_events(pod: str, node: str, resized: bool) -> Iterator[Event]:
    """The Events a pod has within the event TTL, as the scheduler and the kubelet word them:
    its start and, `resized`, its last resize."""
    ref = reference("Pod", ObjectMeta(name=pod, namespace="default", uid=pod))
    said = [("default-scheduler", "Scheduled", f"Successfully assigned default/{pod} to {node}")]
    said += [
        ("kubelet", "Pulled", 'Container image "nginx" already present on machine'),
        ("kubelet", "Created", "Created container: app"),
        ("kubelet", "Started", "Started container app"),
    ]
    if resized:
        resources = '{"containers":[{"name":"app","resources":{"limits":{"cpu":"30m","memory":'
        resources += '"16Mi"},"requests":{"cpu":"30m","memory":"16Mi"}}}],"generation":21}'
        said += [
            ("kubelet", "ResizeStarted", f"Pod resize started: {resources}"),
            ("kubelet", "ResizeCompleted", f"Pod resize completed: {resources}"),
        ]
    for n, (component, reason, message) in enumerate(said):
        at = T0 + timedelta(microseconds=n)
        kubelet = component == "kubelet"
        yield event_about(
            ref,
            name=occurrence_name(pod, at),
            namespace="default",
            reason=reason,
            message=message,
            component=component,
            instance=node if kubelet else f"{component}-bench",
            now=at,
            host=node if kubelet else None,
            counted=kubelet,
        )


def _history(nodes: int, pods: int, resizes: int, kube_events: bool) -> Iterator[Envelope]:
    """The events, one at a time (5,000,000 envelopes do not fit a list comfortably)."""
    for n in range(nodes):
        yield Envelope.wrap(
            ev.NodeRegistered(name=f"node-{n}", node=_node(f"node-{n}")), producer="bench"
        )
    for i in range(pods):
        ids = {"namespace": "default", "name": f"p-{i}", "uid": f"p-{i}"}
        node = f"node-{i % nodes}"
        yield Envelope.wrap(ev.PodCreated(**ids, pod=_pod(f"p-{i}", node)), producer="bench")
        yield Envelope.wrap(ev.PodPhaseChanged(**ids, phase="Running"), producer="bench")
    for r in range(resizes):
        # As `kubectl patch --subresource resize` of cpu leaves memory as it was.
        amounts = {"cpu": f"{10 + r}m", "memory": "16Mi"}
        want = ResourceRequirements.model_validate({"requests": amounts, "limits": amounts})
        for i in range(pods):
            ids = {"namespace": "default", "name": f"p-{i}", "uid": f"p-{i}"}
            node = f"node-{i % nodes}"
            steps: list[ev.EventPayload] = [
                ev.ResizeProposed(
                    **ids, containers=[ev.ContainerResources(name="app", resources=want)]
                ),
                ev.Allocated(
                    **ids,
                    node_name=node,
                    containers=[ev.ContainerAllocation(name="app", resources=want)],
                ),
                ev.ResizeStatusChanged(**ids, resize="InProgress"),
                ev.Actuated(
                    **ids,
                    node_name=node,
                    containers=[ev.ContainerActual(name="app", resources=want)],
                ),
                ev.ResizeStatusChanged(**ids, resize=None),
            ]
            for step in steps:
                yield Envelope.wrap(step, producer="bench")
    for i in range(pods if kube_events else 0):
        for event in _kube_events(f"p-{i}", f"node-{i % nodes}", resizes > 0):
            yield Envelope.wrap(ev.KubeEventRecorded(event=event), producer="bench")


async def _publish(settings: Settings, envelopes: Iterator[Envelope]) -> int:
    producer = EventProducer(settings.kafka_bootstrap, client_id="bench")
    await producer.start()
    written = 0
    try:
        while chunk := list(itertools.islice(envelopes, 20_000)):
            await producer.publish_many(chunk)
            written += len(chunk)
    finally:
        await producer.stop()
    return written


async def _wait_projected(dsn: str, events: int) -> None:
    """Until the projector's stored offsets cover the whole history."""
    while True:
        try:
            conn = await asyncpg.connect(dsn)
            try:
                done = await conn.fetchval(
                    "SELECT coalesce(sum(next_offset), 0) FROM projection.consumer_offsets "
                    "WHERE consumer = 'projector'"
                )
            finally:
                await conn.close()
            if done >= events:
                return
        except asyncpg.UndefinedTableError:
            pass  # the projector has not migrated yet
        await asyncio.sleep(1)


def _serve(
    role: str,
    env: dict[str, str],
    port: int,
    profile: Path | None = None,
    cpu: int | None = None,
) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "inplace.cli.main", "serve", role, "--port", str(port)]
    if profile is not None:  # collapsed stacks of the whole start (one line per stack)
        spy = Path(sys.executable).parent / "py-spy"
        command = [str(spy), "record", "-f", "raw", "-r", "200", "-o", str(profile), "--"]
        command += [sys.executable, "-m", "inplace.cli.main", "serve", role, "--port", str(port)]
    if cpu is not None:  # a core of its own (what a machine with more cores would give it)
        command = ["taskset", "-c", str(cpu), *command]
    return subprocess.Popen(command, env=env)


def _ready(url: str, proc: subprocess.Popen[bytes], within: float = 1800) -> float:
    started = time.perf_counter()
    while time.perf_counter() - started < within:
        if proc.poll() is not None:
            raise SystemExit(f"exited with {proc.returncode}")
        try:
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                return time.perf_counter() - started
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise SystemExit("not ready")


def _restored(url: str, within: float = 1800) -> None:
    """Until a kubelet has every pod it re-admitted back in the runtime (it is ready before:
    the checkpoint counts them from its first read)."""
    started = time.perf_counter()
    while time.perf_counter() - started < within:
        text = httpx.get(f"{url}/metrics", timeout=10).text
        if re.search(r"^inplace_kubelet_pods_restoring 0\.0$", text, re.M):
            return
        time.sleep(0.25)  # a scrape costs the kubelet more than a /readyz
    raise SystemExit("pods never all back in the runtime")


def _events_served(url: str) -> None:
    """Until an Events LIST answers: after a start from the projection the apiserver is ready
    before its Events are in (they come on their own, a moment later)."""
    httpx.get(f"{url}/api/v1/events", params={"limit": "1"}, timeout=1800).raise_for_status()


def _consumed(url: str, role: str) -> int:
    text = httpx.get(f"{url}/metrics", timeout=10).text
    found = re.findall(
        rf'^inplace_events_consumed_total\{{role="{role}",[^}}]*\}} (\S+)$', text, re.M
    )
    return int(sum(float(v) for v in found))


def _role_pid(proc: subprocess.Popen[bytes]) -> int:
    """The role's own process (py-spy's child when it is recorded)."""
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
    found = children.read_text().split() if children.exists() else []
    return (
        int(found[0])
        if found and "py-spy" in Path(f"/proc/{proc.pid}/cmdline").read_text()
        else proc.pid
    )


def _rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+)", status).group(1)) / 1024  # type: ignore[union-attr]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--pods", type=int, default=5000)
    parser.add_argument("--resizes", type=int, default=20, help="resize flows per pod")
    parser.add_argument("--roles", default="apiserver", help="comma separated roles to time")
    parser.add_argument(
        "--kube-events",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="each pod's Kubernetes Events (4 of its start, 2 of its last resize) on the log",
    )
    parser.add_argument(
        "--offset0",
        default="apiserver",
        help="roles to time from offset 0 too (apiserver, kubelet: they have the setting)",
    )
    parser.add_argument(
        "--py-spy",
        metavar="DIR",
        type=Path,
        help="record each timed role's start with py-spy into DIR/<role>.txt (collapsed stacks)",
    )
    parser.add_argument(
        "--kubelets",
        type=int,
        default=1,
        help="kubelet processes sharing the nodes (one consumer group); ready when all are",
    )
    parser.add_argument(
        "--pin",
        action="store_true",
        help="pin the i-th process of the timed role to core i (taskset), as on a bigger machine",
    )
    parser.add_argument(
        "--keep",
        metavar="DIR",
        type=Path,
        help="keep the broker's and the database's data in DIR and, when DIR already holds a "
        "history, time the roles on it again without building one",
    )
    args = parser.parse_args()
    # Each role starts with its modules' bytecode cached, as an installed package has it (pip
    # compiles at install): a shell with PYTHONDONTWRITEBYTECODE would otherwise compile the
    # project at every start (~0.5 s of each restart here).
    project = Path(__file__).resolve().parents[1]
    modules = [str(project / d) for d in ("inplace", "services", "schemas")]
    subprocess.run([sys.executable, "-m", "compileall", "-q", "-j", "0", *modules], check=True)
    if args.keep is not None:
        root = args.keep
        root.mkdir(parents=True, exist_ok=True)
    else:
        root = Path(tempfile.mkdtemp(prefix="inplace-bench-restart-", dir="/tmp"))
    root.chmod(0o755)
    built = root / "history.txt"
    broker, database = KafkaBroker(root / "kafka"), PostgresCluster(root / "postgres")
    try:
        broker.start()
        database.start()
        database.create_database("inplace")
        settings = Settings(
            kafka_bootstrap=broker.bootstrap_servers, postgres_dsn=database.dsn("inplace")
        )
        env = {
            **os.environ,
            "INPLACE_KAFKA_BOOTSTRAP": broker.bootstrap_servers,
            "INPLACE_POSTGRES_DSN": database.dsn("inplace"),
            "INPLACE_QUOTA_URL": "",
            "INPLACE_LOG_LEVEL": os.environ.get("BENCH_LOG_LEVEL", "WARNING"),
            "INPLACE_INSECURE_HTTP": "true",
            # The kubelet serves every node of the history (they are simulated nodes).
            "INPLACE_KUBELET_NODES": "0",
        }
        if built.exists():
            print(f"history kept in {root}: {built.read_text().strip()}")
        else:
            asyncio.run(ensure_topics(settings))
            t = time.perf_counter()
            history = _history(args.nodes, args.pods, args.resizes, args.kube_events)
            events = asyncio.run(_publish(settings, history))
            took = time.perf_counter() - t
            print(f"history: {events:,} events, {args.nodes:,} nodes, {args.pods:,} pods, ", end="")
            print(f"written in {took:.1f} s")
            projector = _serve("projector", env, free_port())
            t = time.perf_counter()
            asyncio.run(_wait_projected(database.dsn("inplace"), events))
            projector.terminate()
            projector.wait(timeout=60)
            print(f"projector caught up in {time.perf_counter() - t:.1f} s")
            if args.keep is not None:
                built.write_text(f"{events:,} events, {args.nodes:,} nodes, {args.pods:,} pods\n")
        runs = [(role, "from the projection", "true") for role in args.roles.split(",")]
        runs += [(role, "from offset 0", "false") for role in args.offset0.split(",") if role]
        cores = os.cpu_count() or 1
        for role, label, snapshot in runs:
            flag = f"INPLACE_{role.upper()}_START_FROM_PROJECTION"
            profile = args.py_spy / f"{role}.txt" if args.py_spy else None
            count = args.kubelets if role == "kubelet" else 1
            started = time.perf_counter()
            procs = []
            for i in range(count):
                port = free_port()
                # Each kubelet process a member of the group under its own static name.
                own = {**env, flag: snapshot, "INPLACE_KUBELET_INSTANCE": f"bench-kubelet-{i}"}
                cpu = i % cores if args.pin else None
                procs.append(
                    (
                        _serve(role, own, port, profile if i == 0 else None, cpu),
                        f"http://127.0.0.1:{port}",
                    )
                )
            try:
                for proc, url in procs:
                    _ready(url, proc)
                seconds = time.perf_counter() - started
                restored = ""
                if role == "kubelet":
                    for _, url in procs:
                        _restored(url)
                    back = time.perf_counter() - started
                    restored = f"every pod back in the runtime in {back:.1f} s, "
                if role == "apiserver":
                    _events_served(procs[0][1])
                    restored = f"Events served after {time.perf_counter() - started:.1f} s, "
                read = sum(_consumed(url, role) for _, url in procs)
                rss = [f"{_rss_mb(_role_pid(proc)):.0f}" for proc, _ in procs]
                shape = (
                    f" x{count}" + (" pinned" if args.pin else "") if count > 1 or args.pin else ""
                )
                print(
                    f"{role}{shape} {label}: ready in {seconds:.1f} s, {restored}"
                    f"{read:,} records read, "
                )
                print(f"  RSS {' + '.join(rss)} MB")
            finally:
                for proc, _ in procs:
                    if proc.poll() is None:  # the role itself: py-spy then writes and exits
                        os.kill(_role_pid(proc), signal.SIGTERM)
                for proc, _ in procs:
                    proc.wait(timeout=60)
    finally:
        broker.stop()
        database.stop()
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
