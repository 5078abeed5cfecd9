"""The pure folds behind every projection: one named case per event type."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from inplace.core.bus.consumer import Record
from inplace.core.bus.producer import Position
from inplace.core.projection.podstore import PodStore
from inplace.core.projection.reducers import PARTITION_SPACE, position_of, resource_version
from inplace.core.projection.state import ClusterState
from schemas import events as ev
from schemas.envelope import Envelope
from schemas.k8s import NodeCondition, NodeStatus, Pod
from schemas.nodeswap import planning_capacity
from schemas.policy import PodDisruptionBudget, PodDisruptionBudgetStatus
from tests import factories

T0 = datetime(2024, 1, 1, tzinfo=UTC)
NS, NAME, UID = "default", "web", "uid-default-web"


def _record(payload: ev.EventPayload, offset: int, partition: int = 0) -> Record:
    env = Envelope.wrap(payload, producer="test", time=T0 + timedelta(seconds=offset))
    return Record(Position(payload.TOPIC, partition, offset), env)


_fold = factories.fold


def _pod(state: ClusterState) -> Pod:
    return state.pods[(NS, NAME)]


CREATED = ev.PodCreated(namespace=NS, name=NAME, uid=UID, pod=factories.pod(NS, NAME))
WANT = factories.resources("200m", "256Mi")

PodCheck = Callable[[Pod], object]
PROPOSED = ev.ResizeProposed(
    namespace=NS, name=NAME, uid=UID, containers=[ev.ContainerResources(name="app", resources=WANT)]
)


# The kubelet's Actuated completing the resize of generation 2 (status.resize cleared).
COMPLETES_2 = ev.Actuated(
    namespace=NS,
    name=NAME,
    uid=UID,
    node_name="n1",
    observed_generation=2,
    resize_status=ev.ResizeStatusUpdate(resize=None),
)


def _observed(p: Pod) -> tuple[int | None, int | None, list[tuple[str, int | None]] | None]:
    """(metadata.generation, status.observedGeneration, resize conditions' observedGeneration)."""
    resize = [
        (c.type, c.observed_generation)
        for c in p.status.conditions or []
        if c.type.startswith("PodResize")
    ]
    return p.metadata.generation, p.status.observed_generation, resize or None


POD_CASES: list[tuple[str, list[ev.EventPayload], PodCheck, object]] = [
    (
        "created pod is Pending with rv and generation 1",
        [CREATED],
        lambda p: (p.status.phase, p.metadata.resource_version, p.metadata.generation),
        ("Pending", str(PARTITION_SPACE), 1),
    ),
    (
        "resize proposed changes spec, bumps generation, sets Proposed",
        [
            CREATED,
            ev.ResizeProposed(
                namespace=NS,
                name=NAME,
                uid=UID,
                containers=[ev.ContainerResources(name="app", resources=WANT)],
            ),
        ],
        lambda p: (
            str(p.spec.containers[0].resources.requests["cpu"]),
            p.metadata.generation,
            p.status.resize,
        ),
        ("200m", 2, "Proposed"),
    ),
    (
        "pod-level resources: desired in spec, allocated and actual in status",
        [
            CREATED,
            ev.ResizeProposed(namespace=NS, name=NAME, uid=UID, pod_resources=WANT),
            ev.Allocated(namespace=NS, name=NAME, uid=UID, node_name="n1", pod_resources=WANT),
            ev.Actuated(namespace=NS, name=NAME, uid=UID, node_name="n1", pod_resources=WANT),
        ],
        lambda p: (
            str(p.spec.resources.requests["cpu"]),
            str(p.status.allocated_resources["cpu"]),
            str(p.status.resources.requests["cpu"]),
        ),
        ("200m", "200m", "200m"),
    ),
    (
        "resize of an unknown container name is ignored",
        [
            CREATED,
            ev.ResizeProposed(
                namespace=NS,
                name=NAME,
                uid=UID,
                containers=[ev.ContainerResources(name="nope", resources=WANT)],
            ),
        ],
        lambda p: str(p.spec.containers[0].resources.requests["cpu"]),
        "100m",
    ),
    (
        "allocated fills containerStatuses[].allocatedResources",
        [
            CREATED,
            ev.Allocated(
                namespace=NS,
                name=NAME,
                uid=UID,
                node_name="n1",
                containers=[ev.ContainerAllocation(name="app", resources=WANT)],
            ),
        ],
        lambda p: {
            k: str(v) for k, v in p.status.container_statuses[0].allocated_resources.items()
        },
        {"cpu": "200m", "memory": "256Mi"},
    ),
    (
        "actuated fills containerStatuses[].resources",
        [
            CREATED,
            ev.Actuated(
                namespace=NS,
                name=NAME,
                uid=UID,
                node_name="n1",
                containers=[ev.ContainerActual(name="app", resources=WANT)],
            ),
        ],
        lambda p: str(p.status.container_statuses[0].resources.limits["memory"]),
        "256Mi",
    ),
    (
        "Deferred sets PodResizePending with reason Deferred",
        [
            CREATED,
            ev.ResizeStatusChanged(
                namespace=NS,
                name=NAME,
                uid=UID,
                resize="Deferred",
                message="Node didn't have enough capacity",
            ),
        ],
        lambda p: [(c.type, c.status, c.reason) for c in p.status.conditions],
        [("PodResizePending", "True", "Deferred")],
    ),
    (
        "InProgress sets PodResizeInProgress; clearing removes it",
        [
            CREATED,
            ev.ResizeStatusChanged(namespace=NS, name=NAME, uid=UID, resize="InProgress"),
            ev.ResizeStatusChanged(namespace=NS, name=NAME, uid=UID, resize=None),
        ],
        lambda p: (p.status.resize, p.status.conditions),
        (None, None),
    ),
    (
        "an Allocated setting InProgress, then an Actuated clearing it, as the two events did",
        [
            CREATED,
            ev.Allocated(
                namespace=NS,
                name=NAME,
                uid=UID,
                node_name="n1",
                resize_status=ev.ResizeStatusUpdate(resize="InProgress"),
            ),
        ],
        lambda p: (p.status.resize, [(c.type, c.status) for c in p.status.conditions]),
        ("InProgress", [("PodResizeInProgress", "True")]),
    ),
    (
        "an Actuated completing the resize clears status.resize and its condition",
        [
            CREATED,
            ev.ResizeStatusChanged(namespace=NS, name=NAME, uid=UID, resize="InProgress"),
            ev.Actuated(
                namespace=NS,
                name=NAME,
                uid=UID,
                node_name="n1",
                resize_status=ev.ResizeStatusUpdate(resize=None),
            ),
        ],
        lambda p: (p.status.resize, p.status.conditions),
        (None, None),
    ),
    (
        "an Actuated without a status leaves status.resize alone",
        [
            CREATED,
            ev.ResizeStatusChanged(namespace=NS, name=NAME, uid=UID, resize="InProgress"),
            ev.Actuated(namespace=NS, name=NAME, uid=UID, node_name="n1"),
        ],
        lambda p: p.status.resize,
        "InProgress",
    ),
    (
        "InProgress with reason Error carries the runtime's message on the condition",
        [
            CREATED,
            ev.ResizeStatusChanged(namespace=NS, name=NAME, uid=UID, resize="InProgress"),
            ev.ResizeStatusChanged(
                namespace=NS,
                name=NAME,
                uid=UID,
                resize="InProgress",
                reason="Error",
                message="update_container_resources: injected failure",
            ),
        ],
        lambda p: [(c.type, c.status, c.reason, c.message) for c in p.status.conditions],
        [
            (
                "PodResizeInProgress",
                "True",
                "Error",
                "update_container_resources: injected failure",
            )
        ],
    ),
    (
        "bound sets nodeName and PodScheduled=True",
        [CREATED, ev.PodBound(namespace=NS, name=NAME, uid=UID, node_name="n1")],
        lambda p: (p.spec.node_name, [(c.type, c.status) for c in p.status.conditions]),
        ("n1", [("PodScheduled", "True")]),
    ),
    (
        "unschedulable sets PodScheduled=False with the scheduler's message",
        [
            CREATED,
            ev.PodUnschedulable(
                namespace=NS,
                name=NAME,
                uid=UID,
                message="0/3 nodes are available: 3 Insufficient cpu.",
            ),
        ],
        lambda p: [(c.reason, c.message) for c in p.status.conditions],
        [("Unschedulable", "0/3 nodes are available: 3 Insufficient cpu.")],
    ),
    (
        "running sets phase, startTime at the event time, Ready",
        [CREATED, ev.PodPhaseChanged(namespace=NS, name=NAME, uid=UID, phase="Running")],
        lambda p: (p.status.phase, p.status.start_time),
        ("Running", T0 + timedelta(seconds=1)),
    ),
    (
        "restart count follows ContainerRestarted",
        [
            CREATED,
            ev.ContainerRestarted(
                namespace=NS, name=NAME, uid=UID, container="app", restart_count=3
            ),
        ],
        lambda p: p.status.container_statuses[0].restart_count,
        3,
    ),
    (
        "evicted pod ends Failed/Evicted on its node (nodeName is immutable)",
        [
            CREATED,
            ev.PodBound(namespace=NS, name=NAME, uid=UID, node_name="n1"),
            ev.PodEvicted(namespace=NS, name=NAME, uid=UID, node_name="n1", reason="Evicted"),
        ],
        lambda p: (
            p.spec.node_name,
            p.status.phase,
            p.status.reason,
            {c.type: (c.status, c.reason) for c in p.status.conditions or []}.get(
                "DisruptionTarget"
            ),
        ),
        ("n1", "Failed", "Evicted", ("True", "TerminationByKubelet")),
    ),
    (
        "kubelet events observe the generation they carry",
        [
            CREATED,
            PROPOSED,
            ev.Allocated(namespace=NS, name=NAME, uid=UID, node_name="n1", observed_generation=2),
            ev.ResizeStatusChanged(
                namespace=NS, name=NAME, uid=UID, resize="InProgress", observed_generation=2
            ),
        ],
        _observed,
        (2, 2, [("PodResizeInProgress", 2)]),
    ),
    (
        "a kubelet event for generation 2 landing after the apiserver wrote 3 observes 2",
        [
            CREATED,
            PROPOSED,
            PROPOSED,
            ev.ResizeStatusChanged(
                namespace=NS, name=NAME, uid=UID, resize="Deferred", observed_generation=2
            ),
        ],
        _observed,
        (3, 2, [("PodResizePending", 2)]),
    ),
    (
        "completing generation 2 after the apiserver wrote 3 leaves 3 Proposed",
        [
            CREATED,
            PROPOSED,
            ev.Allocated(
                namespace=NS,
                name=NAME,
                uid=UID,
                node_name="n1",
                observed_generation=2,
                resize_status=ev.ResizeStatusUpdate(resize="InProgress"),
            ),
            PROPOSED,
            COMPLETES_2,
        ],
        lambda p: (p.status.resize, _observed(p)),
        ("Proposed", (3, 2, None)),
    ),
    (
        "completing the generation it observed clears status.resize",
        [
            CREATED,
            PROPOSED,
            COMPLETES_2,
        ],
        lambda p: (p.status.resize, _observed(p)),
        (None, (2, 2, None)),
    ),
    (
        "the kubelet catching up with generation 3 observes 3",
        [
            CREATED,
            PROPOSED,
            PROPOSED,
            ev.ResizeStatusChanged(
                namespace=NS, name=NAME, uid=UID, resize="Deferred", observed_generation=2
            ),
            ev.ResizeStatusChanged(
                namespace=NS, name=NAME, uid=UID, resize="InProgress", observed_generation=3
            ),
        ],
        _observed,
        (3, 3, [("PodResizeInProgress", 3)]),
    ),
    (
        "observedGeneration never goes back (an older event folded late)",
        [
            CREATED,
            PROPOSED,
            ev.Actuated(namespace=NS, name=NAME, uid=UID, node_name="n1", observed_generation=2),
            ev.Actuated(namespace=NS, name=NAME, uid=UID, node_name="n1", observed_generation=1),
        ],
        _observed,
        (2, 2, None),
    ),
    (
        "events of logs without the field observe the pod's generation",
        [
            CREATED,
            PROPOSED,
            ev.ResizeStatusChanged(namespace=NS, name=NAME, uid=UID, resize="InProgress"),
        ],
        _observed,
        (2, 2, [("PodResizeInProgress", 2)]),
    ),
    (
        "apiserver events do not move observedGeneration",
        [
            CREATED,
            ev.PodPhaseChanged(
                namespace=NS, name=NAME, uid=UID, phase="Running", observed_generation=1
            ),
            PROPOSED,
            ev.PodBound(namespace=NS, name=NAME, uid=UID, node_name="n1"),
        ],
        lambda p: (p.metadata.generation, p.status.observed_generation),
        (2, 1),
    ),
    (
        "resourceVersion packs offset and partition",
        [CREATED, ev.PodBound(namespace=NS, name=NAME, uid=UID, node_name="n1")],
        lambda p: p.metadata.resource_version,
        str(2 * PARTITION_SPACE),  # offset 1 of partition 0: offsets count from 1 in it
    ),
]


@pytest.mark.parametrize(
    ("events", "check", "expected"), [c[1:] for c in POD_CASES], ids=[c[0] for c in POD_CASES]
)
def test_pod_reducer(events: list[ev.EventPayload], check: PodCheck, expected: object) -> None:
    assert check(_pod(_fold(*events))) == expected


def test_events_before_creation_and_after_deletion_leave_no_pod() -> None:
    bound = ev.PodBound(namespace=NS, name=NAME, uid=UID, node_name="n1")
    assert _fold(bound).pods == {}
    assert _fold(CREATED, ev.PodDeleted(namespace=NS, name=NAME, uid=UID), bound).pods == {}


def _resized_node(capacity: dict[str, str]) -> NodeStatus:
    """The status of a 4-CPU / 8Gi node after a hotplug to `capacity` (= allocatable)."""
    n = factories.node("n1", cpu="4", memory="8Gi")
    state = _fold(
        ev.NodeRegistered(name="n1", node=n),
        ev.NodeCapacityChanged(
            name="n1",
            old_capacity=n.status.capacity,
            new_capacity=capacity,
            old_allocatable=n.status.allocatable,
            new_allocatable=capacity,
        ),
    )
    return state.nodes["n1"].status


def test_node_keeps_initial_capacity_across_capacity_changes() -> None:
    grown = {"cpu": "8", "memory": "16Gi", "pods": "110"}
    status = _resized_node(grown)
    assert {k: str(v) for k, v in status.capacity.items()} == grown
    assert str(status.initial_capacity["cpu"]) == "4"
    assert str(status.initial_capacity["memory"]) == "8Gi"


def test_node_swap_is_reported_in_node_info_not_capacity() -> None:
    status = _resized_node({"cpu": "4", "memory": "8Gi", "pods": "110", "swap": "4Gi"})
    assert "swap" not in status.capacity and "swap" not in status.allocatable
    assert status.node_info.swap.capacity == 4 * 2**30
    assert str(planning_capacity(status)["swap"]) == "4Gi"


def test_a_node_update_changes_labels_and_spec_never_identity_or_status() -> None:
    registered = factories.node("n1", cpu="4", memory="8Gi")
    registered.metadata.uid = "uid-n1"
    edited = registered.model_copy(deep=True)
    edited.metadata.labels = {"disk": "ssd"}
    edited.metadata.uid = "forged"
    edited.spec.unschedulable = True
    state = _fold(
        ev.NodeRegistered(name="n1", node=registered),
        ev.NodeCapacityChanged(
            name="n1",
            old_capacity=registered.status.capacity,
            new_capacity={"cpu": "8", "memory": "8Gi", "pods": "110"},
            old_allocatable=registered.status.allocatable,
            new_allocatable={"cpu": "8", "memory": "8Gi", "pods": "110"},
        ),
        ev.NodeUpdated(name="n1", metadata=edited.metadata, spec=edited.spec),
    )
    node = state.nodes["n1"]
    assert node.metadata.labels == {"disk": "ssd"} and node.spec.unschedulable is True
    assert node.metadata.uid == "uid-n1"
    assert str(node.status.allocatable["cpu"]) == "8"  # the resize folded before it stays
    assert node.metadata.resource_version == str(resource_version(Position("nodes", 0, 2)))


def test_node_conditions_get_times_from_their_events_when_a_writer_leaves_them_out() -> None:
    # The kubelet's ResourceStarvation / FailedNodeResize conditions carry no times; folded,
    # they have a heartbeat at each event and a transition only when their status moves.
    starved = NodeCondition(type="ResourceStarvation", status="True", reason="Insufficient")
    fine = NodeCondition(type="ResourceStarvation", status="False", reason="Sufficient")
    state = _fold(
        ev.NodeRegistered(name="n1", node=factories.node("n1")),
        ev.NodeConditionChanged(name="n1", condition=starved),  # t0 + 1 s
        ev.NodeConditionChanged(name="n1", condition=starved.model_copy()),  # t0 + 2 s
        ev.NodeConditionChanged(name="n1", condition=fine),  # t0 + 3 s
    )
    history = factories.fold_records(
        ev.NodeRegistered(name="n1", node=factories.node("n1")),
        ev.NodeConditionChanged(name="n1", condition=starved),
        ev.NodeConditionChanged(name="n1", condition=starved.model_copy()),
    )
    at = [record.envelope.time for record in history]
    [condition] = [c for c in state.nodes["n1"].status.conditions if c.type == starved.type]
    assert condition.status == "False"
    assert condition.last_transition_time == condition.last_heartbeat_time
    assert condition.last_heartbeat_time is not None and condition.last_heartbeat_time > at[2]
    held = ClusterState()
    for record in history:
        held.apply(record)
    [still] = [c for c in held.nodes["n1"].status.conditions if c.type == starved.type]
    assert still.last_transition_time == at[1] and still.last_heartbeat_time == at[2]
    # A writer's own times are kept.
    stamped = starved.model_copy(update={"last_heartbeat_time": at[0]})
    kept = _fold(
        ev.NodeRegistered(name="n1", node=factories.node("n1")),
        ev.NodeConditionChanged(name="n1", condition=stamped),
    )
    [own] = [c for c in kept.nodes["n1"].status.conditions if c.type == starved.type]
    assert own.last_heartbeat_time == at[0] and own.last_transition_time == at[1]


def test_a_namespace_update_keeps_its_creation_time() -> None:
    created = ev.NamespaceCreated(namespace="team", labels={"a": "1"}, annotations={"x": "y"})
    state = _fold(created)
    first = state.namespaces["team"]["metadata"]
    assert first["annotations"] == {"x": "y"}
    state = _fold(created, ev.NamespaceUpdated(namespace="team", labels={"a": "2"}))
    now = state.namespaces["team"]["metadata"]
    assert now["labels"] == {"a": "2"} and "annotations" not in now
    assert now["creationTimestamp"] == first["creationTimestamp"]
    assert now["resourceVersion"] != first["resourceVersion"]


def test_a_terminating_namespace_keeps_its_phase_through_updates() -> None:
    created = ev.NamespaceCreated(namespace="team", labels={"a": "1"})
    state = _fold(created, ev.NamespaceTerminating(namespace="team"))
    held = state.namespaces["team"]
    assert held["status"] == {"phase": "Terminating"}
    deleting = held["metadata"]["deletionTimestamp"]
    assert deleting and held["metadata"]["labels"] == {"a": "1"}
    state = _fold(
        created,
        ev.NamespaceTerminating(namespace="team"),
        ev.NamespaceUpdated(namespace="team", labels={"a": "2"}),
        ev.NamespaceTerminating(namespace="team"),  # a second DELETE: the first time stays
    )
    held = state.namespaces["team"]
    assert held["status"] == {"phase": "Terminating"} and held["metadata"]["labels"] == {"a": "2"}
    assert held["metadata"]["deletionTimestamp"] == deleting
    assert "team" not in _fold(ev.NamespaceTerminating(namespace="team")).namespaces


def test_an_image_change_is_a_new_generation_and_the_restart_reports_the_image() -> None:
    pod = factories.pod(NS, NAME)
    created = ev.PodCreated(namespace=NS, name=NAME, uid=pod.metadata.uid or "", pod=pod)
    ids = {"namespace": NS, "name": NAME, "uid": pod.metadata.uid or ""}
    labelled = _fold(created, ev.PodUpdated(**ids, labels={"a": "b"}))
    assert labelled.pods[(NS, NAME)].metadata.generation == 1  # metadata only
    state = _fold(
        created,
        ev.PodUpdated(**ids, images={"app": "nginx:1.28"}),
        ev.ContainerRestarted(
            **ids, container="app", restart_count=1, image="nginx:1.28", image_id="nginx@sha256:1"
        ),
    )
    held = state.pods[(NS, NAME)]
    assert held.metadata.generation == 2
    (status,) = held.status.container_statuses or []
    assert (status.image, status.image_id, status.restart_count) == (
        "nginx:1.28",
        "nginx@sha256:1",
        1,
    )


def test_events_with_one_name_aggregate_their_count() -> None:
    event = factories.kube_event(NS, NAME)
    state = _fold(*[ev.KubeEventRecorded(event=event)] * 3)
    stored = state.events[(NS, f"{NAME}.resizing")]
    assert stored.count == 3
    assert stored.first_timestamp == T0
    assert stored.last_timestamp == T0 + timedelta(seconds=2)


def test_an_event_written_through_the_api_is_taken_as_written() -> None:
    event = factories.kube_event(NS, NAME)
    repeated = event.model_copy(deep=True)
    repeated.count, repeated.message = 5, "again"
    state = _fold(ev.KubeEventRecorded(event=event), ev.KubeEventUpdated(event=repeated))
    stored = state.events[(NS, f"{NAME}.resizing")]
    assert (stored.count, stored.message) == (5, "again")  # not aggregated to 2
    assert stored.metadata.creation_timestamp == T0
    assert stored.last_timestamp == T0 + timedelta(seconds=1)


def test_a_deleted_event_is_gone_and_one_recorded_again_starts_over() -> None:
    event = factories.kube_event(NS, NAME)
    recorded = ev.KubeEventRecorded(event=event)
    state = _fold(recorded, recorded, ev.KubeEventDeleted(event=event))
    assert (NS, f"{NAME}.resizing") not in state.events
    state = _fold(recorded, ev.KubeEventDeleted(event=event), recorded)
    assert state.events[(NS, f"{NAME}.resizing")].count == 1


def test_an_expiry_of_an_older_version_leaves_the_event() -> None:
    event = factories.kube_event(NS, NAME)
    first = _fold(ev.KubeEventRecorded(event=event)).events[(NS, f"{NAME}.resizing")]
    stale = ev.KubeEventDeleted(event=event, expires_version=first.metadata.resource_version)
    # Recorded again (a new version) before the expiry decided on the first one lands.
    again = _fold(ev.KubeEventRecorded(event=event), ev.KubeEventRecorded(event=event), stale)
    assert again.events[(NS, f"{NAME}.resizing")].count == 2
    gone = _fold(ev.KubeEventRecorded(event=event), stale)
    assert (NS, f"{NAME}.resizing") not in gone.events


@pytest.mark.parametrize("pos", [Position("pods", 5, 123456), Position("pods", 0, 0)])
def test_resource_version_round_trips_to_a_position(pos: Position) -> None:
    assert position_of(resource_version(pos), "pods") == pos


def test_the_first_record_of_partition_0_has_no_resource_version_0() -> None:
    # "0" is kube's "any version": a read with it would wait for nothing (issue 16's replicas).
    assert resource_version(Position("pods", 0, 0)) == PARTITION_SPACE


def _snapshot(state: ClusterState) -> dict[str, object]:
    return {
        "pods": {k: p.to_k8s() for k, p in state.pods.items()},
        "nodes": {k: n.to_k8s() for k, n in state.nodes.items()},
        "namespaces": dict(state.namespaces),
        "events": {k: e.to_k8s() for k, e in state.events.items()},
    }


def test_adopting_payloads_folds_to_the_same_objects_and_copying_leaves_them_alone() -> None:
    """The rebuild lets reducers keep payload objects (`adopt_payloads`); the result must be
    what copying gives, and the copying fold must not touch the payloads it was given."""
    envelopes = [
        *factories.cluster_stream(pods=30, resizes_per_pod=3, nodes=3),
        *(Envelope.wrap(p, producer="test") for c in POD_CASES for p in c[1]),
        *(Envelope.wrap(ev.KubeEventRecorded(event=factories.kube_event(NS, NAME)), producer="t"),)
        * 2,
    ]
    wire = [e.encode() for e in envelopes]

    def fold(adopt: bool) -> ClusterState:
        state = ClusterState(adopt_payloads=adopt)
        for offset, raw in enumerate(wire):
            env = Envelope.model_validate_json(raw)
            state.apply(Record(Position(env.topic, 0, offset), env))
        return state

    assert _snapshot(fold(adopt=True)) == _snapshot(fold(adopt=False))
    copying = ClusterState()
    for offset, env in enumerate(envelopes):
        copying.apply(Record(Position(env.topic, 0, offset), env))
    assert [e.encode() for e in envelopes] == wire


def test_a_budget_status_decided_from_an_older_version_is_folded_to_nothing() -> None:
    budget = PodDisruptionBudget.model_validate(
        {"metadata": {"name": "web"}, "spec": {"minAvailable": 1, "selector": {}}}
    )
    created = ev.PodDisruptionBudgetCreated(namespace=NS, budget=budget)
    read = str(resource_version(Position(created.TOPIC, 0, 0)))  # the version both writers read

    def spend(pod: str) -> ev.PodDisruptionBudgetStatusChanged:
        status = PodDisruptionBudgetStatus(disruptions_allowed=0, disrupted_pods={pod: T0})
        return ev.PodDisruptionBudgetStatusChanged(
            namespace=NS, name="web", status=status, precondition=read
        )

    # Two evictions through two replicas, each deciding from the budget as created: the
    # first on the log spends the disruption, the second is folded to nothing.
    state = _fold(created, spend("a"), spend("b"))
    held = state.poddisruptionbudgets[(NS, "web")]
    assert held.status.disrupted_pods == {"a": T0}
    assert held.metadata.resource_version == str(resource_version(Position(created.TOPIC, 0, 1)))
    # Without a precondition (events written before it) a status is taken as it comes.
    unconditional = spend("b").model_copy(update={"precondition": None})
    state = _fold(created, spend("a"), unconditional)
    assert state.poddisruptionbudgets[(NS, "web")].status.disrupted_pods == {"b": T0}


@pytest.mark.parametrize("store", [dict, PodStore], ids=["decoded pods", "pods held as JSON"])
def test_a_pod_update_decided_from_an_older_version_is_folded_to_nothing(
    store: Callable[[], Any],
) -> None:
    read = str(resource_version(Position(CREATED.TOPIC, 0, 0)))

    def labelled(value: str, precondition: str | None = read) -> ev.PodUpdated:
        return ev.PodUpdated(
            namespace=NS, name=NAME, uid=UID, labels={"by": value}, precondition=precondition
        )

    state = ClusterState(pods=store())
    records = factories.fold_records(CREATED, labelled("a"), labelled("b"), labelled("c", None))
    assert [state.apply(record) for record in records] == [True, True, False, True]
    assert _pod(state).metadata.labels == {"by": "c"}
    state = ClusterState(pods=store())
    for record in records[:3]:
        state.apply(record)
    assert _pod(state).metadata.labels == {"by": "a"}
    assert _pod(state).metadata.resource_version == str(
        resource_version(Position(CREATED.TOPIC, 0, 1))
    )


def test_an_allocation_applied_first_reports_actual_resources_and_completes_in_one_fold() -> None:
    proposed, applied = factories.applied_in_one_flow(NS, NAME, "n1", "2", "1Gi")
    state = _fold(CREATED, ev.PodBound(namespace=NS, name=NAME, uid=UID, node_name="n1"), proposed)
    assert _pod(state).status.resize == "Proposed"
    state.apply(_record(applied, 4))
    pod = _pod(state)
    (app,) = pod.status.container_statuses or []
    assert str(app.allocated_resources["cpu"]) == "2"
    assert str(app.resources.requests["cpu"]) == "2"
    assert str(app.resources.limits["memory"]) == "1Gi"
    assert pod.status.resize is None
    assert not [c for c in pod.status.conditions or [] if c.type.startswith("PodResize")]


def test_the_checkpoint_keeps_the_allocation_without_the_resources_applied_with_it() -> None:
    state = ClusterState(allocations={})
    state.apply(_record(CREATED, 1))
    _, applied = factories.applied_in_one_flow(NS, NAME, "n1", "2", "1Gi")
    state.apply(_record(applied, 2))
    checkpoint = ev.Allocated.model_validate_json(state.allocations[(NS, NAME)])
    assert checkpoint.actuated is None
    assert checkpoint.containers == applied.containers  # type: ignore[attr-defined]
