"""A PostgreSQL role per writer (issue 17's `secure` profile).

The projection has one writer, the projector: its role may change the projection schema's rows
(and add tables, so its own migrations run). Every other role only reads the projection (its
snapshot start, `inplace replay state`), so it gets SELECT and nothing else. Role names are
`inplace_<role>`; `provision` creates or re-passwords them and (re)grants, idempotently.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import asyncpg

from inplace.core.store.migrations import check_schema_name

__all__ = ["READERS", "WRITERS", "db_role", "provision"]

WRITERS: Final = ("projector",)
READERS: Final = ("apiserver", "kubelet", "scheduler", "quota", "hotplug", "workload", "reader")


def db_role(role: str) -> str:
    return f"inplace_{role}"


async def provision(conn: asyncpg.Connection, schema: str, passwords: Mapping[str, str]) -> None:
    """Create (or update the password of) each role's login, then grant by WRITERS/READERS."""
    schema = check_schema_name(schema)
    for role, password in sorted(passwords.items()):
        if role not in WRITERS and role not in READERS:
            raise ValueError(f"unknown role {role!r}")
        name = db_role(role)
        exists = await conn.fetchval("SELECT 1 FROM pg_roles WHERE rolname = $1", name)
        verb = (
            "ALTER ROLE %I WITH LOGIN PASSWORD %L" if exists else "CREATE ROLE %I LOGIN PASSWORD %L"
        )
        # PASSWORD takes no bind parameter: let the server quote it (format %I / %L).
        await conn.execute(
            await conn.fetchval("SELECT format($1, $2::text, $3::text)", verb, name, password)
        )
        await conn.execute(f"GRANT USAGE ON SCHEMA {schema} TO {name}")
        if role in WRITERS:
            await conn.execute(f"GRANT CREATE ON SCHEMA {schema} TO {name}")
            await conn.execute(
                f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema} TO {name}"
            )
            await conn.execute(
                f"ALTER DEFAULT PRIVILEGES IN SCHEMA {schema} "
                f"GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {name}"
            )
        else:
            await conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {name}")
            await conn.execute(
                f"ALTER DEFAULT PRIVILEGES IN SCHEMA {schema} GRANT SELECT ON TABLES TO {name}"
            )
