"""Postgres projections, written exactly once per event.

A batch's rows and the consumer's next offsets are written in ONE transaction, and the batch
is refused when the stored offset has already moved past it (another member applied it after a
rebalance, or a restart replays it). Killing the writer between any two statements therefore
loses nothing and applies nothing twice.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sys
from collections.abc import AsyncIterator, Callable, Collection, Iterable
from datetime import datetime
from typing import Any, TypeVar

import asyncpg
from aiokafka import TopicPartition
from pydantic import ValidationError

from inplace.core.bus.consumer import Batch
from inplace.core.projection.eventstore import EventStore
from inplace.core.projection.podstore import PodForm, PodStore, pod_json
from inplace.core.projection.recent import DEFAULT_HELD, resize_in_flight
from inplace.core.projection.reducers import locate, resource_version
from inplace.core.projection.state import ClusterState
from inplace.core.projection.warm import Warm
from inplace.core.store.migrations import check_schema_name
from schemas import events as ev
from schemas.base import K8sModel
from schemas.demand import demand_json
from schemas.k8s import Event, LimitRange, Node, Pod, ResourceQuota
from schemas.podview import RESIZE_OPEN_SQL
from schemas.policy import PodDisruptionBudget
from schemas.resources import is_sidecar

# Which namespaces' pods a snapshot brings, chosen from the objects loaded before them.
PodNamespaces = Callable[[ClusterState], Collection[str]]
log = logging.getLogger(__name__)

W = TypeVar("W", Pod, Event)

# Tables whose content is the projection (the checksum covers these, in this order).
CHECKSUM_TABLES: dict[str, str] = {
    "pods": "namespace, name",
    "containers": "namespace, pod_name, name",
    "nodes": "name",
    "namespaces": "name",
    "resourcequotas": "namespace, name",
    "limitranges": "namespace, name",
    "poddisruptionbudgets": "namespace, name",
    "events": "namespace, name",
    "allocations": "namespace, name",
    "pod_history": 'topic, partition, "offset"',
    "dead_letters": 'topic, partition, "offset"',
}


HISTORY_COLUMNS = [
    "topic",
    "partition",
    "offset",
    "namespace",
    "pod_name",
    "event_id",
    "event_type",
    "event_time",
    "correlation_id",
    "causation_id",
    "producer",
    "payload",
]


class StaleBatch(RuntimeError):
    """The stored offsets are past this batch: it was applied already; re-seek, drop it."""

    def __init__(self, positions: dict[TopicPartition, int]) -> None:
        super().__init__(f"batch already applied up to {positions}")
        self.positions = positions


def _json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def _jsonb(model: K8sModel) -> str:
    """A model's Kubernetes JSON for a jsonb column (which orders keys itself): `k8s_json`,
    not `_json(model.to_k8s())`, which builds a dict first."""
    return model.k8s_json().decode()


class ProjectionStore:
    def __init__(self, schema: str = "projection", consumer: str = "projector") -> None:
        self.schema = check_schema_name(schema)
        self.consumer = consumer
        # What the last batches wrote, for the next ones that touch the same objects.
        self._pods: Warm[Pod] = Warm(held=DEFAULT_HELD, holds=resize_in_flight)
        self._events: Warm[Event] = Warm()

    # --- offsets ----------------------------------------------------------------------------

    async def exists(self, conn: asyncpg.Connection) -> bool:
        return bool(
            await conn.fetchval(
                "SELECT 1 FROM information_schema.tables WHERE table_schema = $1 "
                "AND table_name = 'consumer_offsets'",
                self.schema,
            )
        )

    async def load_state(
        self,
        conn: asyncpg.Connection,
        *,
        allocations: bool = False,
        demands: dict[tuple[str, str], str] | None = None,
        open_resizes: set[tuple[str, str]] | None = None,
        events: bool = True,
        pod_namespaces: PodNamespaces | None = None,
        pod_form: PodForm = pod_json,
    ) -> ClusterState:
        """Every projected object, as the fold of the log up to `offsets` holds it (call both
        inside one REPEATABLE READ transaction for a consistent snapshot); `allocations`: the
        kubelet's checkpoint too; `demands`: filled with the stored demand (`demand_json`) of
        each pod bound to a node and not ended, where the row has one; `open_resizes`:
        filled with the pods whose resize is open by their row (`RESIZE_OPEN_SQL`); `events`: the
        Kubernetes Events too (only a holder that follows them wants them: hundreds of
        thousands within the event TTL); `pod_namespaces`: only the pods of the namespaces it
        names from the other objects, loaded first (the quota role's: those with a quota);
        `pod_form`: how the holder writes a pod down when it goes cold."""
        s = self.schema
        state = ClusterState(allocations={} if allocations else None)
        for r in await conn.fetch(f"SELECT name, object FROM {s}.nodes"):
            state.nodes[r["name"]] = Node.model_validate_json(r["object"])
        for r in await conn.fetch(f"SELECT name, object FROM {s}.namespaces"):
            state.namespaces[r["name"]] = json.loads(r["object"])
        for r in await conn.fetch(f"SELECT namespace, name, object FROM {s}.resourcequotas"):
            key = (r["namespace"], r["name"])
            state.resourcequotas[key] = ResourceQuota.model_validate_json(r["object"])
        for r in await conn.fetch(f"SELECT namespace, name, object FROM {s}.limitranges"):
            key = (r["namespace"], r["name"])
            state.limitranges[key] = LimitRange.model_validate_json(r["object"])
        query = f"SELECT namespace, name, object FROM {s}.poddisruptionbudgets"
        for r in await conn.fetch(query):
            key = (r["namespace"], r["name"])
            state.poddisruptionbudgets[key] = PodDisruptionBudget.model_validate_json(r["object"])
        pods = PodStore(form=pod_form)
        placed = (
            ", CASE WHEN node_name IS NOT NULL AND phase NOT IN ('Succeeded', 'Failed')"
            " THEN demand END AS demand"
            if demands is not None
            else ""
        )
        query = f"SELECT namespace, name, node_name, resource_version, object{placed} FROM {s}.pods"
        args: list[Any] = []
        if pod_namespaces is not None:
            query += " WHERE namespace = ANY($1::text[])"
            args.append(sorted(pod_namespaces(state)))
        async for r in _rows(conn, query, *args):
            key = _hold(pods, r)
            if demands is not None and r["demand"] is not None:
                demands[key] = r["demand"]
        if open_resizes is not None:  # a few rows: the server checks every one
            query = f"SELECT namespace, name FROM {s}.pods WHERE {RESIZE_OPEN_SQL}"
            open_resizes.update((r["namespace"], r["name"]) for r in await conn.fetch(query))
        state.pods = pods
        if state.allocations is not None:
            # Keyed by the pods' own key tuples: a kubelet holds both for every pod it serves.
            held = {key: key for key in pods}
            async for r in _rows(conn, f"SELECT namespace, name, payload FROM {s}.allocations"):
                key = (r["namespace"], r["name"])
                state.allocations[held.get(key, key)] = r["payload"].encode()
        if events:
            state.events = await self.load_events(conn)
        return state

    async def load_events(self, conn: asyncpg.Connection) -> EventStore:
        """The Kubernetes Events, held as their JSON (call inside the REPEATABLE READ
        transaction that reads their offsets)."""
        events = EventStore()
        written = "object->>'lastTimestamp', object->>'eventTime'"
        written += ", object->'metadata'->>'creationTimestamp'"
        columns = "namespace, name, resource_version, object, involved_name"
        columns += f", coalesce({written}) AS written"
        async for r in _rows(conn, f"SELECT {columns} FROM {self.schema}.events"):
            at = datetime.fromisoformat(r["written"]) if r["written"] else None
            key = (sys.intern(r["namespace"]), r["name"])
            raw = r["object"].encode()
            rv, involved = r["resource_version"], r["involved_name"]
            events.put_json(key, raw, rv=rv, written=at, involved=involved)
        return events

    async def latest_requests(
        self, conn: asyncpg.Connection, keys: list[tuple[str, str]], *, besides: str
    ) -> list[asyncpg.Record]:
        """Each pod's newest history row written by a producer other than `besides` (what a
        role reacting to requests was last asked), for the pods `keys`."""
        return list(
            await conn.fetch(
                f"SELECT DISTINCT ON (h.namespace, h.pod_name) h.* FROM {self.schema}.pod_history h"
                " JOIN unnest($1::text[], $2::text[]) AS k(namespace, name)"
                " ON h.namespace = k.namespace AND h.pod_name = k.name WHERE h.producer <> $3"
                ' ORDER BY h.namespace, h.pod_name, h.partition DESC, h."offset" DESC',
                [k[0] for k in keys],
                [k[1] for k in keys],
                besides,
            )
        )

    async def load_pods_on(
        self, conn: asyncpg.Connection, nodes: list[str]
    ) -> tuple[PodStore, dict[tuple[str, str], bytes]]:
        """The pods bound to `nodes`, as their JSON (undecoded), and their allocation
        checkpoint (call with `offsets` in one REPEATABLE READ transaction)."""
        s = self.schema
        pods = PodStore()
        for r in await conn.fetch(
            f"SELECT namespace, name, node_name, resource_version, object FROM {s}.pods "
            "WHERE node_name = ANY($1::text[])",
            nodes,
        ):
            _hold(pods, r)
        rows = await conn.fetch(
            f"SELECT a.namespace, a.name, a.payload FROM {s}.allocations a JOIN {s}.pods p "
            "ON p.namespace = a.namespace AND p.name = a.name WHERE p.node_name = ANY($1::text[])",
            nodes,
        )
        allocations = {(r["namespace"], r["name"]): r["payload"].encode() for r in rows}
        return pods, allocations

    async def load_pods_in(self, conn: asyncpg.Connection, namespace: str) -> PodStore:
        """The pods of `namespace`, as their JSON (call with `offsets` in one REPEATABLE READ
        transaction)."""
        pods = PodStore()
        columns = "namespace, name, node_name, resource_version, object"
        query = f"SELECT {columns} FROM {self.schema}.pods WHERE namespace = $1"
        for r in await conn.fetch(query, namespace):
            _hold(pods, r)
        return pods

    async def fill_demands(self, conn: asyncpg.Connection, chunk: int = 1000) -> int:
        """Write the demand of every pod row that has none (a projection written before the
        column, migration 0004): what a rebuild would write, so the checksums still agree.
        Only where the row is still the one read: a projector applying a batch meanwhile
        writes its own. A row this build cannot decode is left without (and said in the log)
        instead of stopping the projector's start. Returns how many rows were filled."""
        s, filled, after = self.schema, 0, ("", "")
        while rows := await conn.fetch(
            f"SELECT namespace, name, resource_version, object FROM {s}.pods"
            " WHERE demand IS NULL AND (namespace, name) > ($1, $2)"
            f" ORDER BY namespace, name LIMIT {int(chunk)}",
            *after,
        ):
            priced = [
                (r["namespace"], r["name"], r["resource_version"], demand_json(pod))
                for r in rows
                if (pod := _decoded_pod(r)) is not None
            ]
            await conn.executemany(
                f"UPDATE {s}.pods SET demand = $4 WHERE namespace = $1 AND name = $2"
                " AND resource_version = $3 AND demand IS NULL",
                priced,
            )
            filled += len(priced)
            after = (rows[-1]["namespace"], rows[-1]["name"])
        return filled

    async def offsets(self, conn: asyncpg.Connection) -> dict[TopicPartition, int]:
        rows = await conn.fetch(
            f"SELECT topic, partition, next_offset FROM {self.schema}.consumer_offsets "
            "WHERE consumer = $1",
            self.consumer,
        )
        return {TopicPartition(r["topic"], r["partition"]): r["next_offset"] for r in rows}

    async def _claim(self, conn: asyncpg.Connection, batch: Batch) -> None:
        """Lock this consumer's offsets for the batch's partitions; refuse a stale batch."""
        tps = list(batch.next_offsets)
        rows = await conn.fetch(
            f"SELECT topic, partition, next_offset FROM {self.schema}.consumer_offsets "
            "WHERE consumer = $1 AND (topic, partition) IN "
            "(SELECT * FROM unnest($2::text[], $3::int[])) FOR UPDATE",
            self.consumer,
            [tp.topic for tp in tps],
            [tp.partition for tp in tps],
        )
        stored = {TopicPartition(r["topic"], r["partition"]): r["next_offset"] for r in rows}
        stale = {
            tp: stored[tp] for tp, first in batch.start_offsets.items() if stored.get(tp, 0) > first
        }
        if stale:
            raise StaleBatch(stale)

    async def _save_offsets(self, conn: asyncpg.Connection, batch: Batch) -> None:
        await conn.executemany(
            f"INSERT INTO {self.schema}.consumer_offsets (consumer, topic, partition, next_offset)"
            " VALUES ($1, $2, $3, $4) ON CONFLICT (consumer, topic, partition)"
            " DO UPDATE SET next_offset = EXCLUDED.next_offset",
            [
                (self.consumer, tp.topic, tp.partition, nxt)
                for tp, nxt in batch.next_offsets.items()
            ],
        )

    # --- applying a batch -------------------------------------------------------------------

    async def apply(self, conn: asyncpg.Connection, batch: Batch) -> None:
        """Apply one batch; the caller owns the transaction (one per batch)."""
        if not batch:
            return
        await self._claim(conn, batch)
        # The history rows are written from the payloads as they arrived, so they are taken
        # first: the fold then keeps the payloads' objects instead of deep-copying each one.
        history = history_rows(batch)
        state = await self._load(conn, batch)
        state.adopt_payloads = True
        for record in batch.records:
            state.apply(record)
        for key in state.touched.get("pods", ()):
            self._pods.remember(key, state.pods.get(key))
        for key in state.touched.get("events", ()):
            self._events.remember(key, state.events.get(key))
        await self.write_folded(conn, state, batch, history)

    async def write_folded(
        self,
        conn: asyncpg.Connection,
        state: ClusterState,
        batch: Batch,
        history: list[tuple[Any, ...]],
    ) -> None:
        """Write what `state` changed while folding `batch`, its history and its offsets.

        (The rebuild writes its shadow schema with the bulk methods below instead.)"""
        await self._write(conn, state)
        # COPY, no upsert: a second application of the same position fails the transaction
        # (primary key) instead of silently duplicating history.
        await self.copy_history(conn, history)
        await self._dead_letters(conn, batch)
        await self._save_offsets(conn, batch)

    async def _load(self, conn: asyncpg.Connection, batch: Batch) -> ClusterState:
        """Only the objects this batch touches are read (one query per collection)."""
        keys: dict[str, set[Any]] = {}
        for record in batch.records:
            try:
                collection, key = locate(record.envelope.payload)
            except TypeError:
                continue
            keys.setdefault(collection, set()).add(key)
        pods = keys.get("pods", set())
        nodes = keys.get("nodes", set())
        quotas = keys.get("resourcequotas", set())
        limit_ranges = keys.get("limitranges", set())
        budgets = keys.get("poddisruptionbudgets", set())
        events = keys.get("events", set())
        state = ClusterState()
        for key, pod in await self._read_through(conn, "pods", pods, self._pods, Pod):
            state.pods[key] = pod
        for (ns, name), obj in await self._fetch_pairs(conn, "resourcequotas", quotas):
            state.resourcequotas[(ns, name)] = ResourceQuota.model_validate(obj)
        for (ns, name), obj in await self._fetch_pairs(conn, "limitranges", limit_ranges):
            state.limitranges[(ns, name)] = LimitRange.model_validate(obj)
        for (ns, name), obj in await self._fetch_pairs(conn, "poddisruptionbudgets", budgets):
            state.poddisruptionbudgets[(ns, name)] = PodDisruptionBudget.model_validate(obj)
        for key, event in await self._read_through(conn, "events", events, self._events, Event):
            state.events[key] = event
        if nodes:
            rows = await conn.fetch(
                f"SELECT name, object FROM {self.schema}.nodes WHERE name = ANY($1::text[])",
                list(nodes),
            )
            for r in rows:
                state.nodes[r["name"]] = Node.model_validate(json.loads(r["object"]))
        return state

    async def _read_through(
        self,
        conn: asyncpg.Connection,
        table: str,
        keys: set[tuple[str, str]],
        warm: Warm[W],
        model: type[W],
    ) -> list[tuple[tuple[str, str], W]]:
        """The objects of `keys` that have a row: the one `warm` remembers while the row
        still has its resourceVersion, else decoded from the row (one query either way; a
        row's JSON travels only when it is needed)."""
        if not keys:
            return []
        ordered = list(keys)
        rows = await conn.fetch(
            "SELECT t.namespace, t.name,"
            " CASE WHEN t.resource_version = k.rv THEN NULL ELSE t.object END AS object"
            f" FROM {self.schema}.{table} t"
            " JOIN unnest($1::text[], $2::text[], $3::bigint[]) AS k(namespace, name, rv)"
            " ON t.namespace = k.namespace AND t.name = k.name",
            [k[0] for k in ordered],
            [k[1] for k in ordered],
            [warm.version(k) for k in ordered],
        )
        found = []
        for r in rows:
            key, raw = (r["namespace"], r["name"]), r["object"]
            found.append((key, warm.take(key) if raw is None else model.model_validate_json(raw)))
        return found

    async def _fetch_pairs(
        self, conn: asyncpg.Connection, table: str, keys: set[tuple[str, str]]
    ) -> list[tuple[tuple[str, str], Any]]:
        if not keys:
            return []
        rows = await conn.fetch(
            f"SELECT namespace, name, object FROM {self.schema}.{table} "
            "WHERE (namespace, name) IN (SELECT * FROM unnest($1::text[], $2::text[]))",
            [k[0] for k in keys],
            [k[1] for k in keys],
        )
        return [((r["namespace"], r["name"]), json.loads(r["object"])) for r in rows]

    async def _write(self, conn: asyncpg.Connection, state: ClusterState) -> None:
        await self.copy_state(conn, state)

    async def _dead_letters(self, conn: asyncpg.Connection, batch: Batch) -> None:
        await conn.executemany(
            f'INSERT INTO {self.schema}.dead_letters (topic, partition, "offset", reason, raw)'
            " VALUES ($1,$2,$3,$4,$5)",
            dead_letter_rows(batch),
        )

    # --- writing rows ---------------------------------------------------------------------

    async def copy_history(self, conn: asyncpg.Connection, rows: list[tuple[Any, ...]]) -> None:
        if rows:
            await conn.copy_records_to_table(
                "pod_history", schema_name=self.schema, columns=HISTORY_COLUMNS, records=rows
            )

    async def copy_dead_letters(
        self, conn: asyncpg.Connection, rows: list[tuple[Any, ...]]
    ) -> None:
        if rows:
            await conn.copy_records_to_table(
                "dead_letters", schema_name=self.schema, columns=DEAD_LETTER_COLUMNS, records=rows
            )

    async def copy_state(
        self, conn: asyncpg.Connection, state: ClusterState, *, fresh: bool = False
    ) -> None:
        """Write every object `state` touched since the last call, each once: its old row is
        deleted, its new one (if it still exists) COPYed in.

        The live projector calls this per batch (inside the batch's transaction); the rebuild
        once per round, with `fresh` on its first: the tables are known to be empty, so there
        is nothing to delete first."""
        s = self.schema
        for table, keys, rows in _touched_rows(state, state.take_touched()):
            if not keys:
                continue
            if not fresh:
                await _delete_keys(conn, s, table, keys)
            if rows:
                await conn.copy_records_to_table(
                    table, schema_name=s, columns=OBJECT_COLUMNS[table], records=rows
                )

    async def save_offsets(
        self, conn: asyncpg.Connection, offsets: dict[TopicPartition, int]
    ) -> None:
        await self._save_offsets(conn, Batch(next_offsets=offsets))

    # --- reading ----------------------------------------------------------------------------

    async def checksum(self, conn: asyncpg.Connection) -> str:
        """sha256 over every projection table's rows in key order, each JSON value as jsonb
        prints it (canonical whichever spelling a row was written in)."""
        return combine_checksums(await self.table_checksums(conn, CHECKSUM_TABLES))

    async def table_checksums(
        self, conn: asyncpg.Connection, tables: Iterable[str]
    ) -> dict[str, str]:
        """Each table's part of `checksum` (the rebuild computes them on two connections)."""
        sums: dict[str, str] = {}
        for table in tables:
            row = await self._canonical_row(conn, table)
            sums[table] = await conn.fetchval(
                f"SELECT md5(coalesce(string_agg({row}::text, E'\\n' ORDER BY "
                f"{CHECKSUM_TABLES[table]}), '')) FROM {self.schema}.{table} t"
            )
        return sums

    async def _canonical_row(self, conn: asyncpg.Connection, table: str) -> str:
        """A row of `table` with its json columns as jsonb: the row prints as it did when every
        object column was jsonb (0006 made the ones a start reads json, kept as written)."""
        columns = await conn.fetch(
            "SELECT column_name, data_type FROM information_schema.columns"
            " WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position",
            self.schema,
            table,
        )
        if not any(c["data_type"] == "json" for c in columns):
            return "t"
        spelled = (
            f't."{c["column_name"]}"' + ("::jsonb" if c["data_type"] == "json" else "")
            for c in columns
        )
        return f"ROW({', '.join(spelled)})"

    async def counts(self, conn: asyncpg.Connection) -> dict[str, int]:
        return {
            table: await conn.fetchval(f"SELECT count(*) FROM {self.schema}.{table}")
            for table in CHECKSUM_TABLES
        }


