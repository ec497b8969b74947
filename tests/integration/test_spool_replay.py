"""A spool replayed on the real database: what a killed writer had already written is not written
twice (rows, rollups, the incident, the alerts), what it had not is, and the dead member's row is
released. The kill is made to come between the commit and the watermark, the worst moment."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import msgpack
import pytest

from monitor import db as monitor_db
from monitor.models import CheckResult, MonitorSpec
from monitor.scheduler import replay, writer
from monitor.scheduler.judging import Judged
from monitor.scheduler.metrics import SchedulerMetrics
from monitor.scheduler.spool import Spool, segments, stem
from monitor.scheduler.state import NOTHING, Alert, Change, Outcome, State
from monitor.scheduler.writer import Writer

MonitorFactory = Callable[..., Awaitable[Any]]
T = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=5)


@pytest.fixture
async def pool(migrated: str, db: asyncpg.Connection) -> AsyncIterator[asyncpg.Pool]:
    pool = await monitor_db.create_pool(migrated, max_size=3, init=writer.prepare_connection)
    try:
        yield pool
    finally:
        await pool.close()


def _spool(directory: Path, name: str, database: str) -> Spool:
    spool = Spool(directory, name, database=database, max_bytes=1 << 20, metrics=SchedulerMetrics())
    spool.open()
    spool.start()
    return spool


class _Member:
    """A member row of the database (writer.Fence)."""

    def __init__(self, epoch: int) -> None:
        self.epoch: int | None = epoch
        self.lease = 10.0

    def lease_end(self) -> float:
        return time.time() + 60


async def test_a_spool_replayed_after_its_batch_was_written_doubles_nothing(
    pool: asyncpg.Pool, db: asyncpg.Connection, monitor_factory: MonitorFactory, tmp_path: Path
) -> None:
    monitor = await monitor_factory(url="http://x/", name="Site")
    mid = monitor["id"]
    spec = MonitorSpec(mid, "Site", "http", "http://x/", 60.0, 5.0, ((200, 299),), 1, False, False)
    epoch = await db.fetchval(
        """INSERT INTO scheduler_members (name, location, host, pid, lease_until)
           VALUES ('sched-dead', 'default', 'h', 1, now() + interval '1 minute') RETURNING epoch"""
    )
    database = str(await pool.fetchval(replay.DATABASE))
    dead_dir, new_dir = tmp_path / "dead", tmp_path / "new"
    spool = _spool(dead_dir, "sched-dead", database)
    spool.lease(epoch, time.time() + 60)
    w = Writer(pool, fence=_Member(epoch), spool=spool)

    down_at, up_at = T, T + timedelta(minutes=1)
    failed = CheckResult(mid, down_at, ok=False, status_code=500, error="status 500")
    down = Outcome((Change("down", down_at),), (Alert("down", down_at),))
    w.add(spec, failed, Judged(State("down", 1, down_at, told="down"), down, failed.error))
    healed = CheckResult(mid, up_at, ok=True, status_code=200, latency_ms=3.0)
    w.add(spec, healed, Judged(State("up"), Outcome((Change("up", up_at),), (Alert("up", up_at),)), None))
    segment = segments(dead_dir, stem("sched-dead"))[-1][1]
    await asyncio.sleep(0)  # the records of a turn of the loop are written at its end
    before_watermark = segment.read_bytes()  # what the file held when the flush committed
    assert await w.flush()
    w.add(
        spec,
        CheckResult(mid, up_at + timedelta(minutes=1), ok=True, status_code=200, latency_ms=4.0),
        Judged(State("up"), NOTHING, None),
    )
    await asyncio.sleep(0)
    after = segment.read_bytes()
    spool.close()  # the process dies: its lock is free, its last row never written

    # The kill came between the commit and the watermark: the spool holds all three results.
    watermark = msgpack.packb(["W", len(before_watermark)])
    assert watermark in after
    new_dir.mkdir()
    (new_dir / segment.name).write_bytes(after.replace(watermark, b"", 1))
    metrics = SchedulerMetrics()
    own = _spool(new_dir, "sched-new", database)
    replayed = await replay.replay_all(pool, own, lease=10.0, metrics=metrics)
    own.close()

    assert replayed == 3
    checks = await db.fetch("SELECT time FROM checks WHERE monitor_id = $1 ORDER BY time", mid)
    assert [r["time"] for r in checks] == [down_at, up_at, up_at + timedelta(minutes=1)]
    assert await db.fetchval("SELECT sum(checks) FROM checks_hourly WHERE monitor_id = $1", mid) == 3
    incidents = await db.fetch("SELECT started_at, ended_at FROM incidents WHERE monitor_id = $1", mid)
    assert [(r["started_at"], r["ended_at"]) for r in incidents] == [(down_at, up_at)]
    kinds = [
        r["kind"] for r in await db.fetch("SELECT kind FROM outbox WHERE monitor_id = $1 ORDER BY seq", mid)
    ]
    assert kinds == ["down", "up"]
    state = await db.fetchrow("SELECT status, last_check_at FROM monitor_state WHERE monitor_id = $1", mid)
    assert (state["status"], state["last_check_at"]) == ("up", up_at + timedelta(minutes=1))
    assert await db.fetchval("SELECT count(*) FROM scheduler_members WHERE epoch = $1", epoch) == 0
    assert list(new_dir.glob("*.spool")) == [], "replayed spools are deleted"
