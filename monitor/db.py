"""asyncpg pool and the migration runner for ``sql/NNN_*.sql``.

A DSN may name a primary and its standbys (``postgresql://u@h1:5432,h2:5432/db?target_session_attrs=read-write``,
monitor/dsn.py): asyncpg tries the hosts in order for every new connection and keeps the first
that takes writes. After a switch of primary the old one's connections die (the pool drops
them, callers retry) and new ones find the promoted standby. Two cases asyncpg leaves to us:
no host takes writes yet (the standby not promoted): :class:`NoPrimaryError`, an ``OSError``
like any refused connection, so every caller retries it; and a connection whose server turned
read-only while it stayed up (``default_transaction_read_only`` set to fence an old primary,
which PostgreSQL 14+ reports to its clients): on its release the pool drops all its
connections, so the next query connects again and reaches the new primary; the query that
met ``ReadOnlySQLTransactionError`` fails like one whose connection dropped and is retried.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg

from monitor import logging as mlog

log = mlog.get(__name__)

_PACKAGE_DIR = Path(__file__).resolve().parent
# Where the migrations are, first match wins: monitor/sql/ in a wheel and an installation from one
# (the wheel build puts the top-level sql/ there: `sources` in pyproject.toml), else the top-level
# sql/ of the source tree, where a checkout and the editable install of `make venv` find them.
SQL_DIRS = (_PACKAGE_DIR / "sql", _PACKAGE_DIR.parent / "sql")
_MIGRATION_NAME = re.compile(r"^(\d{3})_[a-z0-9_]+\.sql$")
# Any fixed number: all migrators of one database serialise on it.
_MIGRATION_LOCK = 7_302_001

# Errors that mean "the database is not there", which the faces answer with a 503 rather than a 500.
UNAVAILABLE: tuple[type[BaseException], ...] = (
    OSError,
    TimeoutError,
    asyncpg.exceptions.CannotConnectNowError,
    asyncpg.exceptions.ConnectionDoesNotExistError,
    asyncpg.exceptions.ConnectionFailureError,
    asyncpg.exceptions.TooManyConnectionsError,
    asyncpg.exceptions.AdminShutdownError,
    asyncpg.exceptions.InterfaceError,
    # A write on a server that turned read-only during a switch of primary (monitor/db.py).
    asyncpg.exceptions.ReadOnlySQLTransactionError,
)


async def _init_connection(conn: asyncpg.Connection) -> None:
    await conn.set_type_codec("jsonb", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")


async def preload_array_codecs(conn: asyncpg.Connection) -> None:
    """Have asyncpg learn the array types our reads use now, on a new connection: it looks
    each array type up in the catalog (three statements) the first time a connection meets it,
    which would otherwise land inside the first request that reads arrays (a status page's
    build, which is otherwise one statement: monitor/status/data.py)."""
    await conn.fetchrow(
        "SELECT NULL::bigint[], NULL::integer[], NULL::boolean[], NULL::text[], NULL::double precision[],"
        " NULL::timestamptz[], NULL::timestamp[]"
    )


class NoPrimaryError(ConnectionError):
    """None of the DSN's hosts takes writes right now (a switch of primary is under way)."""


async def _connect(*args: Any, **kwargs: Any) -> asyncpg.Connection:
    """``asyncpg.connect``, with "no host is read-write" raised as a connection error."""
    try:
        return await asyncpg.connect(*args, **kwargs)
    except asyncpg.exceptions.TargetServerAttributeNotMatched:
        raise NoPrimaryError("no host of the database URL takes writes (none is the primary)") from None


def read_only(conn: asyncpg.Connection) -> bool:
    """Whether ``conn``'s server said it takes no writes: a standby (``in_hot_standby``), or a
    primary fenced with ``default_transaction_read_only``. PostgreSQL 14+ sends both at the start
    and again when they change; no query is run."""
    settings = conn.get_settings()
    return (
        getattr(settings, "in_hot_standby", "off") == "on"
        or getattr(settings, "default_transaction_read_only", "off") == "on"
    )


