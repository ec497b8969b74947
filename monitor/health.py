"""Dependency pings for readiness, and the event-loop watchdog."""

from __future__ import annotations

import asyncio

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
    """Warn when the event loop did not run a 50 ms timer for more than 100 ms extra; runs
    until cancelled.

    A blocked loop delays every check at once; the warning names how long it was. The timer
    is a chain of loop callbacks, not a task: it runs twenty times a second in every process.
    """
    loop = asyncio.get_running_loop()
    handle: asyncio.TimerHandle | None = None

    def tick(due: float) -> None:
        nonlocal handle
        now = loop.time()
        stuck = now - due  # how long past its time the loop ran this timer
        if stuck > BLOCKED_THRESHOLD:
            blocked.inc()
            log.warning("event_loop.blocked", blocked_ms=round(stuck * 1000, 1))
        handle = loop.call_at(now + period, tick, now + period)

    start = loop.time() + period
    handle = loop.call_at(start, tick, start)
    try:
        await loop.create_future()  # until cancelled
    finally:
        handle.cancel()
