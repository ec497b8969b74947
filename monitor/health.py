"""Dependency pings for readiness, and the event-loop watchdog."""

from __future__ import annotations

import asyncio
import time

import asyncpg
import redis.asyncio as aioredis
from prometheus_client import Counter
from redis.exceptions import RedisError

from monitor import logging as mlog

log = mlog.get(__name__)

BLOCKED_THRESHOLD = 0.1


async def ping_database(pool: asyncpg.Pool) -> bool:
    try:
        async with asyncio.timeout(2):
            async with pool.acquire() as conn:
                await conn.fetchval("SELECT 1")
        return True
    except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError):
        return False


async def ping_redis(redis: aioredis.Redis) -> bool:
    try:
        async with asyncio.timeout(2):
            return bool(await redis.ping())
    except (OSError, TimeoutError, RedisError):
        return False


async def watch_loop(blocked: Counter, period: float = 0.05) -> None:
    """Warn when the event loop did not run a 50 ms timer for more than 100 ms extra.

    A blocked loop delays every check at once; the warning names how long it was.
    """
    loop = asyncio.get_running_loop()
    while True:
        before = loop.time()
        await asyncio.sleep(period)
        # time.monotonic and loop.time share a clock; the extra wait is how long the loop was stuck.
        stuck = time.monotonic() - before - period
        if stuck > BLOCKED_THRESHOLD:
            blocked.inc()
            log.warning("event_loop.blocked", blocked_ms=round(stuck * 1000, 1))
