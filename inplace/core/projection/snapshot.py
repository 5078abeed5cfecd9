"""A read model's starting point: the projection in PostgreSQL instead of offset 0 (issue 16).

The projector writes each batch's rows and its next offsets in one transaction, so the rows
and offsets read together in one REPEATABLE READ transaction are exactly the fold of the log
up to those offsets. A reader loads them and follows each partition from its offset: its
start costs the objects that exist, not the history behind them.

Topics the projection does not hold (`workloads`: CloneSets have no table yet) are still
followed from offset 0.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

import asyncpg
from aiokafka import TopicPartition

from inplace.core.projection.eventstore import EventStore
from inplace.core.projection.podstore import PodForm, PodStore, pod_json
from inplace.core.projection.state import ClusterState
from inplace.core.projection.store import PodNamespaces, ProjectionStore
from schemas import events as ev
from schemas.envelope import Envelope, EventPayload
from schemas.keys import object_key

log = logging.getLogger(__name__)

T = TypeVar("T")
NsName = tuple[str, str]

PROJECTED_TOPICS = (ev.PODS, ev.NODES, ev.POLICY, ev.K8S_EVENTS)


@dataclass(frozen=True)
class Snapshot:
    state: ClusterState
    # Next offset to read per partition of the projected topics (absent: from 0).
    offsets: dict[TopicPartition, int]
    # Asked for (`demands`): the stored demand of each placed pod (schemas.demand.demand_json).
    demands: dict[tuple[str, str], str] = field(default_factory=dict)
    # Asked for (`open_resizes`): the pods whose resize is open, by their rows.
    open_resizes: set[tuple[str, str]] = field(default_factory=set)

    @property
    def objects(self) -> int:
        s = self.state
        collections = (s.pods, s.nodes, s.namespaces, s.resourcequotas, s.limitranges)
        return sum(len(c) for c in (*collections, s.poddisruptionbudgets, s.events))


async def _consistent_read(
    dsn: str,
    schema: str,
    read: Callable[[asyncpg.Connection, ProjectionStore], Awaitable[T | str]],
    connect_timeout: float,
) -> T | str:
    """`read` inside one REPEATABLE READ transaction of the projection, or why it could not
    run (one line, for the log)."""
    store = ProjectionStore(schema)
    try:
        conn = await asyncpg.connect(dsn, timeout=connect_timeout)
    except (OSError, asyncpg.PostgresError, TimeoutError) as exc:
        return f"PostgreSQL unavailable ({exc})"
    try:
        if not await store.exists(conn):
            return f"no projection schema {schema!r}"
        async with conn.transaction(isolation="repeatable_read", readonly=True):
            return await read(conn, store)
    except (OSError, asyncpg.PostgresError, ValueError) as exc:
        return f"cannot read the projection ({exc})"
    finally:
        await conn.close()


async def load_snapshot(
    dsn: str,
    schema: str,
    projected_topics: set[str],
    connect_timeout: float = 10.0,
    *,
    allocations: bool = False,
    demands: bool = False,
    open_resizes: bool = False,
    events: bool = True,
    pod_namespaces: PodNamespaces | None = None,
    pod_form: PodForm = pod_json,
) -> Snapshot | str:
    """The snapshot, or why there is none (one line, for the log); `events`: with the
    Kubernetes Events (`load_events_snapshot` brings them apart); `pod_namespaces`: only the
    pods of the namespaces it names, `pod_form`: the holder's
    (`ProjectionStore.load_state`)."""

    async def read(conn: asyncpg.Connection, store: ProjectionStore) -> Snapshot | str:
        offsets = await store.offsets(conn)
        if not offsets:
            return "the projector has not stored anything yet"
        priced: dict[tuple[str, str], str] | None = {} if demands else None
        opened: set[tuple[str, str]] | None = set() if open_resizes else None
        state = await store.load_state(
            conn,
            allocations=allocations,
            demands=priced,
            open_resizes=opened,
            events=events,
            pod_namespaces=pod_namespaces,
            pod_form=pod_form,
        )
        mine = {tp: n for tp, n in offsets.items() if tp.topic in projected_topics}
        return Snapshot(state, mine, priced or {}, opened or set())

    return await _consistent_read(dsn, schema, read, connect_timeout)


@dataclass(frozen=True)
class EventsSnapshot:
    events: EventStore
    offsets: dict[TopicPartition, int]  # of the Events' topic: where its log goes on


async def load_events_snapshot(
    dsn: str, schema: str, topic: str, connect_timeout: float = 10.0
) -> EventsSnapshot | str:
    """The projection's Kubernetes Events and the offsets of their topic `topic`, read
    together (the Events fold only from that topic, so they may be read apart from the rest of
    a snapshot, later); or why not."""

    async def read(conn: asyncpg.Connection, store: ProjectionStore) -> EventsSnapshot | str:
        offsets = await store.offsets(conn)
        mine = {tp: n for tp, n in offsets.items() if tp.topic == topic}
        return EventsSnapshot(await store.load_events(conn), mine)

    return await _consistent_read(dsn, schema, read, connect_timeout)


async def load_causes(
    dsn: str,
    schema: str,
    keys: list[tuple[str, str]],
    *,
    besides: str,
    connect_timeout: float = 10.0,
) -> dict[tuple[str, str], Envelope] | str:
    """The newest event of each pod in `keys` that `besides` did not write, as its envelope
    (the request a role started from a snapshot still has to answer, with its correlation id),
    or why there is none."""

    async def read(conn: asyncpg.Connection, store: ProjectionStore) -> dict[NsName, Envelope]:
        found: dict[NsName, Envelope] = {}
        for r in await store.latest_requests(conn, keys, besides=besides):
            found[(r["namespace"], r["pod_name"])] = Envelope.model_validate(
                {
                    "id": r["event_id"],
                    "type": r["event_type"],
                    "schema_version": EventPayload.registry[r["event_type"]].VERSION,
                    "key": object_key(r["namespace"], r["pod_name"]),
                    "time": r["event_time"],
                    "producer": r["producer"],
                    "correlation_id": r["correlation_id"],
                    "causation_id": r["causation_id"],
                    "payload": json.loads(r["payload"]),
                }
            )
        return found

    return await _consistent_read(dsn, schema, read, connect_timeout)


@dataclass(frozen=True)
class SomePods:
    """Some projected pods (a holder taking them over), their checkpoint where asked, and
    where the projection is."""

    pods: PodStore  # as their JSON
    allocations: dict[tuple[str, str], bytes]  # each an Allocated's JSON
    offsets: dict[TopicPartition, int]


async def load_pods_on(
    dsn: str, schema: str, nodes: list[str], connect_timeout: float = 10.0
) -> SomePods | str:
    """The pods of `nodes` and their checkpoint as the projection holds them (a kubelet
    taking nodes over), or why there is none (one line)."""

    async def read(conn: asyncpg.Connection, store: ProjectionStore) -> SomePods:
        offsets = await store.offsets(conn)
        pods, allocations = await store.load_pods_on(conn, nodes)
        return SomePods(pods, allocations, offsets)

    return await _consistent_read(dsn, schema, read, connect_timeout)


async def load_pods_in(
    dsn: str, schema: str, namespace: str, connect_timeout: float = 10.0
) -> SomePods | str:
    """The pods of `namespace` as the projection holds them (the quota role given the
    namespace's first ResourceQuota), or why there is none (one line)."""

    async def read(conn: asyncpg.Connection, store: ProjectionStore) -> SomePods:
        offsets = await store.offsets(conn)
        return SomePods(await store.load_pods_in(conn, namespace), {}, offsets)

    return await _consistent_read(dsn, schema, read, connect_timeout)
