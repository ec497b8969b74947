"""Retention on the edition we run here (Apache): the scheduler's drop_chunks path, for real."""

from datetime import UTC, datetime, timedelta

import asyncpg

from monitor import db as monitor_db
from monitor.scheduler import retention


async def test_apache_edition_drops_expired_chunks(db: asyncpg.Connection, migrated: str) -> None:
    now = datetime.now(UTC)
    rows = [(now - timedelta(days=100), 1, True), (now - timedelta(days=95), 1, False), (now, 1, True)]
    await db.copy_records_to_table("checks", records=rows, columns=("time", "monitor_id", "ok"))
    pool = await monitor_db.create_pool(migrated, min_size=1, max_size=2)
    try:
        assert await retention.setup(pool, 90) == "timer"
        async with pool.acquire() as conn:
            assert await retention.drop_old_chunks(conn, 90) == 2
            # Nothing more to drop the second time.
            assert await retention.drop_old_chunks(conn, 90) == 0
    finally:
        await pool.close()
    remaining = await db.fetch("SELECT time FROM checks")
    assert [r["time"] for r in remaining] == [rows[2][0]]


async def test_edition_is_apache_here(db: asyncpg.Connection) -> None:
    # If this fails, the Community path (add_retention_policy) can run for real here: test it too.
    assert await db.fetchval("SELECT current_setting('timescaledb.license')") == "apache"
