"""The API benchmark's data: one account of N monitors with D days of hourly rollups, made by SQL.

Everything is generated inside PostgreSQL (``INSERT ... SELECT FROM generate_series``), in
chunks of about 250,000 rows loaded by a few connections at once; the rollups table's primary key is
dropped for the load and built once at the end, as one would restore a dump. The rows look like
the scheduler's: a monitor checked every 30 s has 120 checks an hour, whose latencies fill the
fixed histogram of ``monitor.rollups``; a few hours have failures.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import asyncpg

from monitor import rollups
from monitor.domain import accounts
from monitor.domain import keys as api_keys

ACCOUNT = "bench"
CHECKS_PER_HOUR = 120  # every 30 s
VARIANTS = 64  # distinct hourly histograms, assigned to (monitor, hour) by a hash
# Tables the load fills; emptied first (ids restart at 1).
TABLES = ("accounts", "api_keys", "monitors", "monitor_state", "monitor_pauses", "checks", "checks_hourly",
          "checks_daily", "incidents", "channels", "monitor_channels", "outbox", "deliveries")  # fmt: skip
PKEY = "checks_hourly_pkey"
# Monitors $1..$2, hours $4..$5 after $3: each (monitor, hour) gets the variant its hash picks.
# Written in the order given: hour by hour (as the scheduler writes them, so one monitor's rows
# are spread over the table) or monitor by monitor (each one's rows together: kinder to reads).
ROLLUPS = f"""
INSERT INTO checks_hourly
    (monitor_id, hour, checks, checks_up, latency_n, latency_sum, latency_max, latency_hist)