def combine_checksums(sums: dict[str, str]) -> str:
    digest = hashlib.sha256()
    for table in CHECKSUM_TABLES:
        digest.update(f"{table}:{sums[table]}\n".encode())
    return digest.hexdigest()


async def _delete_pairs(
    conn: asyncpg.Connection, table: str, columns: str, keys: Iterable[tuple[str, str]]
) -> None:
    keys = list(keys)
    await conn.execute(
        f"DELETE FROM {table} WHERE ({columns}) IN (SELECT * FROM unnest($1::text[], $2::text[]))",
        [k[0] for k in keys],
        [k[1] for k in keys],
    )


def _pod_row(pod: Pod) -> tuple[Any, ...]:
    return (
        pod.metadata.namespace,
        pod.metadata.name,
        pod.metadata.uid,
        pod.spec.node_name,
        pod.status.phase or "Pending",
        pod.status.resize,
        pod.status.qos_class,
        int(pod.metadata.resource_version or 0),
        pod_json(pod).decode(),  # json: kept as written (0006)
        demand_json(pod),
        pod.metadata.generation,
        pod.status.observed_generation,
    )


def _container_rows(pod: Pod) -> list[tuple[Any, ...]]:
    rows = []
    for init, specs, statuses in (
        (True, pod.spec.init_containers or [], pod.status.init_container_statuses or []),
        (False, pod.spec.containers, pod.status.container_statuses or []),
    ):
        by_name = {s.name: s for s in statuses}
        for c in specs:
            st = by_name.get(c.name)
            allocated = (
                {k: str(v) for k, v in st.allocated_resources.items()}
                if st and st.allocated_resources is not None
                else None
            )
            actual = st.resources if st and st.resources is not None else None
            rows.append(
                (
                    pod.metadata.namespace,
                    pod.metadata.name,
                    c.name,
                    init,
                    is_sidecar(c) if init else False,
                    _jsonb(c.resources),
                    _json(allocated) if allocated is not None else None,
                    _jsonb(actual) if actual is not None else None,
                    st.restart_count if st else 0,
                )
            )
    return rows


