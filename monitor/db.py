"""asyncpg pool and the migration runner for ``sql/NNN_*.sql``."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import asyncpg

from monitor import logging as mlog

log = mlog.get(__name__)

SQL_DIR = Path(__file__).resolve().parent.parent / "sql"
_MIGRATION_NAME = re.compile(r"^(\d{3})_[a-z0-9_]+\.sql$")
# Any fixed number: all migrators of one database serialise on it.
_MIGRATION_LOCK = 7_302_001


async def _init_connection(conn: asyncpg.Connection) -> None:
    await conn.set_type_codec("jsonb", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")


async def create_pool(
    dsn: str,
    *,
    min_size: int = 0,
    max_size: int = 10,
    init: Callable[[asyncpg.Connection], Awaitable[None]] | None = None,
) -> asyncpg.Pool:
    """A pool that opens connections on demand (min_size 0 by default): it starts, and keeps
    no "connection floor" to restore, while the database is away; callers see the outage as
    errors on use and retry. ``init`` runs on each new connection, after our codecs are set."""

    async def setup(conn: asyncpg.Connection) -> None:
        await _init_connection(conn)
        if init is not None:
            await init(conn)

    pool = await asyncpg.create_pool(
        dsn, min_size=min_size, max_size=max_size, init=setup, command_timeout=30
    )
    assert pool is not None
    return pool


async def connect(dsn: str) -> asyncpg.Connection:
    conn = await asyncpg.connect(dsn)
    await _init_connection(conn)
    return conn


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


def discover(directory: Path = SQL_DIR) -> list[Migration]:
    found: dict[int, Migration] = {}
    for path in sorted(directory.glob("*.sql")):
        match = _MIGRATION_NAME.match(path.name)
        if not match:
            raise RuntimeError(f"migration file {path.name} is not named NNN_name.sql")
        version = int(match.group(1))
        if version in found:
            raise RuntimeError(f"two migrations share version {version:03d}")
        found[version] = Migration(version, path.name, path.read_text())
    return [found[v] for v in sorted(found)]


async def migrate(dsn: str, directory: Path = SQL_DIR) -> list[str]:
    """Apply every migration not yet recorded, each in its own transaction.

    Safe to run twice and from two processes at once (an advisory lock serialises them).
    Returns the names applied by this call.
    """
    applied: list[str] = []
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("SELECT pg_advisory_lock($1)", _MIGRATION_LOCK)
        await conn.execute(
            """CREATE TABLE IF NOT EXISTS schema_migrations (
                   version integer PRIMARY KEY,
                   name text NOT NULL,
                   applied_at timestamptz NOT NULL DEFAULT now())"""
        )
        done = {r["version"] for r in await conn.fetch("SELECT version FROM schema_migrations")}
        for migration in discover(directory):
            if migration.version in done:
                continue
            async with conn.transaction():
                await conn.execute(migration.sql)
                await conn.execute(
                    "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
                    migration.version,
                    migration.name,
                )
            log.info("migration.applied", migration=migration.name)
            applied.append(migration.name)
    finally:
        await conn.close()
    return applied
