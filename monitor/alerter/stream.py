"""The alerter's hold on ``monitor:events``: its consumer in the ``alerter`` group.

Redis Streams give a group of consumers each entry once, and keep an entry pending until it
is acknowledged; this module is everything the alerter does with that, and nothing else:

- **reading** new entries (XREADGROUP), the group made again when Redis comes back without its
  data (NOGROUP), errors waited out with a backoff;
- **taking over** what a dead consumer left pending longer than the claim idle time
  (XAUTOCLAIM), on start and every half of it, and at once when another alerter says it handed
  its entries back (a counter it increments, read once per read: one GET);
- **keeping** the entries in hand ours: their idle time is reset (XCLAIM to ourselves) every third
  of the claim idle time, so a live alerter, however long it waits for a rate limit or a retry,
  is never robbed of them;
- **acknowledging** (XACK), and telling whether an entry is anywhere at all (:meth:`Stream.lost`).

Which entries to accept, keep or hand back is the caller's (monitor/alerter/service.py): the
stream knows ids and fields, not events.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable
from contextlib import aclosing
from typing import Any

import asyncpg
import redis.asyncio as aioredis
from redis.exceptions import RedisError, ResponseError

from monitor import keys
from monitor import logging as mlog
from monitor.alerter.dispatch import stream_order

log = mlog.get(__name__)

# What a lost connection to Redis or PostgreSQL raises: waited out and tried again.
TRANSIENT = (RedisError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError)
READ_COUNT = 100
# Ids per XCLAIM: a few thousand entries in hand are renewed in a few round trips.
CLAIM_BATCH = 500

Fields = dict[Any, Any]
Accept = Callable[[str, Fields], Awaitable[None]]


def decode(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class Stream:
    """``consumer`` of the alerter group, through ``redis``; ``claim_idle`` (seconds): how long an
    entry may sit unrenewed in a consumer's hands before another takes it over. Stops its loops
    when ``stopping`` is set."""

    def __init__(
        self, redis: aioredis.Redis, consumer: str, *, claim_idle: float, stopping: asyncio.Event
    ) -> None:
        self._redis = redis
        self.consumer = consumer
        self._claim_idle = claim_idle
        self._stopping = stopping
        self._handback_seen: Any = None  # the counter as last read (None: not read yet)

    # -- the loops -------------------------------------------------------------------

    async def consume(self, accept: Accept, again: Callable[[], Iterable[tuple[str, Fields]]]) -> None:
        """Until stopped: take over what is due, offer ``accept`` the entries ``again`` names
        (those it put off), then what is new."""
        delay = 1.0
        group_ready = False
        next_reclaim = 0.0
        while not self._stopping.is_set():
            try:
                if not group_ready:
                    await self._ensure_group()
                    group_ready = True
                if await self._handback_announced() or time.monotonic() >= next_reclaim:
                    async with aclosing(self._reclaim()) as claimed:
                        async for entry_id, fields in claimed:
                            await accept(entry_id, fields)
                    next_reclaim = time.monotonic() + self._claim_idle / 2
                for entry_id, fields in list(again()):
                    await accept(entry_id, fields)
                for entry_id, fields in await self._read():
                    await accept(entry_id, fields)
                delay = 1.0
            except TRANSIENT as exc:
                if isinstance(exc, ResponseError) and "NOGROUP" in str(exc):
                    group_ready = False  # Redis restarted without its data: make the group again
                log.warning("alerter.read_failed", error=str(exc) or type(exc).__name__, retry_in_s=delay)
                await self.sleep(delay)
                delay = min(delay * 2, 10.0)

    async def keep_claims(
        self, in_hand: Callable[[], list[str]], also: Callable[[], Awaitable[None]]
    ) -> None:
        """Until stopped: reset the idle time of the entries ``in_hand`` names, then call ``also``
        (what else lapses with a claim), every third of the claim idle time."""
        while not self._stopping.is_set():
            await self.sleep(self._claim_idle / 3)
            ids = in_hand()
            if not ids:
                continue
            try:
                await self.claim(ids, 0)
                await also()
            except TRANSIENT as exc:
                log.warning("alerter.claim_refresh_failed", error=str(exc) or type(exc).__name__)

    async def sleep(self, seconds: float) -> None:
        """``seconds``, or less if stopped meanwhile."""
        try:
            await asyncio.wait_for(self._stopping.wait(), timeout=seconds)
        except TimeoutError:
            pass

    # -- the group -------------------------------------------------------------------

    async def _ensure_group(self) -> None:
        try:
            await self._redis.xgroup_create(keys.EVENTS_STREAM, keys.ALERTER_GROUP, id="0", mkstream=True)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    async def _handback_announced(self) -> bool:
        """Whether another alerter handed entries back since we last looked (one GET a read)."""
        seen = await self._redis.get(keys.HANDBACK_KEY)
        changed = self._handback_seen is not None and seen != self._handback_seen
        self._handback_seen = seen if seen is not None else b""
        return changed

    async def announce_hand_back(self) -> None:
        """Tell the other alerters to reclaim now (entries of ours became claimable)."""
        await self._redis.incr(keys.HANDBACK_KEY)

    async def _read(self) -> list[tuple[str, Fields]]:
        reply: Any = await self._redis.xreadgroup(
            keys.ALERTER_GROUP, self.consumer, {keys.EVENTS_STREAM: ">"}, count=READ_COUNT, block=1000
        )
        entries: list[tuple[str, Fields]] = []
        for _stream, items in reply or []:
            entries.extend((decode(i), f) for i, f in items if f)
        return entries

    async def _reclaim(self) -> AsyncGenerator[tuple[str, Fields], None]:
        """Take over entries a dead consumer left pending for longer than the idle threshold,
        one XAUTOCLAIM page at a time."""
        idle_ms = int(self._claim_idle * 1000)
        cursor = "0-0"
        while True:
            reply: Any = await self._redis.xautoclaim(
                keys.EVENTS_STREAM,
                keys.ALERTER_GROUP,
                self.consumer,
                min_idle_time=idle_ms,
                start_id=cursor,
                count=READ_COUNT,
            )
            cursor = decode(reply[0])
            claimed = [(decode(i), f) for i, f in reply[1] if f]
            if claimed:
                log.info("alerter.reclaimed", entries=len(claimed))
            for entry in claimed:
                yield entry
            if cursor == "0-0":
                return

    async def claim(self, ids: list[str], idle_ms: int) -> None:
        """Claim ``ids`` for ourselves with this idle time: 0 keeps them ours (no other alerter
        reclaims them), a very long one (keys.HANDBACK_IDLE_MS) hands them to the next alerter
        that reclaims."""
        for start in range(0, len(ids), CLAIM_BATCH):
            await self._redis.xclaim(
                keys.EVENTS_STREAM,
                keys.ALERTER_GROUP,
                self.consumer,
                min_idle_time=0,
                message_ids=list[Any](ids[start : start + CLAIM_BATCH]),
                idle=idle_ms,
                justid=True,
            )

    async def ack(self, entry_id: str) -> None:
        await self._redis.xack(keys.EVENTS_STREAM, keys.ALERTER_GROUP, entry_id)

    async def lost(self, stream_id: str) -> bool:
        """Whether the stream entry ``stream_id`` is nowhere: not pending in the group (no alerter
        holds it or will reclaim it), and not waiting to be read."""
        pending: Any = await self._redis.xpending_range(
            keys.EVENTS_STREAM, keys.ALERTER_GROUP, min=stream_id, max=stream_id, count=1
        )
        if pending:
            return False
        groups: Any = await self._redis.xinfo_groups(keys.EVENTS_STREAM)
        last = next(
            (decode(g["last-delivered-id"]) for g in groups if decode(g["name"]) == keys.ALERTER_GROUP),
            "0-0",
        )
        if stream_order(stream_id) <= stream_order(last):
            return True  # read and acknowledged without a final delivery, or gone
        return not await self._redis.xrange(keys.EVENTS_STREAM, min=stream_id, max=stream_id, count=1)
