"""The writer's rollup upsert on the real database: hours and days add up, batch after batch."""

from datetime import UTC, datetime, timedelta

import asyncpg

from monitor import rollups

T = datetime(2026, 3, 1, 22, 30, tzinfo=UTC)


async def test_hourly_and_daily_rollups_accumulate_across_batches(db: asyncpg.Connection) -> None:
    batch = [
        (1, T, True, 12.0),
        (1, T, False, None),
        (1, T + timedelta(hours=2), True, 700.0),
        (2, T, True, 3.0),
    ]
    for _ in range(2):  # the same checks twice: every figure doubles
        await rollups.upsert(db, rollups.aggregate(batch))
    hours = {(r["monitor_id"], r["hour"]): r for r in await db.fetch("SELECT * FROM checks_hourly")}
    days = {(r["monitor_id"], r["day"]): r for r in await db.fetch("SELECT * FROM checks_daily")}
    assert (
        hours[(1, T.replace(minute=0))]["checks"] == 4 and hours[(1, T.replace(minute=0))]["checks_up"] == 2
    )
    # 22:30 and 00:30 the next day fall on two UTC days.
    first_day, next_day = T.replace(hour=0, minute=0), (T + timedelta(hours=2)).replace(hour=0, minute=0)
    assert days[(1, first_day)]["checks"] == 4 and days[(1, next_day)]["checks"] == 2
    assert days[(1, next_day)]["latency_max"] == 700.0 and sum(days[(1, next_day)]["latency_hist"]) == 2
    assert days[(2, first_day)]["latency_sum"] == 6.0
    # The days agree with the hours they were made from.
    rebuilt = await db.fetch(
        """SELECT monitor_id, date_bin('1 day', hour, 'epoch') AS day, sum(checks) AS checks
           FROM checks_hourly GROUP BY 1, 2"""
    )
    assert {(r["monitor_id"], r["day"]): r["checks"] for r in rebuilt} == {
        k: r["checks"] for k, r in days.items()
    }
