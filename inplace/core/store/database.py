"""Connecting to the projection database (creating it on first use)."""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

import asyncpg


def database_name(dsn: str) -> str:
    name = unquote(urlsplit(dsn).path.lstrip("/"))
    if not name:
        raise ValueError(f"the DSN {dsn!r} names no database")
    return name


async def ensure_database(dsn: str) -> None:
    """Create the DSN's database if missing, through the `postgres` maintenance database."""
    try:
        conn = await asyncpg.connect(dsn)
    except asyncpg.InvalidCatalogNameError:
        admin = await asyncpg.connect(dsn, database="postgres")
        try:
            await admin.execute(f'CREATE DATABASE "{database_name(dsn)}"')
        except asyncpg.DuplicateDatabaseError:
            pass  # created by a concurrent starter
        finally:
            await admin.close()
    else:
        await conn.close()


async def create_pool(dsn: str, *, min_size: int = 1, max_size: int = 10) -> asyncpg.Pool:
    await ensure_database(dsn)
    pool = await asyncpg.create_pool(dsn, min_size=min_size, max_size=max_size)
    if pool is None:  # asyncpg types it Optional; it never is for a non-lazy pool
        raise RuntimeError("asyncpg returned no pool")
    return pool
