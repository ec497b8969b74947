"""The writer's batch statement on the real database: check rows, hourly and daily rollups and
monitor state, batch after batch; a batch sent twice counts once; the latencies of successful
checks only, and what migration 018 made of the rollups written before it."""

import shutil
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from monitor import db as monitor_db
from monitor import rollups
from monitor.models import CheckResult, MonitorSpec
from monitor.scheduler import writer
from monitor.scheduler.judging import Judged
from monitor.scheduler.state import NOTHING, State
from monitor.scheduler.writer import Writer

T = datetime(2026, 3, 1, 22, 30, tzinfo=UTC)
UP = State("up", 0, None)
MonitorFactory = Callable[..., Awaitable[Any]]


@pytest.fixture
async def pool(migrated: str, db: asyncpg.Connection) -> AsyncIterator[asyncpg.Pool]:
    pool = await monitor_db.create_pool(migrated, max_size=2, init=writer.prepare_connection)
    try:
        yield pool
    finally:
        await pool.close()


def _spec(monitor_id: int) -> MonitorSpec:
    return MonitorSpec(monitor_id, "m", "http", "http://x/", 60.0, 5.0, 2, False)


def _result(monitor_id: int, at: datetime, ok: bool, latency: float | None) -> CheckResult:
    return CheckResult(monitor_id, at, ok, 200 if ok else None, latency, None if ok else "down")


async def _write(pool: asyncpg.Pool, rows: list[tuple[int, datetime, bool, float | None]]) -> None:
    w = Writer(pool)
    for monitor_id, at, ok, latency in rows:
        result = _result(monitor_id, at, ok, latency)
        w.add(_spec(monitor_id), result, Judged(UP, NOTHING, result.error))
    assert await w.flush()


async def test_rollups_accumulate_across_batches_by_utc_hour_and_day(
    pool: asyncpg.Pool, db: asyncpg.Connection, monitor_factory: MonitorFactory
) -> None:
    one, two = (await monitor_factory(url="http://x/"))["id"], (await monitor_factory(url="http://x/"))["id"]
    await _write(
        pool, [(one, T, True, 12.0), (one, T + timedelta(minutes=1), False, None), (two, T, True, 3.0)]
    )
    # A failure's duration (a refused connection's 0.4 ms, a 500 after 900 ms) is counted as a
    # check, not as a response time.
    await _write(
        pool,
        [(one, T + timedelta(minutes=2), True, 8.0), (one, T + timedelta(minutes=3), False, 0.4),
         (one, T + timedelta(minutes=4), False, 900.0), (one, T + timedelta(hours=2), True, 700.0),
         (two, T + timedelta(hours=2), False, 0.3)],
    )  # fmt: skip
    hours = {(r["monitor_id"], r["hour"]): r for r in await db.fetch("SELECT * FROM checks_hourly")}
    days = {(r["monitor_id"], r["day"]): r for r in await db.fetch("SELECT * FROM checks_daily")}
    hour = hours[(one, T.replace(minute=0))]
    assert (hour["checks"], hour["checks_up"], hour["latency_n"], hour["latency_sum"]) == (5, 2, 2, 20.0)
    assert hour["latency_max"] == 12.0
    assert hour["latency_hist"][rollups.bucket_of(12.0)] == 1 and sum(hour["latency_hist"]) == 2
    # An hour of failures only has no response time at all.
    failed = hours[(two, (T + timedelta(hours=2)).replace(minute=0))]
    assert (failed["checks"], failed["checks_up"], failed["latency_n"], failed["latency_sum"]) == (1, 0, 0, 0)
    assert failed["latency_max"] is None and sum(failed["latency_hist"]) == 0
    # 22:30 and 00:30 the next day fall on two UTC days.
    first_day, next_day = T.replace(hour=0, minute=0), (T + timedelta(hours=2)).replace(hour=0, minute=0)
    assert days[(one, first_day)]["checks"] == 5 and days[(one, next_day)]["checks"] == 1
    assert days[(one, first_day)]["latency_n"] == 2 and days[(one, first_day)]["latency_max"] == 12.0
    assert days[(one, next_day)]["latency_max"] == 700.0 and sum(days[(one, next_day)]["latency_hist"]) == 1
    assert days[(two, first_day)]["latency_sum"] == 3.0
    assert (days[(two, next_day)]["checks"], days[(two, next_day)]["latency_n"]) == (1, 0)
    # The days agree with the hours they were made from.
    rebuilt = await db.fetch(
        """SELECT monitor_id, date_bin('1 day', hour, 'epoch') AS day, sum(checks) AS checks
           FROM checks_hourly GROUP BY 1, 2"""
    )
    assert {(r["monitor_id"], r["day"]): r["checks"] for r in rebuilt} == {
        k: r["checks"] for k, r in days.items()
    }
    state = await db.fetchrow("SELECT * FROM monitor_state WHERE monitor_id = $1", one)
    assert state["last_check_at"] == T + timedelta(hours=2) and state["last_latency_ms"] == 700.0


async def test_a_batch_written_twice_counts_once(
    pool: asyncpg.Pool, db: asyncpg.Connection, monitor_factory: MonitorFactory
) -> None:
    # What a batch whose commit was lost in transit looks like when it is sent again.
    one = (await monitor_factory(url="http://x/"))["id"]
    batch = [(one, T, True, 12.0), (one, T + timedelta(minutes=1), True, 14.0)]
    await _write(pool, batch)
    await _write(pool, [*batch, (one, T + timedelta(minutes=2), True, 16.0)])
    assert await db.fetchval("SELECT count(*) FROM checks WHERE monitor_id = $1", one) == 3
    hour = await db.fetchrow("SELECT * FROM checks_hourly WHERE monitor_id = $1", one)
    assert (hour["checks"], hour["latency_sum"], sum(hour["latency_hist"])) == (3, 42.0, 3)


