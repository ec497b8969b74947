"""Rows for status page and badge tests, written straight to the database: hourly rollups (and
the daily ones made from them, as the scheduler keeps them), incidents and monitor states.

A status page reads only rollups, incidents, pauses, maintenance and states, so a data set of
those (no raw checks) fixes every figure it shows; the API's uptime for whole hours and days
reads the same rows, which is what lets a test compare the two.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

import asyncpg

from monitor import rollups

H = timedelta(hours=1)
D = timedelta(days=1)


async def hours_of_checks(
    db: asyncpg.Connection,
    monitor_id: int,
    hours: Iterable[datetime],
    *,
    checks: int = 60,
    up: int | None = None,
    latency_ms: float = 100.0,
) -> None:
    """One hourly rollup per hour in ``hours``: ``checks`` checks, ``up`` of them up (all by
    default), each of those ``latency_ms`` long (the rollups hold successful checks' latencies
    only); then the monitor's daily rollups made from its hours."""
    up = checks if up is None else up
    hist = [0] * rollups.N_BUCKETS
    hist[rollups.bucket_of(latency_ms)] = up
    await db.executemany(
        """INSERT INTO checks_hourly (monitor_id, hour, checks, checks_up, latency_n, latency_sum,
                                      latency_max, latency_hist) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)""",
        [
            (monitor_id, hour, checks, up, up, latency_ms * up, latency_ms if up else None, hist)
            for hour in hours
        ],
    )
    await db.execute(rollups.DAILY_FROM_HOURLY, [monitor_id])


def day_hours(day: datetime) -> list[datetime]:
    """The 24 hours of the UTC day that starts at ``day``."""
    return [day + i * H for i in range(24)]


async def add_incident(
    db: asyncpg.Connection, monitor_id: int, started: datetime, ended: datetime | None
) -> None:
    await db.execute(
        """INSERT INTO incidents (monitor_id, started_at, ended_at, status_code, error)
           VALUES ($1, $2, $3, 500, 'HTTP 500 from 10.0.0.7')""",
        monitor_id,
        started,
        ended,
    )


async def set_state(db: asyncpg.Connection, monitor_id: int, status: str, since: datetime) -> None:
    await db.execute(
        "UPDATE monitor_state SET status = $2, changed_at = $3, last_check_at = $3 WHERE monitor_id = $1",
        monitor_id,
        status,
        since,
    )