def _node_row(node: Node) -> tuple[Any, ...]:
    status = node.status
    as_json = lambda rl: _json({k: str(v) for k, v in (rl or {}).items()})  # noqa: E731
    return (
        node.metadata.name,
        as_json(status.capacity if status else None),
        as_json(status.allocatable if status else None),
        as_json(status.initial_capacity) if status and status.initial_capacity else None,
        int(node.metadata.resource_version or 0),
        _json(node.to_k8s()),
    )


def _event_row(key: tuple[str, str], event: Event) -> tuple[Any, ...]:
    return (
        key[0],
        key[1],
        event.involved_object.kind,
        event.involved_object.name or "",
        event.reason,
        event.type,
        event.count or 1,
        int(event.metadata.resource_version or 0),
        _jsonb(event),
    )


DEAD_LETTER_COLUMNS = ["topic", "partition", "offset", "reason", "raw"]

# Columns of the object tables, in the order the row builders below produce them.
OBJECT_COLUMNS: dict[str, list[str]] = {
    "pods": [
        "namespace",
        "name",
        "uid",
        "node_name",
        "phase",
        "resize_status",
        "qos_class",
        "resource_version",
        "object",
        "demand",
        "generation",
        "observed_generation",
    ],
    "containers": [
        "namespace",
        "pod_name",
        "name",
        "init",
        "sidecar",
        "desired",
        "allocated",
        "actual",
        "restart_count",
    ],
    "nodes": ["name", "capacity", "allocatable", "initial_capacity", "resource_version", "object"],
    "namespaces": ["name", "resource_version", "object"],
    "resourcequotas": ["namespace", "name", "resource_version", "object"],
    "limitranges": ["namespace", "name", "resource_version", "object"],
    "poddisruptionbudgets": ["namespace", "name", "resource_version", "object"],
    "events": [
        "namespace",
        "name",
        "involved_kind",
        "involved_name",
        "reason",
        "type",
        "count",
        "resource_version",
        "object",
    ],
    "allocations": ["namespace", "name", "payload"],
}

