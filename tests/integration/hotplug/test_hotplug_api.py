"""The hotplug role against the real broker: the resize API, `inplace node resize`, machine mode.

Every test starts `inplace serve hotplug` as a child process, registers nodes by publishing
NodeRegistered, and checks what lands on the log (NodeCapacityChanged with old/new capacity
and allocatable, a NodeResized Event on the Node; initialCapacity untouched by the reducer).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import httpx
import pytest

from inplace.core.bus.consumer import LogReader
from inplace.core.bus.producer import EventProducer
from inplace.core.projection.state import ClusterState
from inplace.core.settings import Settings
from inplace.localinfra import free_port
from schemas import events as ev
from schemas.envelope import Envelope
from schemas.k8s import Node
from tests.integration.conftest import RoleProcess, inplace
from tests.integration.hotplug.conftest import payloads_of, post_when_known, strs

pytestmark = pytest.mark.integration


def node(name: str, capacity: dict[str, str], allocatable: dict[str, str]) -> Node:
    return Node.model_validate(
        {
            "metadata": {"name": name, "uid": f"uid-{name}"},
            "status": {"capacity": capacity, "allocatable": allocatable},
        }
    )


async def register(producer: EventProducer, n: Node) -> None:
    name = n.metadata.name or ""
    await producer.publish(Envelope.wrap(ev.NodeRegistered(name=name, node=n), producer="test"))


async def fold(settings: Settings) -> ClusterState:
    state = ClusterState()
    async with LogReader(settings.kafka_bootstrap) as reader:
        tps = await reader.partitions([settings.topic(ev.NODES), settings.topic(ev.K8S_EVENTS)])
        async for batch in reader.read({}, await reader.end_offsets(tps)):
            for record in batch.records:
                state.apply(record)
    return state


async def test_resize_publishes_capacity_change_and_node_event(
    settings: Settings, producer: EventProducer, hotplug: RoleProcess
) -> None:
    await register(
        producer,
        node(
            "node-a",
            {"cpu": "8", "memory": "32Gi", "pods": "110"},
            {"cpu": "7500m", "memory": "31Gi", "pods": "110"},
        ),
    )
    response = await post_when_known(
        hotplug.url, "node-a", {"cpu": "16", "memory": "64Gi", "swap": "8Gi"}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["changed"] is True
    assert body["oldCapacity"] == {"cpu": "8", "memory": "32Gi", "pods": "110"}
    assert body["newCapacity"] == {"cpu": "16", "memory": "64Gi", "pods": "110", "swap": "8Gi"}
    assert body["newAllocatable"] == {
        "cpu": "15500m",
        "memory": "63Gi",
        "pods": "110",
        "swap": "8Gi",
    }
    assert body["initialCapacity"] == {"cpu": "8", "memory": "32Gi", "pods": "110"}

    [changed] = await payloads_of(settings, ev.NodeCapacityChanged, ev.NODES)
    assert changed.name == "node-a"
    assert strs(changed.old_capacity) == {"cpu": "8", "memory": "32Gi", "pods": "110"}
    assert strs(changed.new_capacity) == body["newCapacity"]
    assert strs(changed.old_allocatable) == {"cpu": "7500m", "memory": "31Gi", "pods": "110"}
    assert strs(changed.new_allocatable) == body["newAllocatable"]

    [recorded] = await payloads_of(settings, ev.KubeEventRecorded, ev.K8S_EVENTS)
    event = recorded.event
    assert (event.type, event.reason) == ("Normal", "NodeResized")
    assert (event.involved_object.kind, event.involved_object.name) == ("Node", "node-a")
    assert event.message == (
        "Node node-a resized (api): capacity cpu 8->16, memory 32Gi->64Gi, swap 0->8Gi; "
        "allocatable cpu 7500m->15500m, memory 31Gi->63Gi, swap 0->8Gi"
    )

    # The same resize again is a no-op: 200, changed false, nothing more on the log.
    again = await post_when_known(hotplug.url, "node-a", {"memory": "68719476736"})
    assert again.status_code == 200 and again.json()["changed"] is False

    # A downsize starts from the new capacity (read-your-writes), and initialCapacity stays.
    down = await post_when_known(hotplug.url, "node-a", {"memory": "16Gi"})
    assert down.status_code == 200
    assert down.json()["newAllocatable"]["memory"] == "15Gi"
    changes = await payloads_of(settings, ev.NodeCapacityChanged, ev.NODES)
    assert len(changes) == 2
    assert str(changes[1].old_capacity["memory"]) == "64Gi"
    state = await fold(settings)
    status = state.nodes["node-a"].status
    assert strs(status.capacity or {})["memory"] == "16Gi"
    assert strs(status.allocatable or {})["memory"] == "15Gi"
    assert strs(status.initial_capacity or {}) == {"cpu": "8", "memory": "32Gi", "pods": "110"}
    assert len([e for e in state.events.values() if e.reason == "NodeResized"]) == 2

    async with httpx.AsyncClient(timeout=10) as http:
        metrics = (await http.get(f"{hotplug.url}/metrics")).text
    assert 'inplace_hotplug_resizes_total{outcome="changed",source="api"} 2.0' in metrics
    assert 'inplace_hotplug_resizes_total{outcome="unchanged",source="api"} 1.0' in metrics


async def test_with_the_feature_gate_off_a_resize_is_refused_and_said_once(
    settings: Settings, producer: EventProducer, tmp_path: Path
) -> None:
    gated = RoleProcess(
        "hotplug", settings, tmp_path / "gated.log", INPLACE_HOTPLUG_NODE_RESOURCE_RESIZE="false"
    )
    gated.start()
    try:
        await gated.ready()
        await register(producer, node("node-g", {"cpu": "8"}, {"cpu": "8"}))
        for _ in range(2):
            refused = await post_when_known(gated.url, "node-g", {"cpu": "16"})
            assert refused.status_code == 409
            assert refused.json()["message"] == (
                "Node node-g capacity change ignored (api): the InPlaceNodeResourceResize "
                "feature gate is off (capacity cpu 8->16; allocatable cpu 8->16)"
            )
        assert await payloads_of(settings, ev.NodeCapacityChanged, ev.NODES) == []
        [said] = await payloads_of(settings, ev.KubeEventRecorded, ev.K8S_EVENTS)
        assert (said.event.type, said.event.reason) == ("Warning", "NodeResizeIgnored")
        assert "feature gate is off" in gated.log.read_text()
    finally:
        gated.stop()


async def test_unknown_node_and_bad_input_are_status_errors(
    settings: Settings, producer: EventProducer, hotplug: RoleProcess
) -> None:
    await register(
        producer, node("node-b", {"cpu": "4", "memory": "8Gi"}, {"cpu": "4", "memory": "7Gi"})
    )
    assert (await post_when_known(hotplug.url, "node-b", {"cpu": "4"})).status_code == 200

    async with httpx.AsyncClient(base_url=hotplug.url, timeout=30) as http:
        missing = await http.post("/api/v1/nodes/ghost/resize", json={"cpu": "4"})
        assert missing.status_code == 404
        assert missing.json() == {
            "apiVersion": "v1",
            "kind": "Status",
            "metadata": {},
            "status": "Failure",
            "message": 'nodes "ghost" not found',
            "reason": "NotFound",
            "details": {"name": "ghost", "kind": "nodes"},
            "code": 404,
        }

        not_json = await http.post(
            "/api/v1/nodes/node-b/resize",
            content=b"cpu=4",
            headers={"content-type": "application/json"},
        )
        assert not_json.status_code == 400
        assert not_json.json()["reason"] == "BadRequest"
        assert not_json.json()["message"].startswith("the request body is not JSON")

        unknown = await http.post("/api/v1/nodes/node-b/resize", json={"pods": "200"})
        assert (unknown.status_code, unknown.json()["reason"]) == (400, "BadRequest")
        assert 'unknown field "pods"' in unknown.json()["message"]

        for body, field, text in (
            ({"memory": "0"}, "memory", 'Invalid value: "0": must be greater than zero'),
            ({"cpu": "-2"}, "cpu", 'Invalid value: "-2": must be greater than zero'),
            ({"cpu": "1.2.3"}, "cpu", "quantities must match the regular expression"),
            ({"memory": "1Gi"}, "memory", "must be greater than the 1Gi reserved for the system"),
        ):
            bad = await http.post("/api/v1/nodes/node-b/resize", json=body)
            assert bad.status_code == 422, (body, bad.text)
            status = bad.json()
            assert (status["kind"], status["reason"], status["code"]) == ("Status", "Invalid", 422)
            assert status["message"].startswith(f'Node "node-b" is invalid: {field}: ')
            [cause] = status["details"]["causes"]
            assert cause["field"] == field and cause["reason"] == "FieldValueInvalid"
            assert text in cause["message"]
            assert status["details"]["name"] == "node-b" and status["details"]["kind"] == "Node"

    # Nothing of that reached the log: node-b's capacity never changed.
    assert await payloads_of(settings, ev.NodeCapacityChanged, ev.NODES, within=0) == []


async def test_node_resize_cli(
    settings: Settings, producer: EventProducer, hotplug: RoleProcess
) -> None:
    await register(
        producer, node("node-c", {"cpu": "8", "memory": "32Gi"}, {"cpu": "8", "memory": "31Gi"})
    )
    assert (await post_when_known(hotplug.url, "node-c", {"cpu": "8"})).status_code == 200

    done = await asyncio.to_thread(
        inplace,
        settings,
        "node",
        "resize",
        "node-c",
        "--cpu",
        "16",
        "--memory",
        "64Gi",
        "--swap",
        "8Gi",
        INPLACE_HOTPLUG_URL=hotplug.url,
    )
    assert done.returncode == 0, done.stderr
    lines = [ln.split() for ln in done.stdout.splitlines()]
    assert lines[0] == ["node/node-c", "resized"]
    assert lines[1] == ["RESOURCE", "CAPACITY", "ALLOCATABLE"]
    assert lines[2:] == [
        ["cpu", "8", "->", "16", "8", "->", "16"],
        ["memory", "32Gi", "->", "64Gi", "31Gi", "->", "63Gi"],
        ["swap", "0", "->", "8Gi", "0", "->", "8Gi"],
    ]
    [changed] = await payloads_of(settings, ev.NodeCapacityChanged, ev.NODES)
    assert str(changed.new_capacity["cpu"]) == "16"

    same = await asyncio.to_thread(
        inplace, settings, "node", "resize", "node-c", "--cpu", "16", "--server", hotplug.url
    )
    assert same.returncode == 0 and same.stdout.startswith("node/node-c unchanged")
    as_json = await asyncio.to_thread(
        inplace, settings, "node", "resize", "node-c", "--cpu", "16", "-o", "json",
        "--server", hotplug.url,
    )  # fmt: skip
    answer = json.loads(as_json.stdout)
    assert (answer["changed"], answer["newCapacity"]["cpu"]) == (False, "16")

    def one_line_error(done: subprocess.CompletedProcess[str], text: str) -> None:
        assert done.returncode == 1, done.stdout
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
        assert done.stderr.startswith("inplace: error: ") and text in done.stderr, done.stderr

    cases: list[tuple[tuple[str, ...], str]] = [
        (("ghost", "--cpu", "4"), 'nodes "ghost" not found'),
        (("node-c", "--memory", "64Gb"), "quantities must match the regular expression"),
        (("node-c", "--cpu", "0"), 'cpu: Invalid value: "0": must be greater than zero'),
        (("node-c", "--memory=-1Gi"), 'memory: Invalid value: "-1Gi": must be greater than zero'),
        (("node-c", "--swap", "-1"), 'swap: Invalid value: "-1": must be greater than or equal'),
        (("node-c", "--memory", "1Gi"), "must be greater than the 1Gi reserved for the system"),
        (("node-c",), "nothing to resize"),
    ]
    for args, text in cases:
        one_line_error(
            await asyncio.to_thread(
                inplace, settings, "node", "resize", *args, "--server", hotplug.url
            ),
            text,
        )
    down = free_port()  # nothing listens there
    one_line_error(
        await asyncio.to_thread(
            inplace,
            settings,
            "node",
            "resize",
            "node-c",
            "--cpu",
            "4",
            INPLACE_HOTPLUG_URL=f"http://127.0.0.1:{down}",
        ),
        f"cannot reach the hotplug service at http://127.0.0.1:{down}",
    )


async def test_machine_mode_publishes_debounced_changes(
    settings: Settings, producer: EventProducer, tmp_path: Path
) -> None:
    online, meminfo = tmp_path / "online", tmp_path / "meminfo"
    online.write_text("0-3\n")
    meminfo.write_text("MemTotal:       16777216 kB\nSwapTotal:             0 kB\n")
    await register(
        producer, node("machine", {"cpu": "4", "memory": "16Gi"}, {"cpu": "4", "memory": "15Gi"})
    )
    proc = RoleProcess(
        "hotplug",
        settings,
        tmp_path / "hotplug.log",
        INPLACE_HOTPLUG_MACHINE_MODE="true",
        INPLACE_HOTPLUG_MACHINE_NODE="machine",
        INPLACE_HOTPLUG_POLL_INTERVAL="0.1",
        INPLACE_HOTPLUG_DEBOUNCE_POLLS="3",
        INPLACE_HOTPLUG_CPU_ONLINE_PATH=str(online),
        INPLACE_HOTPLUG_MEMINFO_PATH=str(meminfo),
    )
    proc.start()
    try:
        await proc.ready()
        await asyncio.sleep(1.0)  # many polls of a machine that matches the node: no event
        assert await payloads_of(settings, ev.NodeCapacityChanged, ev.NODES, within=0) == []

        # CPU and memory hotplug plus a swap device: one event, once the reading is stable.
        online.write_text("0-7\n")
        meminfo.write_text("MemTotal:       33554432 kB\nSwapTotal:       4194304 kB\n")
        [changed] = await payloads_of(settings, ev.NodeCapacityChanged, ev.NODES)
        assert strs(changed.new_capacity) == {"cpu": "8", "memory": "32Gi", "swap": "4Gi"}
        assert strs(changed.new_allocatable) == {"cpu": "8", "memory": "31Gi", "swap": "4Gi"}
        await asyncio.sleep(1.0)
        assert len(await payloads_of(settings, ev.NodeCapacityChanged, ev.NODES)) == 1
    finally:
        assert proc.stop() == 0
