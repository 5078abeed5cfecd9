"""Two schedulers, one binding: they form one consumer group and the holder of its leader
partition binds while the other keeps its cache warm (issue 16: placement shares every node's
free room, so it does not split; one decides, as kube-scheduler's leader election has it).
The leader is SIGKILLed; the standby takes the lead after the session timeout and binds what
comes next; every pod is bound exactly once."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from inplace.core.settings import Settings
from schemas import events as ev
from tests.integration.conftest import RoleProcess, call, until
from tests.integration.scheduling.test_scheduler_e2e import (
    NS,
    bound,
    core,
    node_body,
    pod_body,
    pod_records,
)

LEADING = re.compile(r"^inplace_scheduler_leading (\S+)$", re.M)
STANDING_BY = "scheduler standing by"
GROUP_ENV = {"INPLACE_SCHEDULER_GROUP_SESSION_TIMEOUT": "6"}


async def _leading(scheduler: RoleProcess) -> bool:
    async with scheduler.client() as http:
        text = (await http.get(f"{scheduler.url}/metrics")).text
    found = LEADING.search(text)
    return found is not None and float(found.group(1)) == 1.0


async def test_the_standby_takes_the_lead_when_the_leader_is_killed(
    apiserver: RoleProcess, settings: Settings, tmp_path: Path
) -> None:
    first, second = (
        RoleProcess(
            "scheduler",
            settings,
            tmp_path / f"scheduler-{n}.log",
            INPLACE_SCHEDULER_INSTANCE=f"scheduler-{n}",
            **GROUP_ENV,
        )
        for n in (1, 2)
    )
    for proc in (first, second):
        proc.start()
    try:
        for proc in (first, second):
            await proc.ready()

        async def roles() -> tuple[bool, bool]:
            """(first leads, second leads) once one leads and the other was assigned its
            standby share (the group has both members)."""
            a, b = await _leading(first), await _leading(second)
            idle = second if a else first
            return (a, b) if a != b and STANDING_BY in idle.log.read_text() else (False, False)

        which = await until(roles, lambda ab: ab[0] != ab[1], "a leader and a standby")
        leader, standby = (first, second) if which[0] else (second, first)

        v1 = core(apiserver)
        for i in range(2):
            await call(v1.create_node, node_body(f"node-{i}"))
        for i in range(4):
            await call(v1.create_namespaced_pod, NS, pod_body(f"before-{i}", "100m", "64Mi"))

        def listed() -> list[Any]:
            pods: list[Any] = v1.list_namespaced_pod(NS).items
            return pods

        await until(listed, lambda ps: len(ps) == 4 and all(map(bound, ps)), "bound", within=60)
        leader.kill9()
        for i in range(4):
            await call(v1.create_namespaced_pod, NS, pod_body(f"after-{i}", "100m", "64Mi"))
        await until(listed, lambda ps: len(ps) == 8 and all(map(bound, ps)), "bound", within=90)
        assert await _leading(standby)
    finally:
        for proc in (first, second):
            proc.stop()
    log = standby.log.read_text()
    assert STANDING_BY in log and "scheduler leading" in log
    bindings = Counter(
        r.envelope.payload.name
        for r in await pod_records(settings)
        if isinstance(r.envelope.payload, ev.PodBound)
    )
    names = [f"{when}-{i}" for when in ("before", "after") for i in range(4)]
    assert sorted(bindings) == sorted(names)
    assert [n for n, c in bindings.items() if c != 1] == []
