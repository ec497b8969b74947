"""The writer's batch statement on the real database: check rows, hourly and daily rollups and
monitor state, batch after batch; a batch sent twice counts once."""

from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest

from monitor import db as monitor_db
from monitor import rollups
from monitor.models import CheckResult, MonitorSpec
from monitor.scheduler import writer
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
    return MonitorSpec(monitor_id, "m", "http", "http://x/", 60.0, 5.0, ((200, 299),), 2, False, False)


def _result(monitor_id: int, at: datetime, ok: bool, latency: float | None) -> CheckResult:
    return CheckResult(monitor_id, at, ok, 200 if ok else None, latency, None if ok else "down")


async def _write(pool: asyncpg.Pool, rows: list[tuple[int, datetime, bool, float | None]]) -> None:
    w = Writer(pool)
    for monitor_id, at, ok, latency in rows:
        w.add(_spec(monitor_id), _result(monitor_id, at, ok, latency), UP, NOTHING)
    assert await w.flush()


async def test_rollups_accumulate_across_batches_by_utc_hour_and_day(
    pool: asyncpg.Pool, db: asyncpg.Connection, monitor_factory: MonitorFactory
) -> None:
    one, two = (await monitor_factory(url="http://x/"))["id"], (await monitor_factory(url="http://x/"))["id"]
    await _write(
        pool, [(one, T, True, 12.0), (one, T + timedelta(minutes=1), False, None), (two, T, True, 3.0)]
    )
    await _write(
        pool, [(one, T + timedelta(minutes=2), True, 8.0), (one, T + timedelta(hours=2), True, 700.0)]
    )
    hours = {(r["monitor_id"], r["hour"]): r for r in await db.fetch("SELECT * FROM checks_hourly")}
    days = {(r["monitor_id"], r["day"]): r for r in await db.fetch("SELECT * FROM checks_daily")}
    hour = hours[(one, T.replace(minute=0))]
    assert (hour["checks"], hour["checks_up"], hour["latency_n"], hour["latency_sum"]) == (3, 2, 2, 20.0)
    assert hour["latency_max"] == 12.0
    assert hour["latency_hist"][rollups.bucket_of(12.0)] == 1 and sum(hour["latency_hist"]) == 2
    # 22:30 and 00:30 the next day fall on two UTC days.
    first_day, next_day = T.replace(hour=0, minute=0), (T + timedelta(hours=2)).replace(hour=0, minute=0)
    assert days[(one, first_day)]["checks"] == 3 and days[(one, next_day)]["checks"] == 1
    assert days[(one, next_day)]["latency_max"] == 700.0 and sum(days[(one, next_day)]["latency_hist"]) == 1
    assert days[(two, first_day)]["latency_sum"] == 3.0
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