# Which columns a touched key of each table is, for deleting its old row.
_KEY_COLUMNS: dict[str, str] = {
    "pods": "namespace, name",
    "containers": "namespace, pod_name",
    "nodes": "name",
    "namespaces": "name",
    "resourcequotas": "namespace, name",
    "limitranges": "namespace, name",
    "poddisruptionbudgets": "namespace, name",
    "events": "namespace, name",
    "allocations": "namespace, name",
}


def _decoded_pod(row: asyncpg.Record) -> Pod | None:
    """A pods row's object, or None (said in the log) when this build cannot decode it: its
    demand stays unset, and a scheduler prices that pod from its object, as for any such row."""
    try:
        return Pod.model_validate_json(row["object"])
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        log.warning(
            "pods row %s/%s does not decode (%s: %s): its demand is left unset",
            row["namespace"],
            row["name"],
            where,
            first["msg"],
        )
        return None


def history_rows(batch: Batch) -> list[tuple[Any, ...]]:
    """pod_history rows (HISTORY_COLUMNS) of the batch's pod events."""
    return [
        (
            r.position.topic,
            r.position.partition,
            r.position.offset,
            p.namespace,
            p.name,
            r.envelope.id,
            r.envelope.type,
            r.envelope.time,
            r.envelope.correlation_id,
            r.envelope.causation_id,
            r.envelope.producer,
            p.model_dump_json(by_alias=True, exclude_none=True),
        )
        for r in batch.records
        if isinstance(p := r.envelope.payload, ev.PodEvent)
    ]


