"""The benchmark's own database and Redis db, and the SQL that turns check rows into figures.

The database is ``monitor_bench`` on the same server as the run database, so a benchmark
never touches anybody's monitors; Redis uses db 3 of the same server for the same reason.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg

REPO = Path(__file__).resolve().parent.parent
BENCH_DB = "monitor_bench"
BENCH_REDIS_DB = 3
# MONITOR_SECRET_KEY of the processes measured: fixed, since the bench database outlives a run
# and what one run sealed must open in the next. A bench key only; never one to use elsewhere.
BENCH_SECRET_KEY = "YmVuY2gta2V5LW9mLXRoZS1tb25pdG9yLWJlbmNoMDE="


@dataclass(frozen=True)
class Urls:
    database: str
    redis: str
    admin: str  # the same server's maintenance database, to create ours


def _with_path(url: str, path: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path=path))


def service_urls(db_name: str = BENCH_DB, redis_db: int = BENCH_REDIS_DB) -> Urls:
    """The run services (``MONITOR_*_URL`` if set, else scripts/services.sh) with our db names."""
    database = os.environ.get("MONITOR_DATABASE_URL")
    redis = os.environ.get("MONITOR_REDIS_URL")
    if not (database and redis):
        out = subprocess.run(
            ["bash", str(REPO / "scripts" / "services.sh"), "env", "run"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        found = dict(line.removeprefix("export ").split("=", 1) for line in out.splitlines() if "=" in line)
        database = database or found["MONITOR_DATABASE_URL"]
        redis = redis or found["MONITOR_REDIS_URL"]
    return Urls(
        database=_with_path(database, f"/{db_name}"),
        redis=_with_path(redis, f"/{redis_db}"),
        admin=_with_path(database, "/postgres"),
    )


async def create(urls: Urls, migrations: list[str]) -> None:
    """Create the benchmark database if missing, with TimescaleDB (migrations come after).

    It is dropped and made anew when it holds a migration that ``migrations`` (the file
    names of the code under test) lacks: a newer tree was measured in it before.
    """
    name = urlsplit(urls.database).path.lstrip("/")
    admin = await asyncpg.connect(urls.admin)
    try:
        exists = await admin.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name)
        if exists and not set(await _applied(urls.database)) <= set(migrations):
            await admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
            exists = False
        if not exists:
            await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    conn = await asyncpg.connect(urls.database)
    try:
        await conn.execute("CREATE EXTENSION IF NOT EXISTS timescaledb")
    finally:
        await conn.close()


async def create_and_migrate(urls: Urls) -> None:
    """The benchmark database made (or remade, see :func:`create`) and migrated by this tree."""
    from monitor import db as monitor_db

    await create(urls, sorted(p.name for p in (REPO / "sql").glob("*.sql")))
    await monitor_db.migrate(urls.database)


async def _applied(dsn: str) -> list[str]:
    conn = await asyncpg.connect(dsn)
    try:
        if not await conn.fetchval("SELECT to_regclass('schema_migrations') IS NOT NULL"):
            return []
        return [r["name"] for r in await conn.fetch("SELECT name FROM schema_migrations")]
    finally:
        await conn.close()


async def reset(conn: asyncpg.Connection) -> None:
    """Empty every table but the migrations' record: the database is the benchmark's alone.

    RESTART IDENTITY: monitors are 1..N every run, so their tick offsets repeat run to run.
    """
    tables = await conn.fetch(
        """SELECT format('%I', tablename) AS name FROM pg_tables
           WHERE schemaname = 'public' AND tablename <> 'schema_migrations'"""
    )
    await conn.execute(f"TRUNCATE {', '.join(r['name'] for r in tables)} RESTART IDENTITY CASCADE")
    if await conn.fetchval("SELECT to_regclass('scheduler_cluster') IS NOT NULL"):
        # sql/014's one row, which the schedulers' view of their members hangs on: without it
        # a scheduler sees no member, itself included, and runs no monitor.
        await conn.execute("INSERT INTO scheduler_cluster VALUES (true, 1)")


async def has_column(conn: asyncpg.Connection, table: str, column: str) -> bool:
    return bool(
        await conn.fetchval(
            """SELECT 1 FROM information_schema.columns
               WHERE table_schema = 'public' AND table_name = $1 AND column_name = $2""",
            table,
            column,
        )
    )


async def insert_monitors(
    conn: asyncpg.Connection,
    count: int,
    *,
    url: str,
    interval: float,
    check_timeout: float,
    settings: Mapping[str, Any] | None = None,
) -> None:
    """``count`` monitors of ``url`` by COPY (the per-row NOTIFY reaches nobody: no scheduler runs).

    Where monitors belong to accounts (migration 002), they belong to an account "bench".
    ``settings`` is every monitor's ``monitors.settings`` (migration 006; sql/006 has the format).
    """
    columns: tuple[str, ...] = ("name", "url", "interval_seconds", "timeout_seconds")
    extra: tuple[object, ...] = ()
    if await has_column(conn, "monitors", "account_id"):
        account = await conn.fetchval("INSERT INTO accounts (name) VALUES ('bench') RETURNING id")
        columns, extra = (*columns, "account_id"), (account,)
    if settings:
        if not await has_column(conn, "monitors", "settings"):
            raise RuntimeError("monitors have no settings column here: the code under test predates sql/006")
        columns, extra = (*columns, "settings"), (*extra, json.dumps(settings))
    await conn.copy_records_to_table(
        "monitors",
        records=((f"bench-{i}", url, interval, check_timeout, *extra) for i in range(1, count + 1)),
        columns=columns,
    )


async def count_rows(conn: asyncpg.Connection) -> int:
    return int(await conn.fetchval("SELECT count(*) FROM checks"))


async def count_due(conn: asyncpg.Connection, start: float, end: float) -> int:
    return int(await conn.fetchval(f"SELECT count(*) FROM ({_WINDOW}) w", start, end))


# Check rows whose *scheduled* time (start minus lateness) falls in [$1, $2), epoch seconds.
# The bound on `time` alone lets TimescaleDB skip chunks; lateness over an hour is not a check.
_IN_WINDOW = """
    time >= to_timestamp($1) AND time < to_timestamp($2) + interval '1 hour'
      AND time - coalesce(lateness_ms, 0) * interval '1 millisecond' >= to_timestamp($1)
      AND time - coalesce(lateness_ms, 0) * interval '1 millisecond' < to_timestamp($2)
