"""A kubelet killed between writing Allocated and InProgress finishes the transition after it
restarts: the pod's log still reads Proposed → Allocated → InProgress → Actuated → cleared,
never skipping a resize status (KEP-1287 Kubelet Restart Tolerance). Kubelets write the
allocation and its InProgress in one event now; the log here is one an older kubelet left
(an Allocated without a status), which a restarted kubelet must still finish."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubernetes import client

from inplace.core.bus.producer import EventProducer
from inplace.core.projection.replay import pod_history
from inplace.core.settings import Settings
from schemas import events as ev
from schemas.envelope import Envelope
from schemas.k8s import ResourceRequirements
from schemas.quantity import Quantity
from tests.integration.conftest import RoleProcess, call, until
from tests.integration.kubelet.conftest import running_kubelet


def _pod() -> dict[str, Any]:
    rl = {"cpu": "1", "memory": "128Mi"}
    return {
        "metadata": {"name": "cut"},
        "spec": {
            "nodeName": "node-0",
            "containers": [
                {"name": "c", "image": "app", "resources": {"requests": rl, "limits": rl}}
            ],
        },
    }


def _reader(v1: client.CoreV1Api) -> Callable[[], Any]:
    return lambda: v1.read_namespaced_pod("cut", "default")


async def test_restart_between_allocated_and_in_progress(
    apiserver: RoleProcess, settings: Settings, producer: EventProducer
) -> None:
    v1 = client.CoreV1Api(client.ApiClient(client.Configuration(host=apiserver.url)))
    pod_now = _reader(v1)
    async with running_kubelet(settings):
        await call(v1.create_namespaced_pod, "default", _pod())
        pod = await until(pod_now, lambda p: p.status.phase == "Running", "running")

    # The kubelet is down; the resize is Proposed and the dead kubelet's last write was the
    # allocation (what a SIGKILL right after producing Allocated leaves in the log).
    rl = {"cpu": "2", "memory": "128Mi"}
    body = {"spec": {"containers": [{"name": "c", "resources": {"requests": rl, "limits": rl}}]}}
    await call(v1.patch_namespaced_pod_resize, "cut", "default", body)
    await until(pod_now, lambda p: p.status.resize == "Proposed", "proposed")
    ids = {"namespace": "default", "name": "cut", "uid": pod.metadata.uid}
    quantities = {k: Quantity(v) for k, v in rl.items()}
    allocation = ResourceRequirements(requests=quantities, limits=quantities)
    await producer.publish(
        Envelope.wrap(
            ev.Allocated(
                **ids,
                node_name="node-0",
                containers=[ev.ContainerAllocation(name="c", resources=allocation)],
            ),
            producer="kubelet",
        )
    )

    async with running_kubelet(settings):
        done = await until(
            pod_now,
            lambda p: (
                p.status.resize is None
                and p.status.container_statuses[0].resources.requests["cpu"] == "2"
            ),
            "resized",
        )
        assert done.status.container_statuses[0].allocated_resources["cpu"] == "2"

    history = await pod_history(settings.kafka_bootstrap, "default", "cut", settings.topic_prefix)
    steps = [h.record.envelope.payload for h in history]
    after = steps[max(i for i, p in enumerate(steps) if isinstance(p, ev.Allocated)) :]
    statuses = [c.resize for p in after if (c := ev.resize_change(p)) is not None]
    assert statuses == ["InProgress", None], [type(p).__name__ for p in after]
    assert not any(isinstance(p, ev.Allocated) for p in after[1:])  # allocated exactly once