def dead_letter_rows(batch: Batch) -> list[tuple[Any, ...]]:
    """dead_letters rows (DEAD_LETTER_COLUMNS) of the batch's malformed records."""
    return [
        (m.position.topic, m.position.partition, m.position.offset, m.reason, m.raw.value)
        for m in batch.malformed
    ]


def _touched_rows(
    state: ClusterState, touched: dict[str, set[Any]]
) -> list[tuple[str, list[Any], list[tuple[Any, ...]]]]:
    """(table, touched keys, rows of the touched objects that still exist) per table."""
    pod_keys = sorted(touched.get("pods", ()))
    live_pods = [state.pods[k] for k in pod_keys if k in state.pods]
    node_keys = sorted(touched.get("nodes", ()))
    ns_keys = sorted(touched.get("namespaces", ()))
    quota_keys = sorted(touched.get("resourcequotas", ()))
    lr_keys = sorted(touched.get("limitranges", ()))
    pdb_keys = sorted(touched.get("poddisruptionbudgets", ()))
    event_keys = sorted(touched.get("events", ()))
    allocation_keys = sorted(touched.get("allocations", ()))
    return [
        ("containers", pod_keys, [row for p in live_pods for row in _container_rows(p)]),
        ("pods", pod_keys, [_pod_row(p) for p in live_pods]),
        ("nodes", node_keys, [_node_row(state.nodes[k]) for k in node_keys if k in state.nodes]),
        (
            "namespaces",
            ns_keys,
            [
                (k, int(obj["metadata"]["resourceVersion"]), _json(obj))
                for k in ns_keys
                if (obj := state.namespaces.get(k)) is not None
            ],
        ),
        (
            "resourcequotas",
            quota_keys,
            [
                _policy_row(k, state.resourcequotas[k])
                for k in quota_keys
                if k in state.resourcequotas
            ],
        ),
        (
            "limitranges",
            lr_keys,
            [_policy_row(k, state.limitranges[k]) for k in lr_keys if k in state.limitranges],
        ),
        (
            "poddisruptionbudgets",
            pdb_keys,
            [
                _policy_row(k, state.poddisruptionbudgets[k])
                for k in pdb_keys
                if k in state.poddisruptionbudgets
            ],
        ),
        (
            "events",
            event_keys,
            [_event_row(k, state.events[k]) for k in event_keys if k in state.events],
        ),
        ("allocations", allocation_keys, _allocation_rows(state.allocations, allocation_keys)),
    ]


