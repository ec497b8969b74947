"""Outbox relay: publishes unpublished outbox rows to ``monitor:events``, in id order.

Rows are marked published only after XADD succeeded, so Redis being down delays
alerts and never loses them. A crash between XADD and the mark publishes a row
twice; the alerters' deliveries (event_id, channel) and their sending keys in Redis make
that harmless, even when the two copies reach two alerters at once.

Several schedulers each run a relay; one publishes at a time (a transaction-scoped advisory
lock held from the read to the mark), so two never add the same rows to the stream, and the
stream keeps the outbox's order. A relay that finds the lock taken tries again shortly (the
holder may have read just before new rows came); a holder frozen inside its transaction is
ended by the database after ``HOLD_SECONDS`` idle, and the lock with it.
"""

from __future__ import annotations

import asyncio

import asyncpg
import redis.asyncio as aioredis
from redis.exceptions import RedisError

from monitor import logging as mlog
from monitor.events import publish
from monitor.scheduler.metrics import SchedulerMetrics

log = mlog.get(__name__)

BATCH = 500
# New rows wake the relay (the writer, and the outbox's NOTIFY for rows others insert); the
# poll only catches a wake-up that was missed.
POLL_SECONDS = 30.0
RETRY_FIRST_SECONDS = 1.0
RETRY_MAX_SECONDS = 10.0
# The advisory lock key that lets one relay publish at a time ("relay" in ASCII).
RELAY_LOCK = 0x72656C6179
BUSY_RETRY_SECONDS = 0.5
HOLD_SECONDS = 15


class Relay:
    def __init__(
        self,
        pool: asyncpg.Pool,
        redis: aioredis.Redis,
        *,
        poll_interval: float = POLL_SECONDS,
        metrics: SchedulerMetrics | None = None,
    ) -> None:
        self._pool = pool
        self._redis = redis
        self._poll = poll_interval
        self._wake = asyncio.Event()
        self._closing = False
        self._task: asyncio.Task[None] | None = None
        self.published = 0
        self._metrics = metrics or SchedulerMetrics()

    def wake(self) -> None:
        self._wake.set()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="relay")

    async def _run(self) -> None:
        delay, retry = self._poll, RETRY_FIRST_SECONDS
        while not self._closing:
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=delay)
            except TimeoutError:
                pass
            self._wake.clear()
            if await self.relay_once():
                delay, retry = self._poll, RETRY_FIRST_SECONDS
            else:  # Redis or the database is away: try again soon, then less often
                delay, retry = retry, min(retry * 2, RETRY_MAX_SECONDS)

    async def relay_once(self) -> bool:
        """Publish everything pending; False if Redis or the database failed (rows wait)."""
        try:
            while True:
                async with self._pool.acquire(timeout=10) as conn, conn.transaction():
                    await conn.execute(
                        f"SET LOCAL idle_in_transaction_session_timeout = {HOLD_SECONDS * 1000}"
                    )
                    if not await conn.fetchval("SELECT pg_try_advisory_xact_lock($1)", RELAY_LOCK):
                        asyncio.get_running_loop().call_later(BUSY_RETRY_SECONDS, self._wake.set)
                        return True
                    rows = await conn.fetch(
                        "SELECT id, payload FROM outbox WHERE published_at IS NULL ORDER BY id LIMIT $1",
                        BATCH,
                    )
                    if not rows:
                        return True
                    stream_ids = await publish(self._redis, [r["payload"] for r in rows])
                    # The stream id tells the alerters where the event is (pending, unread, or lost).
                    await conn.execute(
                        """UPDATE outbox o SET published_at = now(), stream_id = u.stream_id
                           FROM unnest($1::bigint[], $2::text[]) AS u(id, stream_id) WHERE o.id = u.id""",
                        [r["id"] for r in rows],
                        stream_ids,
                    )
                self.published += len(rows)
                self._metrics.events_published.inc(len(rows))
                for row in rows:
                    log.info(
                        "event.published",
                        event_id=row["payload"]["event_id"],
                        monitor_id=row["payload"]["monitor_id"],
                        kind=row["payload"]["kind"],
                    )
        except (RedisError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError) as exc:
            log.warning("relay.failed", error=str(exc) or type(exc).__name__)
            return False

    async def close(self) -> None:
        self._closing = True
        self._wake.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
        await self.relay_once()
