"""The kubelet starts from the projection (issue 16): pods, nodes and its allocation checkpoint
from PostgreSQL, then only the log after the snapshot's offsets; its pods are re-admitted from
the projected checkpoint (no new allocation for any of them) and a resize in the tail is
carried out."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from inplace.core.bus.consumer import LogReader
from inplace.core.bus.producer import EventProducer
from inplace.core.settings import Settings
from schemas import events as ev
from schemas.envelope import Envelope
from tests import factories
from tests.integration.conftest import (
    RoleProcess,
    end_offsets,
    project_log,
    projected_offsets,
    until,
)

pytestmark = pytest.mark.integration

CONSUMED = re.compile(r'^inplace_events_consumed_total\{role="kubelet",[^}]*\} (\S+)$', re.M)


async def _allocation_records(
    settings: Settings, after: dict[tuple[str, int], int]
) -> list[tuple[ev.Allocated, str]]:
    """Each allocation on the pods topic after the offsets `after`, with its correlation id."""
    found: list[tuple[ev.Allocated, str]] = []
    async with LogReader(settings.kafka_bootstrap) as reader:
        tps = await reader.partitions([settings.topic(ev.PODS)])
        start = {tp: after.get((tp.topic, tp.partition), 0) for tp in tps}
        async for batch in reader.read(start, await reader.end_offsets(tps)):
            found += [
                (r.envelope.payload, r.envelope.correlation_id)
                for r in batch.records
                if isinstance(r.envelope.payload, ev.Allocated)
            ]
    return found


async def _allocations(
    settings: Settings, after: dict[tuple[str, int], int]
) -> list[tuple[str, str]]:
    """(pod, correlation id) of each allocation on the pods topic after the offsets `after`."""
    return [(a.name, correlation) for a, correlation in await _allocation_records(settings, after)]


def _proposed(name: str, cpu: str) -> Envelope:
    """A resize of team-a's pod `name` to `cpu` and 64Mi, as the apiserver writes it."""
    return Envelope.wrap(
        ev.ResizeProposed(
            namespace="team-a",
            name=name,
            uid=f"uid-team-a-{name}",
            containers=[
                ev.ContainerResources(name="app", resources=factories.resources(cpu, "64Mi"))
            ],
        ),
        producer="apiserver",
    )


async def test_kubelet_restarts_from_the_projection_and_reads_only_the_tail(
    settings: Settings, producer: EventProducer, projector: RoleProcess, tmp_path: Path
) -> None:
    # 12 pods on 3 nodes, 40 resize flows each: every pod Running with an allocation; then a
    # resize of web-2 that no kubelet has answered yet, folded into the projection.
    asked = _proposed("web-2", "50m")
    written = [*factories.cluster_stream(pods=12, resizes_per_pod=40, nodes=3), asked]
    await project_log(settings, producer, projector, written)
    mine = {settings.topic(ev.PODS), settings.topic(ev.NODES)}
    snapshot = {k: v for k, v in (await projected_offsets(settings)).items() if k[0] in mine}
    history = sum(snapshot.values())
    # The `node` header, as the apiserver writes it for a bound pod.
    await producer.publish(_proposed("web-1", "100m"), headers={"node": "node-1"})
    # A resize written before its writer saw the binding carries node "" and every process
    # decodes it; the pod's next record names its node. Until its first assignment the
    # kubelet decodes every record (it knows no node of its own yet), so it keeps the resize
    # and has nothing to take over when node-0 becomes its own.
    unbound = _proposed("web-3", "100m")
    await producer.publish(unbound, headers={"node": ""})
    await producer.publish(
        Envelope.wrap(
            ev.PodPhaseChanged(
                namespace="team-a", name="web-3", uid="uid-team-a-web-3", phase="Running"
            ),
            producer="kubelet",
        ),
        headers={"node": "node-0"},
    )

    kubelet = RoleProcess("kubelet", settings, tmp_path / "kubelet.log", INPLACE_KUBELET_NODES="3")
    kubelet.start()
    try:
        await kubelet.ready()

        async def metrics() -> str:
            async with kubelet.client() as client:
                return (await client.get(f"{kubelet.url}/metrics")).text

        async def settled() -> tuple[int, int, list[str]]:
            ends = sum(v for k, v in (await end_offsets(settings)).items() if k[0] in mine)
            consumed = int(sum(float(v) for v in CONSUMED.findall(await metrics())))
            return consumed, ends - history, await _allocations(settings, snapshot)

        consumed, tail, allocated = await until(
            settled,
            lambda s: s[0] == s[1] and {"web-1", "web-2", "web-3"} <= {n for n, _ in s[2]},
            "the kubelet read the tail and allocated the resize",
        )
        text = await metrics()
    finally:
        kubelet.stop()
    assert 'inplace_read_model_start_source{role="kubelet",source="snapshot"} 1.0' in text
    # Only the records after the snapshot, each decoded once.
    assert consumed == tail < history / 10, (consumed, tail, history)
    # Every other running pod was re-admitted from the projected checkpoint, not allocated
    # afresh (web-0 and web-10 were deleted in the history); the resize asked before the
    # snapshot is answered under its request's correlation id.
    assert sorted(name for name, _ in allocated) == ["web-1", "web-2", "web-3"], allocated
    assert ("web-2", asked.correlation_id) in allocated, allocated
    assert ("web-3", unbound.correlation_id) in allocated, allocated


async def test_a_node_taken_over_later_gets_the_records_written_before_its_binding_was_seen(
    settings: Settings, producer: EventProducer, tmp_path: Path
) -> None:
    """Once a process knows its nodes it skips other nodes' records; a node it takes over
    later (here a simulated node registered while it runs) is loaded from the log, records
    written with `node` = "" included: without them the pod below would not exist there, or
    would start at the size it had before its resize."""
    ids = {"namespace": "team-a", "name": "late", "uid": "uid-team-a-late"}
    kubelet = RoleProcess("kubelet", settings, tmp_path / "kubelet.log", INPLACE_KUBELET_NODES="0")
    kubelet.start()
    try:
        await kubelet.ready()
        created = ev.PodCreated(**ids, pod=factories.pod("team-a", "late", cpu="100m"))
        await producer.publish(Envelope.wrap(created, producer="apiserver"), headers={"node": ""})
        bound = ev.PodBound(**ids, node_name="sim-1")
        # Another process's node, as far as this one knows: skipped, and the pod forgotten.
        await producer.publish(
            Envelope.wrap(bound, producer="scheduler"), headers={"node": "sim-1"}
        )
        # A resize the apiserver wrote before it saw the binding: decoded, of no pod it holds.
        asked = Envelope.wrap(
            ev.ResizeProposed(
                **ids,
                containers=[
                    ev.ContainerResources(
                        name="app", resources=factories.resources("300m", "128Mi")
                    )
                ],
            ),
            producer="apiserver",
        )
        await producer.publish(asked, headers={"node": ""})
        node = factories.node("sim-1")
        node.metadata.annotations = {"inplace.io/simulated": "true"}
        await producer.publish(
            Envelope.wrap(ev.NodeRegistered(name="sim-1", node=node), producer="kubelet")
        )

        async def allocations() -> list[ev.Allocated]:
            return [a for a, _ in await _allocation_records(settings, {})]

        allocated = await until(
            allocations, bool, "the kubelet took sim-1 over and admitted its pod"
        )
    finally:
        kubelet.stop()
    # Admitted at the size the resize asked for.
    assert [(a.name, str(a.containers[0].resources.requests["cpu"])) for a in allocated] == [
        ("late", "300m")
    ], allocated
