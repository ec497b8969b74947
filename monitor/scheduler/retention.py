"""Retention of raw checks: TimescaleDB's policy where the edition has it, else our timer.

The Community edition runs ``add_retention_policy`` as a background job. The
Apache edition refuses it ("not supported under the current apache license"), so
there the scheduler calls ``drop_chunks`` itself, hourly.

The audit log (sql/021) is an ordinary table: every scheduler deletes its rows older than
``MONITOR_AUDIT_RETENTION_DAYS`` hourly, in batches (a first sweep after a long stop may find
many), whatever the edition; two schedulers sweeping at once delete disjoint rows or nothing.
Browser checks' screenshots of an outage's start (sql/026) go the same way after
``MONITOR_SCREENSHOT_RETENTION_DAYS`` (``visual/store.py``: ``sweep``).
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Literal

import asyncpg

from monitor import db
from monitor import logging as mlog
from monitor.visual import store as screenshots

log = mlog.get(__name__)

Mode = Literal["policy", "timer"]
TIMER_PERIOD = timedelta(hours=1)


def choose_mode(license_name: str | None) -> Mode:
    """``timescaledb.license`` is 'timescale' on the Community edition, 'apache' otherwise."""
    return "policy" if (license_name or "").strip().lower() == "timescale" else "timer"


async def install_policy(conn: asyncpg.Connection, days: int) -> None:
    """Replace any existing policy with one for ``days``, so a changed setting takes effect."""
    async with conn.transaction():
        await conn.execute("SELECT remove_retention_policy('checks', if_exists => true)")
        await conn.execute("SELECT add_retention_policy('checks', make_interval(days => $1))", days)


async def drop_old_chunks(conn: asyncpg.Connection, days: int) -> int:
    dropped = await conn.fetch(
        "SELECT drop_chunks('checks', older_than => now() - make_interval(days => $1))", days
    )
    return len(dropped)


async def setup(pool: asyncpg.Pool, days: int) -> Mode:
    async with pool.acquire() as conn:
        mode = choose_mode(await conn.fetchval("SELECT current_setting('timescaledb.license', true)"))
        if mode == "policy":
            try:
                await install_policy(conn, days)
            except asyncpg.FeatureNotSupportedError as exc:
                log.warning("retention.policy_refused", error=str(exc))
                mode = "timer"
            except asyncpg.PostgresError as exc:
                if "license" not in str(exc):
                    raise
                log.warning("retention.policy_refused", error=str(exc))
                mode = "timer"
    log.info("retention.configured", mode=mode, days=days)
    return mode


async def run_timer(pool: asyncpg.Pool, days: int, period: timedelta = TIMER_PERIOD) -> None:
    """Drop expired chunks now and then every ``period``; failures are retried next time."""
    while True:
        try:
            async with pool.acquire(timeout=10) as conn:
                dropped = await drop_old_chunks(conn, days)
            if dropped:
                log.info("retention.chunks_dropped", chunks=dropped, days=days)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError) as exc:
            log.warning("retention.drop_failed", error=str(exc) or type(exc).__name__)
        await asyncio.sleep(period.total_seconds())


AUDIT_BATCH = 10_000


async def sweep_audit(pool: asyncpg.Pool, days: int) -> int:
    """Delete the audit rows older than ``days``, ``AUDIT_BATCH`` at a time: how many went."""
    return await db.delete_older(pool, "audit_log", "at", "true", days, AUDIT_BATCH)


async def run_audit_timer(pool: asyncpg.Pool, days: int, period: timedelta = TIMER_PERIOD) -> None:
    """Sweep the audit log now and then every ``period``; failures are retried next time."""
    while True:
        try:
            swept = await sweep_audit(pool, days)
            if swept:
                log.info("retention.audit_swept", rows=swept, days=days)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError) as exc:
            log.warning("retention.audit_sweep_failed", error=str(exc) or type(exc).__name__)
        await asyncio.sleep(period.total_seconds())


async def run_screenshot_timer(pool: asyncpg.Pool, days: int, period: timedelta = TIMER_PERIOD) -> None:
    """Sweep old outage screenshots now and then every ``period``; failures are retried next time."""
    while True:
        try:
            swept = await screenshots.sweep(pool, days)
            if swept:
                log.info("retention.screenshots_swept", rows=swept, days=days)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError) as exc:
            log.warning("retention.screenshot_sweep_failed", error=str(exc) or type(exc).__name__)
        await asyncio.sleep(period.total_seconds())