async def writable(conn: asyncpg.Connection) -> bool:
    """Whether ``conn``'s server still takes writes, after a round trip: an idle session learns
    of a changed setting only when it next runs a statement (for a LISTEN connection, which
    runs none, and must not stay on a primary that was fenced read-only)."""
    await conn.execute("SELECT 1")
    return not read_only(conn)


async def answers(pool: asyncpg.Pool, within: float) -> None:
    """Return once a connection of ``pool`` (taken within ``within`` seconds) answered a
    query; raise what taking or asking it raised (the api's ``/readyz``)."""
    async with pool.acquire(timeout=within) as conn:
        await conn.fetchval("SELECT 1")


async def delete_older(pool: asyncpg.Pool, table: str, clock: str, where: str, days: int, batch: int) -> int:
    """Delete the rows of ``table`` whose ``clock`` column is more than ``days`` old (and that
    match ``where``, SQL, or ``"true"``), ``batch`` at a time so that no statement holds many
    locks or a long transaction: how many went. The retention sweeps' one loop (the audit log,
    browser checks' onset screenshots). ``table``, ``clock`` and ``where`` are ours, never input."""
    total = 0
    while True:
        deleted = await pool.fetchval(
            f"""WITH gone AS (
                   DELETE FROM {table} WHERE id IN (
                       SELECT id FROM {table}
                       WHERE ({where}) AND {clock} < now() - make_interval(days => $1)
                       ORDER BY {clock} LIMIT $2 FOR UPDATE SKIP LOCKED)
                   RETURNING 1)
               SELECT count(*) FROM gone""",
            days,
            batch,
        )
        total += deleted
        if deleted < batch:
            return total


async def create_pool(
    dsn: str,
    *,
    min_size: int = 0,
    max_size: int = 10,
    init: Callable[[asyncpg.Connection], Awaitable[None]] | None = None,
) -> asyncpg.Pool:
    """A pool that opens connections on demand (min_size 0 by default): it starts, and keeps
    no "connection floor" to restore, while the database is away; callers see the outage as
    errors on use and retry. ``init`` runs on each new connection, after our codecs are set.
    A connection found read-only on release expires them all (see the module's docstring)."""

    async def setup(conn: asyncpg.Connection) -> None:
        await _init_connection(conn)
        if init is not None:
            await init(conn)

    pools: list[asyncpg.Pool] = []

    async def reset(conn: asyncpg.Connection) -> None:
        if read_only(conn) and pools:
            log.warning("database.read_only", hint="the server takes no writes: connecting again")
            await pools[0].expire_connections()
        await conn.reset()

    pool = await asyncpg.create_pool(
        dsn,
        min_size=min_size,
        max_size=max_size,
        init=setup,
        reset=reset,
        connect=_connect,
        command_timeout=30,
    )
    assert pool is not None
    pools.append(pool)
    return pool


async def connect(dsn: str) -> asyncpg.Connection:
    conn = await _connect(dsn)
    await _init_connection(conn)
    return conn


class MigrationError(RuntimeError):
    """Migrating cannot go on, and trying again will not help until files or code change.
    ``monitor migrate`` prints just the message and exits 1: a traceback would tell an
    operator nothing more, and a systemd unit's ``ExecStartPre`` stops."""


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


def find_directory(candidates: Sequence[Path] | None = None) -> Path:
    """The first of ``candidates`` (``SQL_DIRS``) that holds ``*.sql`` files; fails naming every
    place looked at."""
    candidates = SQL_DIRS if candidates is None else candidates
    for directory in candidates:
        if any(directory.glob("*.sql")):
            return directory
    raise MigrationError(
        "no migrations found (looked for *.sql in "
        + ", ".join(str(d) for d in candidates)
        + "): this installation of monitor is incomplete; reinstall it from a wheel built with "
        "`make dist`, or run it from a checkout"
    )


