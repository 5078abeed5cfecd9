"""Versioned SQL migrations, applied on start, per projection schema.

Files are `NNNN_name.sql` with `{schema}` placeholders, so the live projection and a rebuild's
shadow schema share one definition.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

import asyncpg

_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
_SCHEMA = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


def migrations() -> list[Migration]:
    found = []
    for entry in resources.files("inplace.core.store").joinpath("migrations").iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append(Migration(int(match[1]), match[2], entry.read_text()))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if versions != list(range(1, len(found) + 1)):
        raise RuntimeError(f"migration versions must be 1..N without gaps, found {versions}")
    return found


def check_schema_name(schema: str) -> str:
    if not _SCHEMA.match(schema):
        raise ValueError(f"invalid schema name {schema!r}: use lowercase letters, digits and _")
    return schema


async def migrate(conn: asyncpg.Connection, schema: str) -> list[int]:
    """Apply pending migrations in one transaction each; returns the versions applied now."""
    check_schema_name(schema)
    applied_now: list[int] = []
    async with conn.transaction():
        # Two processes starting at once must not both run 0001.
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext($1))", f"migrate:{schema}")
        # Only when missing: CREATE SCHEMA checks the database's CREATE privilege even with
        # IF NOT EXISTS, and the secure profile's projector role (issue 17) has no such right.
        if not await conn.fetchval("SELECT 1 FROM pg_namespace WHERE nspname = $1", schema):
            await conn.execute(f"CREATE SCHEMA {schema}")
        await conn.execute(
            f"CREATE TABLE IF NOT EXISTS {schema}.schema_migrations "
            "(version integer PRIMARY KEY, name text NOT NULL)"
        )
        done = {
            r["version"]
            for r in await conn.fetch(f"SELECT version FROM {schema}.schema_migrations")
        }
        for migration in migrations():
            if migration.version in done:
                continue
            await conn.execute(migration.sql.format(schema=schema))
            await conn.execute(
                f"INSERT INTO {schema}.schema_migrations (version, name) VALUES ($1, $2)",
                migration.version,
                migration.name,
            )
            applied_now.append(migration.version)
    return applied_now


async def drop_schema(conn: asyncpg.Connection, schema: str) -> None:
    await conn.execute(f"DROP SCHEMA IF EXISTS {check_schema_name(schema)} CASCADE")