SELECT m, $3::timestamptz + h * interval '1 hour', v.checks, v.up, v.n, v.total, v.top, v.hist
FROM generate_series($1::bigint, $2::bigint) m
CROSS JOIN generate_series($4::int, $5::int) h
JOIN bench_variants v ON v.i = (m * 7919 + h * 104729) % {VARIANTS}
ORDER BY {{order}}
"""
ORDERS = {"time": "h, m", "monitor": "m, h"}


@dataclass
class Loaded:
    account_id: int
    key: str
    monitor_ids: list[int]
    now: datetime  # the database's now() when the rows were generated
    seconds: dict[str, float] = field(default_factory=dict)  # what each step took
    rows: dict[str, int] = field(default_factory=dict)


def _variants(seed: int) -> list[tuple[int, int, int, int, float, float, list[int]]]:
    """(index, checks, up, latency_n, latency_sum, latency_max, hist) per variant: log-normal
    latencies around a median of 30..400 ms; one variant in eight has a few failures."""
    rng = random.Random(seed)
    out = []
    for index in range(VARIANTS):
        median = rng.uniform(30, 400)
        latencies = [rng.lognormvariate(0, 0.5) * median for _ in range(CHECKS_PER_HOUR)]
        failed = rng.randint(1, 6) if index % 8 == 7 else 0
        hist = [0] * rollups.N_BUCKETS
        for ms in latencies:
            hist[rollups.bucket_of(ms)] += 1
        out.append((index, CHECKS_PER_HOUR, CHECKS_PER_HOUR - failed, len(latencies), sum(latencies),
                    max(latencies), hist))  # fmt: skip
    return out


async def _timed(seconds: dict[str, float], name: str, coro: object) -> None:
    started = time.monotonic()
    await coro  # type: ignore[misc]
    seconds[name] = round(time.monotonic() - started, 2)


async def load(
    dsn: str,
    *,
    monitors: int,
    days: int,
    incidents: int,
    raw_edges: bool,
    jobs: int,
    order: str,
    seed: int,
) -> Loaded:
    conn = await asyncpg.connect(dsn)
    try:
        return await _load(conn, dsn, monitors, days, incidents, raw_edges, jobs, order, seed)
    finally:
        await conn.close()


async def _load(
    conn: asyncpg.Connection,
    dsn: str,
    monitors: int,
    days: int,
    incidents: int,
    raw_edges: bool,
    jobs: int,
    order: str,
    seed: int,
) -> Loaded:
    seconds: dict[str, float] = {}
    await _timed(seconds, "truncate", conn.execute(f"TRUNCATE {', '.join(TABLES)} RESTART IDENTITY CASCADE"))
    now: datetime = await conn.fetchval("SELECT now()")
    account_id = await accounts.create_account(conn, ACCOUNT)
    key = (await api_keys.create_key(conn, account_id, "bench")).key

    started = time.monotonic()
    # Created just before the first rollup hour, so every window is fully within its life.
    await conn.execute(
        """INSERT INTO monitors (account_id, name, url, interval_seconds, timeout_seconds, created_at, tags)
           SELECT $1, 'bench-' || n, 'https://site-' || n || '.example/health', 30, 10,
                  $2::timestamptz - make_interval(days => $3 + 1), ARRAY['team-' || (n % 10)]
           FROM generate_series(1, $4) n""",
        account_id,
        now,
        days,
        monitors,
    )
    ids = [
        r["id"]
        for r in await conn.fetch("SELECT id FROM monitors WHERE account_id = $1 ORDER BY id", account_id)
    ]
    # One monitor in a hundred is down now (with its ongoing incident, below).
    await conn.execute(
        """INSERT INTO monitor_state (monitor_id, status, last_check_at, last_ok, changed_at)
           SELECT id, CASE WHEN id % 100 = 0 THEN 'down' ELSE 'up' END, $2::timestamptz, id % 100 <> 0,
                  $2::timestamptz - interval '1 hour'
           FROM monitors WHERE account_id = $1""",
        account_id,
        now,
    )
    seconds["monitors"] = round(time.monotonic() - started, 2)

    await conn.execute("DROP TABLE IF EXISTS bench_variants")
    await conn.execute(
        """CREATE UNLOGGED TABLE bench_variants (i int PRIMARY KEY, checks int, up int, n int,
                                                 total float8, top float8, hist int[])"""
    )
    await conn.executemany("INSERT INTO bench_variants VALUES ($1, $2, $3, $4, $5, $6, $7)", _variants(seed))
    first_hour = now.replace(minute=0, second=0, microsecond=0) - timedelta(days=days)
    hours = days * 24 + 1  # through the current hour

    # The key goes for the load and comes back built once (as the migrations define it): much
    # faster than maintaining it row by row. A load interrupted before has left it dropped.
    await conn.execute("CREATE TABLE IF NOT EXISTS bench_meta (name text PRIMARY KEY, value text)")
    key_sql = await conn.fetchval(
        "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = $1", PKEY
    ) or await conn.fetchval("SELECT value FROM bench_meta WHERE name = 'pkey'")
    await _remember(conn, "pkey", key_sql)
    await conn.execute(f"ALTER TABLE checks_hourly DROP CONSTRAINT IF EXISTS {PKEY}")
    started = time.monotonic()
    # About 250,000 rows per statement: a day of every monitor, or every hour of a few monitors.
    if order == "time":
        step = max(1, 250_000 // len(ids))
        parts = [(ids[0], ids[-1], h, min(h + step, hours) - 1) for h in range(0, hours, step)]
    else:
        step = max(1, 250_000 // hours)
        parts = [(lo, min(lo + step - 1, ids[-1]), 0, hours - 1) for lo in range(ids[0], ids[-1] + 1, step)]
    sql = ROLLUPS.format(order=ORDERS[order])
    queue: asyncio.Queue[tuple[int, int, int, int]] = asyncio.Queue()
    for item in parts:
        queue.put_nowait(item)

    async def worker() -> None:
        c = await asyncpg.connect(dsn)
        try:
            await c.execute("SET synchronous_commit = off")
            while not queue.empty():
                lo, hi, h0, h1 = queue.get_nowait()
                await c.execute(sql, lo, hi, first_hour, h0, h1)
        finally:
            await c.close()

    await asyncio.gather(*(worker() for _ in range(jobs)))
    seconds["rollups_insert"] = round(time.monotonic() - started, 2)
    await _timed(
        seconds,
        "rollups_primary_key",
        conn.execute(f"ALTER TABLE checks_hourly ADD CONSTRAINT {PKEY} {key_sql}"),
    )
    await conn.execute("DROP TABLE bench_variants")
    # The days beside the hours, as the scheduler's writer keeps them.
    await conn.execute("TRUNCATE checks_daily")
    await _timed(seconds, "rollups_daily", conn.execute(rollups.DAILY_FROM_HOURLY, ids))

    started = time.monotonic()
    rng_seed = (seed % 1000) / 1000.0
    await conn.execute("SELECT setseed($1)", rng_seed)
    # ``incidents`` closed ones per monitor, 2..60 minutes long, anywhere in the period.
    await conn.execute(
        """INSERT INTO incidents (monitor_id, started_at, ended_at, status_code, error)
           SELECT m, t, t + d, 500, 'HTTP 500'
           FROM (SELECT m, $2::timestamptz - random() * make_interval(days => $3) AS t,
                        (2 + random() * 58) * interval '1 minute' AS d
                 FROM generate_series($4::bigint, $5::bigint) m, generate_series(1, $1) j) s""",
        incidents,
        now,
        days,
        ids[0],
        ids[-1],
    )
    # The monitors down now have an ongoing incident of up to six hours.
    await conn.execute(
        """INSERT INTO incidents (monitor_id, started_at, status_code, error)
           SELECT id, $1::timestamptz - random() * interval '6 hours', 500, 'HTTP 500'
           FROM monitors WHERE id BETWEEN $2 AND $3 AND id % 100 = 0""",
        now,
        ids[0],
        ids[-1],
    )
    # One monitor in fifty was paused for a day at some point.
    await conn.execute(
        """INSERT INTO monitor_pauses (monitor_id, started_at, ended_at)
           SELECT id, t, t + interval '1 day'
           FROM (SELECT id, $1::timestamptz - (2 + random() * ($4 - 3)) * interval '1 day' AS t
                 FROM monitors WHERE id BETWEEN $2 AND $3 AND id % 50 = 1) s""",
        now,
        ids[0],
        ids[-1],
        days,
    )
    seconds["incidents_pauses"] = round(time.monotonic() - started, 2)

    if raw_edges:
        # Raw checks where the API reads them: the partial hours at the edges of the windows
        # measured (the current hour; 30 and ``days`` days ago), an hour either side.
        started = time.monotonic()
        edges = [now - timedelta(hours=2)] + [now - timedelta(days=d, hours=1) for d in sorted({30, days})]
        spans = [(e, 2 * CHECKS_PER_HOUR) for e in edges]
        for lo in range(ids[0], ids[-1] + 1, 1000):
            hi = min(lo + 999, ids[-1])
            for edge, count in spans:
                await conn.execute(
                    """INSERT INTO checks (time, monitor_id, ok, status_code, latency_ms)
                       SELECT $3::timestamptz + s * interval '30 seconds' + (m % 30) * interval '1 second',
                              m, true, 200, 20 + (m % 200)
                       FROM generate_series($1::bigint, $2::bigint) m, generate_series(0, $4 - 1) s
                       ORDER BY 1""",
                    lo,
                    hi,
                    edge,
                    count,
                )
        seconds["raw_edge_checks"] = round(time.monotonic() - started, 2)

    await _timed(seconds, "vacuum_analyze", _vacuum(conn))
    await _remember(conn, "loaded_at", now.isoformat())
    rows = {
        table: int(await conn.fetchval(f"SELECT count(*) FROM {table}"))
        for table in ("monitors", "checks_hourly", "incidents", "monitor_pauses", "checks")
    }
    return Loaded(account_id, key, ids, now, seconds, rows)


async def _remember(conn: asyncpg.Connection, name: str, value: str) -> None:
    await conn.execute(
        "INSERT INTO bench_meta VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = $2", name, value
    )


async def existing(dsn: str, *, monitors: int, days: int) -> Loaded | None:
    """What an earlier load left, if it has this shape (for ``--reuse``); a fresh key to it."""
    conn = await asyncpg.connect(dsn)
    try:
        account_id = await accounts.account_id_by_name(conn, ACCOUNT)
        if account_id is None:
            return None
        ids = [
            r["id"]
            for r in await conn.fetch("SELECT id FROM monitors WHERE account_id = $1 ORDER BY id", account_id)
        ]
        rollup_rows = int(await conn.fetchval("SELECT count(*) FROM checks_hourly"))
        has_key = await conn.fetchval("SELECT 1 FROM pg_constraint WHERE conname = $1", PKEY)
        if len(ids) != monitors or rollup_rows != monitors * (days * 24 + 1) or not has_key:
            return None
        loaded_at = None
        if await conn.fetchval("SELECT to_regclass('bench_meta')") is not None:
            loaded_at = await conn.fetchval("SELECT value FROM bench_meta WHERE name = 'loaded_at'")
        if loaded_at is None:
            return None
        now = datetime.fromisoformat(loaded_at)
        key = (await api_keys.create_key(conn, account_id, "bench")).key
        rows = {
            table: int(await conn.fetchval(f"SELECT count(*) FROM {table}"))
            for table in ("monitors", "checks_hourly", "incidents", "monitor_pauses", "checks")
        }
        return Loaded(account_id, key, ids, now, {}, rows)
    finally:
        await conn.close()


async def _vacuum(conn: asyncpg.Connection) -> None:
    # Fresh statistics and a visibility map, as autovacuum would leave them on a settled table.
    for table in (
        "monitors",
        "monitor_state",
        "checks_hourly",
        "incidents",
        "monitor_pauses",
        "checks",
        "api_keys",
    ):
        await conn.execute(f"VACUUM (ANALYZE) {table}")


async def sizes(conn: asyncpg.Connection) -> dict[str, float]:
    """Total size (heap + indexes) of the tables the API reads, MiB."""
    out = {}
    for table in ("checks_hourly", "incidents", "monitors", "checks"):
        size = await conn.fetchval("SELECT hypertable_size($1)", table) if table == "checks" else None
        if size is None:
            size = await conn.fetchval("SELECT pg_total_relation_size($1::regclass)", table)
        out[table] = round(int(size) / 2**20, 1)
    return out