@pytest.mark.parametrize("latency", [0.0, 5.0, 5.001, 10.0, 29999.0, 30000.0, 30000.5, 120000.0])
async def test_the_database_histogram_uses_the_same_buckets_as_bucket_of(
    pool: asyncpg.Pool, db: asyncpg.Connection, monitor_factory: MonitorFactory, latency: float
) -> None:
    one = (await monitor_factory(url="http://x/"))["id"]
    await _write(pool, [(one, T, True, latency)])
    hist = await db.fetchval("SELECT latency_hist FROM checks_hourly WHERE monitor_id = $1", one)
    assert len(hist) == rollups.N_BUCKETS
    assert hist[rollups.bucket_of(latency)] == 1 and sum(hist) == 1


# -- rows written before 018 -----------------------------------------------------------------

REPO = Path(__file__).resolve().parents[2]


def _old_row(monitor_id: int, hour: datetime, checks: list[tuple[bool, float]]) -> tuple[Any, ...]:
    """A rollup row as written before 018: every check's latency counted, failed ones too."""
    latencies = [ms for _, ms in checks]
    hist = [0] * rollups.N_BUCKETS
    for ms in latencies:
        hist[rollups.bucket_of(ms)] += 1
    up = sum(ok for ok, _ in checks)
    return (monitor_id, hour, len(checks), up, len(latencies), sum(latencies), max(latencies), hist)


async def test_migration_018_keeps_only_successful_latencies_in_older_rows(
    empty_database: str, tmp_path: Path
) -> None:
    before = tmp_path / "sql"
    before.mkdir()
    for path in sorted((REPO / "sql").glob("*.sql")):
        if int(path.name[:3]) < 18:
            shutil.copy(path, before / path.name)
    await monitor_db.migrate(empty_database, before)
    conn = await monitor_db.connect(empty_database)
    try:
        day_x = T.replace(hour=0, minute=0)
        day_y, day_z = day_x - timedelta(days=100), day_x - timedelta(days=101)
        a, b = day_x + timedelta(hours=10), day_x + timedelta(hours=11)
        c, d, e = day_y + timedelta(hours=3), day_y + timedelta(hours=4), day_z + timedelta(hours=5)
        hours = {
            a: [(True, 100.0), (True, 120.0), (False, 2.0)],  # both, its raw checks kept
            b: [(False, 1.0), (False, 3.0)],  # failures only, raw kept
            c: [(True, 100.0), (False, 5.0)],  # both, raw checks gone (retention)
            d: [(True, 80.0)],  # all up, raw gone
            e: [(False, 0.5)],  # failures only, raw gone
        }
        await conn.executemany(
            """INSERT INTO checks_hourly (monitor_id, hour, checks, checks_up, latency_n, latency_sum,
                   latency_max, latency_hist) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)""",
            [_old_row(7, hour, checks) for hour, checks in hours.items()],
        )
        await conn.execute(rollups.DAILY_FROM_HOURLY, [7])
        await conn.executemany(
            "INSERT INTO checks (time, monitor_id, ok, latency_ms) VALUES ($1, 7, $2, $3)",
            [
                (hour + i * timedelta(minutes=1), ok, ms)
                for hour in (a, b)
                for i, (ok, ms) in enumerate(hours[hour])
            ],
        )
        assert (await monitor_db.migrate(empty_database))[0] == "018_latency_of_successes.sql"

        def figures(row: asyncpg.Record) -> tuple[Any, ...]:
            return (row["checks"], row["checks_up"], row["latency_n"], row["latency_sum"], row["latency_max"],
                    sum(row["latency_hist"]))  # fmt: skip

        got = {r["hour"]: figures(r) for r in await conn.fetch("SELECT * FROM checks_hourly")}
        assert got == {
            a: (3, 2, 2, 220.0, 120.0, 2),  # recomputed from its raw checks
            b: (2, 0, 0, 0.0, None, 0),  # no success: no response time
            c: (2, 1, 2, 105.0, 100.0, 2),  # as it was: nothing to recompute it from
            d: (1, 1, 1, 80.0, 80.0, 1),  # all up: it was right
            e: (1, 0, 0, 0.0, None, 0),
        }
        hist = await conn.fetchval("SELECT latency_hist FROM checks_hourly WHERE hour = $1", a)
        assert hist[rollups.bucket_of(100.0)] == hist[rollups.bucket_of(120.0)] == 1
        days = {r["day"]: figures(r) for r in await conn.fetch("SELECT * FROM checks_daily")}
        assert days == {
            day_x: (5, 2, 2, 220.0, 120.0, 2),  # summed again from its hours
            day_y: (3, 2, 3, 185.0, 100.0, 3),
            day_z: (1, 0, 0, 0.0, None, 0),
        }
    finally:
        await conn.close()


def test_migration_018_buckets_latencies_as_the_writer_does() -> None:
    # The migration's SQL is written out; its histogram must be the one the writer's code makes.
    sql = "".join((REPO / "sql" / "018_latency_of_successes.sql").read_text().split())
    assert "".join(rollups.histogram("c.latency_ms", "c.ok").split()) in sql