def _allocation_rows(
    allocations: dict[tuple[str, str], bytes] | None, keys: list[tuple[str, str]]
) -> list[tuple[Any, ...]]:
    if allocations is None:
        return []
    return [(k[0], k[1], a.decode()) for k in keys if (a := allocations.get(k)) is not None]


async def _delete_keys(conn: asyncpg.Connection, schema: str, table: str, keys: list[Any]) -> None:
    columns = _KEY_COLUMNS[table]
    if "," in columns:
        await _delete_pairs(conn, f"{schema}.{table}", columns, keys)
    else:
        await conn.execute(f"DELETE FROM {schema}.{table} WHERE {columns} = ANY($1::text[])", keys)


def _policy_row(
    key: tuple[str, str], obj: ResourceQuota | LimitRange | PodDisruptionBudget
) -> tuple[Any, ...]:
    return (key[0], key[1], int(obj.metadata.resource_version or 0), _json(obj.to_k8s()))


__all__ = ["CHECKSUM_TABLES", "ProjectionStore", "StaleBatch", "resource_version"]


SNAPSHOT_CHUNK = 2000


async def _rows(conn: asyncpg.Connection, query: str, *args: Any) -> AsyncIterator[asyncpg.Record]:
    """A table's rows a chunk at a time (a cursor, inside the snapshot's transaction): a role
    holding every pod never has all their rows in memory at once besides what it keeps (the
    whole result of 50,000 pods was ~100 MB at its peak, memory the process kept)."""
    async for row in conn.cursor(query, *args, prefetch=SNAPSHOT_CHUNK):
        yield row


def _hold(pods: PodStore, row: asyncpg.Record) -> tuple[str, str]:
    """A projected pod row into `pods`, as its JSON; its key. The namespace and node are
    interned: a few distinct values, each row's its own string from the driver (~110 bytes a
    pod held)."""
    key = (sys.intern(row["namespace"]), row["name"])
    pods.put_json(
        key,
        row["object"].encode(),
        rv=row["resource_version"],
        node=sys.intern(row["node_name"] or ""),
    )
    return key
