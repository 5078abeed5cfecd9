"""Chaos with several processes per role, on a fake /proc whose entries point at real `sleep`
children of the test (the only processes it ever kills): processes are told apart by role and
port, kills rotate over roles and over the replicas of a role, a role of several is only hit
while all of its replicas serve, and the recovery wait names every process still missing."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from inplace.load.chaos import Chaos, Kill, Proc, chaos_check, recovery_check

BOOTSTRAP = "127.0.0.1:19092"
PREFIX = "t-"


class FakeCluster:
    """Role processes as `sleep` children, each with a fake /proc entry; `restart` does what a
    supervisor does: a new process for the same role and port."""

    def __init__(self, proc: Path) -> None:
        self.proc = proc
        self.children: dict[Proc, subprocess.Popen[bytes]] = {}
        self.unready: set[int] = set()  # ports whose /readyz answers 503

    def start(self, role: str, port: int) -> int:
        child = subprocess.Popen(["sleep", "300"])
        self.children[Proc(role, port)] = child
        entry = self.proc / str(child.pid)
        entry.mkdir(parents=True)
        argv = ["python3", "-m", "inplace.cli.main", "serve", role, "--port", str(port)]
        (entry / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")
        env = f"INPLACE_KAFKA_BOOTSTRAP={BOOTSTRAP}\0INPLACE_TOPIC_PREFIX={PREFIX}\0"
        (entry / "environ").write_bytes(env.encode())
        return child.pid

    def gone(self, role: str, port: int) -> None:
        """The process died (reaped) and its /proc entry went with it."""
        child = self.children.pop(Proc(role, port))
        child.kill()
        child.wait()
        for part in (self.proc / str(child.pid)).iterdir():
            part.unlink()
        (self.proc / str(child.pid)).rmdir()

    def restart_killed(self) -> None:
        for p, child in list(self.children.items()):
            if child.poll() is not None:
                self.gone(p.role, p.port or 0)
                self.start(p.role, p.port or 0)

    def client(self) -> httpx.AsyncClient:
        def answer(request: httpx.Request) -> httpx.Response:
            return httpx.Response(503 if request.url.port in self.unready else 200)

        return httpx.AsyncClient(transport=httpx.MockTransport(answer))

    def stop(self) -> None:
        for child in self.children.values():
            child.kill()
            child.wait()


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[FakeCluster]:
    fake = FakeCluster(tmp_path / "proc")
    fake.proc.mkdir()
    yield fake
    fake.stop()


def _start_two_of_each(cluster: FakeCluster) -> None:
    for role, port in [
        ("apiserver", 8080),
        ("apiserver", 8090),
        ("kubelet", 8083),
        ("kubelet", 8093),
        ("projector", 8085),
    ]:
        cluster.start(role, port)


def _chaos(cluster: FakeCluster, **kwargs: object) -> Chaos:
    return Chaos(BOOTSTRAP, PREFIX, proc=cluster.proc, **kwargs)  # type: ignore[arg-type]


def test_processes_are_told_apart_by_role_and_port(cluster: FakeCluster) -> None:
    _start_two_of_each(cluster)
    chaos = _chaos(cluster)
    assert chaos.discover() == {
        Proc("apiserver", 8080): 1,
        Proc("apiserver", 8090): 1,
        Proc("kubelet", 8083): 1,
        Proc("kubelet", 8093): 1,
        Proc("projector", 8085): 1,
    }
    assert chaos.role_names == ["apiserver", "kubelet", "projector"]
    assert str(Proc("kubelet", 8093)) == "kubelet:8093" and str(Proc("quota", None)) == "quota"
    only = _chaos(cluster, roles=("kubelet",))
    assert list(only.discover()) == [Proc("kubelet", 8083), Proc("kubelet", 8093)]


async def test_kills_rotate_over_roles_and_over_the_replicas_of_a_role(
    cluster: FakeCluster,
) -> None:
    _start_two_of_each(cluster)
    chaos = _chaos(cluster, seed=7)
    chaos.discover()
    async with cluster.client() as client:
        for _ in range(6):
            kill = await chaos.kill_one(client)
            assert kill is not None
            assert cluster.children[kill.proc].wait(timeout=5) == -9  # really SIGKILLed
            cluster.restart_killed()
    roles = [k.role for k in chaos.kills]
    # Each round of three kills hits every role once; the second round takes the other replica.
    assert sorted(roles[:3]) == sorted(roles[3:]) == ["apiserver", "kubelet", "projector"]
    for role, ports in (("apiserver", {8080, 8090}), ("kubelet", {8083, 8093})):
        assert {k.port for k in chaos.kills if k.role == role} == ports
    assert all(k.pid > 0 for k in chaos.kills)
    check = chaos_check(chaos)
    assert check.ok and check.detail == (
        "6 SIGKILLs: apiserver x2 (2 of 2 processes), kubelet x2 (2 of 2 processes), projector x2"
    )


async def test_a_role_of_several_is_hit_only_while_all_its_replicas_serve(
    cluster: FakeCluster,
) -> None:
    _start_two_of_each(cluster)
    chaos = _chaos(cluster, roles=("apiserver", "kubelet"))
    chaos.discover()
    cluster.gone("kubelet", 8093)  # down: the other kubelet must keep serving
    cluster.unready.add(8090)  # an apiserver replica still starting
    async with cluster.client() as client:
        assert await chaos.kill_one(client) is None  # nothing may be killed now
        assert chaos.kills == []
        cluster.unready.clear()
        kill = await chaos.kill_one(client)
        assert kill is not None and kill.role == "apiserver"
        cluster.children[kill.proc].wait(timeout=5)
        # One apiserver down now, one kubelet too: neither role may lose its last replica.
        assert await chaos.kill_one(client) is None
        cluster.restart_killed()
        cluster.start("kubelet", 8093)
        again = await chaos.kill_one(client)
    assert again is not None and again.role == "kubelet"  # the role killed least goes first


async def test_recovery_waits_for_every_process_seen_at_the_start(cluster: FakeCluster) -> None:
    _start_two_of_each(cluster)
    chaos = _chaos(cluster)
    chaos.discover()
    assert recovery_check(chaos).detail == "not waited for"
    cluster.gone("kubelet", 8093)
    cluster.unready.add(8080)
    async with cluster.client() as client:
        # The other kubelet and apiserver run and answer: that is not enough.
        assert await chaos.wait_recovered(0, client=client) == ["kubelet:8093", "apiserver:8080"]
        failed = recovery_check(chaos)
        assert not failed.ok and "kubelet:8093, apiserver:8080" in failed.detail
        cluster.start("kubelet", 8093)  # restarted: a new pid, the same port
        cluster.unready.clear()
        assert await chaos.wait_recovered(5, client=client) == []
    check = recovery_check(chaos)
    assert check.ok and check.detail.startswith("5 ready: apiserver:8080, apiserver:8090")


def test_kills_keep_their_port_and_a_lone_role_reads_as_before() -> None:
    chaos = Chaos(BOOTSTRAP, PREFIX)
    chaos.expected = {Proc("kubelet", 8083): 1, Proc("kubelet", 8093): 1, Proc("quota", 8084): 1}
    chaos.kills += [Kill(1.0, "kubelet", 10, 8093), Kill(2.0, "quota", 11, 8084)]
    assert chaos.kills[0].proc == Proc("kubelet", 8093)
    assert chaos_check(chaos).detail == "2 SIGKILLs: kubelet x1 (1 of 2 processes), quota x1"