def discover(directory: Path | None = None) -> list[Migration]:
    """Every migration of ``directory`` (by default the first of ``SQL_DIRS`` that has any), by
    version; fails when there are none, or a file's name or version is wrong."""
    directory = find_directory() if directory is None else find_directory([directory])
    found: dict[int, Migration] = {}
    for path in sorted(directory.glob("*.sql")):
        match = _MIGRATION_NAME.match(path.name)
        if not match:
            raise MigrationError(f"migration file {path} is not named NNN_name.sql")
        version = int(match.group(1))
        if version in found:
            raise MigrationError(f"two migrations share version {version:03d} in {directory}")
        found[version] = Migration(version, path.name, path.read_text())
    return [found[v] for v in sorted(found)]


def unknown_applied(applied: Mapping[int, str], known: Sequence[Migration]) -> list[str]:
    """The migrations the database has applied that are not among ``known`` (``"007_name.sql"``), by
    version: the database was migrated by a newer monitor than this one."""
    versions = {m.version for m in known}
    return [applied[v] for v in sorted(applied) if v not in versions]


async def migrate(dsn: str, directory: Path | None = None) -> list[str]:
    """Apply every migration not yet recorded, each in its own transaction.

    Safe to run twice and from two processes at once (an advisory lock serialises them).
    Returns the names applied by this call. Refuses (``MigrationError``, nothing applied) when
    there are no migrations, and when the database has applied one this code does not know:
    older code must not run on, nor half-migrate, a schema it was not written for.
    """
    migrations = discover(directory)
    applied: list[str] = []
    conn = await _connect(dsn)
    try:
        await conn.execute("SELECT pg_advisory_lock($1)", _MIGRATION_LOCK)
        await conn.execute(
            """CREATE TABLE IF NOT EXISTS schema_migrations (
                   version integer PRIMARY KEY,
                   name text NOT NULL,
                   applied_at timestamptz NOT NULL DEFAULT now())"""
        )
        recorded = {
            r["version"]: r["name"] for r in await conn.fetch("SELECT version, name FROM schema_migrations")
        }
        unknown = unknown_applied(recorded, migrations)
        if unknown:
            raise MigrationError(
                f"the database is newer than this monitor {_version()}: it has applied "
                f"{', '.join(unknown)}, which this installation does not have (its latest is "
                f"{migrations[-1].name}); install the monitor release that added them, or a newer one"
            )
        done = set(recorded)
        for migration in migrations:
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


def _version() -> str:
    try:
        return importlib.metadata.version("monitor")
    except importlib.metadata.PackageNotFoundError:
        return "(version unknown)"


class OneConnection:
    """A pool's face over one connection already in a transaction: ``acquire()`` lends that
    connection, and ``conn.transaction()`` inside it is a savepoint. So the domain's operations,
    each written as its own transaction on a pool, run unchanged as parts of one, all or
    nothing (``monitor apply``: ``monitor/ascode/applying.py``). Its users must not run two
    queries at once: one connection answers one at a time."""

    def __init__(self, conn: asyncpg.Connection) -> None:
        self._conn = conn

    @contextlib.asynccontextmanager
    async def acquire(self) -> AsyncIterator[asyncpg.Connection]:
        yield self._conn

    async def execute(self, query: str, *args: Any) -> str:
        return await self._conn.execute(query, *args)

    async def executemany(self, query: str, args: Any) -> None:
        await self._conn.executemany(query, args)

    async def fetch(self, query: str, *args: Any) -> list[asyncpg.Record]:
        return await self._conn.fetch(query, *args)

    async def fetchrow(self, query: str, *args: Any) -> asyncpg.Record | None:
        return await self._conn.fetchrow(query, *args)

    async def fetchval(self, query: str, *args: Any) -> Any:
        return await self._conn.fetchval(query, *args)