"""
# lateness_raw is NULL where nothing was scheduled (a heartbeat's ping or miss): the lateness
# percentiles (percentile_cont skips NULLs) are of scheduled checks only.
_WINDOW = f"""
    SELECT monitor_id, ok, error, coalesce(lateness_ms, 0) AS lateness_ms, lateness_ms AS lateness_raw,
           latency_ms
    FROM checks
    WHERE {_IN_WINDOW}"""


async def count_judged(conn: asyncpg.Connection, start: float, end: float) -> int:
    """Window checks whose row records assertion outcomes (``checks.details``, migration 006):
    proof that the assertions ran, not just the status check."""
    if not await has_column(conn, "checks", "details"):
        return 0
    return int(
        await conn.fetchval(
            f"SELECT count(*) FROM checks WHERE {_IN_WINDOW} AND details ? 'assertions'", start, end
        )
    )


@dataclass(frozen=True)
class WindowStats:
    checks: int
    errors: int
    error_samples: list[tuple[str, int]]
    lateness_p50: float | None
    lateness_p99: float | None
    lateness_p999: float | None
    lateness_max: float | None
    per_monitor_min: int
    per_monitor_max: int
    monitors_off_expected: int


async def window_stats(
    conn: asyncpg.Connection, start: float, end: float, expected: int | None
) -> WindowStats:
    """Figures for the checks scheduled in [start, end); ``expected`` is the exact count per
    monitor when the window is a whole number of intervals (None otherwise)."""
    summary = await conn.fetchrow(
        f"""SELECT count(*) AS checks,
                   count(*) FILTER (WHERE NOT ok) AS errors,
                   percentile_cont(ARRAY[0.5, 0.99, 0.999]) WITHIN GROUP (ORDER BY lateness_raw) AS p,
                   max(lateness_raw) AS max
            FROM ({_WINDOW}) w""",
        start,
        end,
    )
    per_monitor = await conn.fetchrow(
        f"""SELECT coalesce(min(n), 0) AS lo, coalesce(max(n), 0) AS hi,
                   count(*) FILTER (WHERE n <> $3::int) AS off
            FROM (SELECT m.id, count(w.monitor_id) AS n
                  FROM monitors m LEFT JOIN ({_WINDOW}) w ON w.monitor_id = m.id
                  GROUP BY m.id) per""",
        start,
        end,
        expected if expected is not None else -1,
    )
    samples = await conn.fetch(
        f"""SELECT coalesce(error, 'not ok') AS error, count(*) AS n FROM ({_WINDOW}) w
            WHERE NOT ok GROUP BY 1 ORDER BY 2 DESC LIMIT 5""",
        start,
        end,
    )
    p = summary["p"] or [None, None, None]
    return WindowStats(
        checks=summary["checks"],
        errors=summary["errors"],
        error_samples=[(r["error"], r["n"]) for r in samples],
        lateness_p50=p[0],
        lateness_p99=p[1],
        lateness_p999=p[2],
        lateness_max=summary["max"],
        per_monitor_min=per_monitor["lo"],
        per_monitor_max=per_monitor["hi"],
        monitors_off_expected=per_monitor["off"] if expected is not None else 0,
    )


async def window_by_type(conn: asyncpg.Connection, start: float, end: float) -> dict[str, dict[str, Any]]:
    """Per monitor type: the window's checks, errors (and the commonest), lateness p50/p99/max
    (None for heartbeats: nothing scheduled) and the checks' latency_ms p50/p99."""
    rows = await conn.fetch(
        f"""SELECT m.type, count(*) AS checks, count(*) FILTER (WHERE NOT w.ok) AS errors,
                   percentile_cont(ARRAY[0.5, 0.99]) WITHIN GROUP (ORDER BY w.lateness_raw) AS late,
                   max(w.lateness_raw) AS late_max,
                   percentile_cont(ARRAY[0.5, 0.99]) WITHIN GROUP (ORDER BY w.latency_ms) AS latency,
                   mode() WITHIN GROUP (ORDER BY w.error) AS top_error
            FROM ({_WINDOW}) w JOIN monitors m ON m.id = w.monitor_id
            GROUP BY m.type ORDER BY m.type""",
        start,
        end,
    )

    def ms(values: list[float | None] | None, i: int) -> float | None:
        value = values[i] if values is not None else None
        return None if value is None else round(value, 3)

    return {
        r["type"]: {
            "checks": r["checks"],
            "errors": r["errors"],
            "top_error": r["top_error"],
            "lateness_ms_p50": ms(r["late"], 0),
            "lateness_ms_p99": ms(r["late"], 1),
            "lateness_ms_max": None if r["late_max"] is None else round(r["late_max"], 3),
            "latency_ms_p50": ms(r["latency"], 0),
            "latency_ms_p99": ms(r["latency"], 1),
        }
        for r in rows
    }


@dataclass(frozen=True)
class FirstChecks:
    never_checked: int
    max_delay_s: float | None  # latest first check after `since`; None while some were never checked


async def first_checks(conn: asyncpg.Connection, since: float) -> FirstChecks:
    row = await conn.fetchrow(
        """SELECT count(*) FILTER (WHERE first IS NULL) AS never,
                  extract(epoch FROM max(first)) - $1 AS delay
           FROM (SELECT m.id, min(c.time) AS first
                 FROM monitors m LEFT JOIN checks c ON c.monitor_id = m.id GROUP BY m.id) f""",
        since,
    )
    never = int(row["never"])
    delay = float(row["delay"]) if row["delay"] is not None and never == 0 else None
    return FirstChecks(never_checked=never, max_delay_s=delay)
