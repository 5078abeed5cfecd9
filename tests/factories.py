"""Builders for realistic objects and event streams used across tests."""

from __future__ import annotations

import copy
import random
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from inplace.core.bus.consumer import Record
from inplace.core.bus.producer import Position
from inplace.core.projection.state import ClusterState
from schemas import events as ev
from schemas.envelope import Envelope
from schemas.k8s import Node, Pod, ResourceRequirements


def pod(namespace: str, name: str, cpu: str = "100m", memory: str = "128Mi") -> Pod:
    return Pod.model_validate(
        {
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"},
            "spec": {
                "containers": [
                    {
                        "name": "app",
                        "image": "nginx:1.27",
                        "resources": {
                            "requests": {"cpu": cpu, "memory": memory},
                            "limits": {"cpu": cpu, "memory": memory},
                        },
                        "resizePolicy": [
                            {"resourceName": "cpu", "restartPolicy": "NotRequired"},
                            {"resourceName": "memory", "restartPolicy": "NotRequired"},
                        ],
                    }
                ]
            },
        }
    )


def node(name: str, cpu: str = "8", memory: str = "32Gi") -> Node:
    return Node.model_validate(
        {
            "metadata": {"name": name, "uid": f"uid-node-{name}"},
            "status": {
                "capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
                "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
            },
        }
    )


def resources(cpu: str, memory: str) -> ResourceRequirements:
    return ResourceRequirements.model_validate(
        {"requests": {"cpu": cpu, "memory": memory}, "limits": {"cpu": cpu, "memory": memory}}
    )


def resize_flow(
    namespace: str, name: str, node_name: str, cpu: str, memory: str
) -> list[ev.PodEvent]:
    """One accepted resize, as the KEP's flow produces it: Proposed → InProgress (Allocated)
    → Actuated → cleared."""
    uid = f"uid-{namespace}-{name}"
    want = resources(cpu, memory)
    return [
        ev.ResizeProposed(
            namespace=namespace,
            name=name,
            uid=uid,
            containers=[ev.ContainerResources(name="app", resources=want)],
        ),
        ev.Allocated(
            namespace=namespace,
            name=name,
            uid=uid,
            node_name=node_name,
            containers=[ev.ContainerAllocation(name="app", resources=want)],
        ),
        ev.ResizeStatusChanged(namespace=namespace, name=name, uid=uid, resize="InProgress"),
        ev.Actuated(
            namespace=namespace,
            name=name,
            uid=uid,
            node_name=node_name,
            containers=[ev.ContainerActual(name="app", resources=want)],
        ),
        ev.ResizeStatusChanged(namespace=namespace, name=name, uid=uid, resize=None),
    ]


def cluster_stream(
    pods: int, resizes_per_pod: int, nodes: int = 10, seed: int = 7
) -> Iterator[Envelope]:
    """Nodes, pods created and bound, then interleaved resize flows, some deletions and
    Kubernetes Events: a realistic mix over every event topic."""
    rng = random.Random(seed)
    node_names = [f"node-{i}" for i in range(nodes)]
    for n in node_names:
        yield Envelope.wrap(ev.NodeRegistered(name=n, node=node(n)), producer="kubelet")
    yield Envelope.wrap(ev.NamespaceCreated(namespace="team-a"), producer="apiserver")
    flows: list[list[ev.PodEvent]] = []
    for i in range(pods):
        ns, name, where = "team-a", f"web-{i}", node_names[i % nodes]
        uid = f"uid-{ns}-{name}"
        yield Envelope.wrap(
            ev.PodCreated(namespace=ns, name=name, uid=uid, pod=pod(ns, name)), producer="apiserver"
        )
        yield Envelope.wrap(
            ev.PodBound(namespace=ns, name=name, uid=uid, node_name=where), producer="scheduler"
        )
        yield Envelope.wrap(
            ev.PodPhaseChanged(namespace=ns, name=name, uid=uid, phase="Running"),
            producer="kubelet",
        )
        flow: list[ev.PodEvent] = []
        for _ in range(resizes_per_pod):
            cpu = f"{rng.randrange(1, 40) * 50}m"
            memory = f"{rng.randrange(1, 16) * 64}Mi"
            flow.extend(resize_flow(ns, name, where, cpu, memory))
        flows.append(flow)
    # Interleave the pods' flows (per-pod order kept) like concurrent users would.
    correlation: dict[str, str] = {}
    while any(flows):
        flow = rng.choice([f for f in flows if f])
        payload = flow.pop(0)
        if isinstance(payload, ev.ResizeProposed):
            env = Envelope.wrap(payload, producer="apiserver")
            correlation[payload.name] = env.correlation_id
        else:
            env = Envelope.wrap(
                payload, producer="kubelet", correlation_id=correlation[payload.name]
            )
        yield env
        if rng.random() < 0.02:
            yield Envelope.wrap(
                ev.KubeEventRecorded(event=kube_event(payload.namespace, payload.name)),
                producer="kubelet",
            )
    for i in range(0, pods, 10):
        name = f"web-{i}"
        yield Envelope.wrap(
            ev.PodDeleted(namespace="team-a", name=name, uid=f"uid-team-a-{name}"),
            producer="apiserver",
        )


def kube_event(namespace: str, pod_name: str) -> object:
    from schemas.k8s import Event

    return Event.model_validate(
        {
            "metadata": {"name": f"{pod_name}.resizing", "namespace": namespace},
            "involvedObject": {"kind": "Pod", "name": pod_name, "namespace": namespace},
            "reason": "Resizing",
            "message": "Pod resize in progress",
            "type": "Normal",
            "source": {"component": "kubelet"},
        }
    )


FOLD_T0 = datetime(2024, 1, 1, tzinfo=UTC)


def fold(*payloads: ev.EventPayload) -> ClusterState:
    """The cluster after these events, one second apart from FOLD_T0, at offsets 0, 1, …"""
    state = ClusterState()
    for offset, payload in enumerate(payloads):
        env = Envelope.wrap(payload, producer="test", time=FOLD_T0 + timedelta(seconds=offset))
        state.apply(Record(Position(payload.TOPIC, 0, offset), env))
    return state


def with_value(doc: dict[str, Any], path: Sequence[str | int], value: Any) -> dict[str, Any]:
    """A deep copy of a JSON document with the value at `path` set (lists by index)."""
    out = copy.deepcopy(doc)
    target: Any = out
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return out
