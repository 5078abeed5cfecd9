"""The hotplug role: detects node capacity changes and publishes them (KEP-3953, issue 7).

It follows the `nodes` topic into a read model and publishes NodeCapacityChanged (old and new
capacity and allocatable; initialCapacity stays as registered) plus a Normal NodeResized Event
on the Node. Changes come from:

- the HTTP API, `POST /api/v1/nodes/{name}/resize` (simulated nodes; `inplace node resize`);
- machine mode (INPLACE_HOTPLUG_MACHINE_MODE=true): this machine's CPUs, memory, swap and
  hugepages, polled for one node (INPLACE_HOTPLUG_MACHINE_NODE).

The kubelet reacts (swap limits, OOM score adj, re-admission, evictions): services never
import each other, the log connects them.
"""

from __future__ import annotations

from inplace.core.bus.producer import EventProducer
from inplace.core.logwriter import LogWriter
from inplace.core.readmodel import ReadModel
from inplace.core.service import Loop, RoleServer
from inplace.core.settings import Settings
from schemas.events import NODES
from services.hotplug.api import ResizeApi
from services.hotplug.config import HotplugConfig
from services.hotplug.poller import MachinePoller
from services.hotplug.resizer import Resizer

ROLE = "hotplug"
INPUT_TOPICS = (NODES,)


async def run(settings: Settings, *, host: str, port: int) -> None:
    config = HotplugConfig()
    # Its state is the objects (indexes are seeded from them): start from the projection.
    model = ReadModel(settings, role=ROLE, topics=INPUT_TOPICS, window=0, snapshot=True)
    producer = EventProducer(
        settings.kafka_bootstrap, client_id=ROLE, topic_prefix=settings.topic_prefix
    )
    await producer.start()
    resizer = Resizer(model, LogWriter(producer, model, ROLE), enabled=config.node_resource_resize)
    api = ResizeApi(resizer, model.ready.is_set)
    loops: dict[str, Loop] = {"read-model": model.run}
    if config.machine_mode:
        loops["machine"] = MachinePoller(config, resizer, model).run
    server = RoleServer(
        ROLE,
        settings,
        host=host,
        port=port,
        routes=api.routes(),
        ready=model.ready.is_set,
        callers=frozenset({"system:masters"}),  # changing a node's capacity is an admin's act
    )
    try:
        await server.run(loops)
    finally:
        await producer.stop()
