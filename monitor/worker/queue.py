"""A worker's hold on the heavy kinds' streams: its consumer in the ``workers`` group of each.

Everything a worker does with Redis Streams, and nothing else: the groups made (again when
Redis comes back without its data), new jobs read (XREADGROUP over every kind at once), jobs
idle past the claim threshold taken over (XAUTOCLAIM: a dead worker's), the jobs in hand kept
ours (XCLAIM ... JUSTID resets their idle time; one another worker took meanwhile is reported
lost, so its run can stop), the reply sent before the job is acknowledged and deleted, and
the jobs in hand handed back at a stop (their idle time set past any threshold, so the next
worker that looks takes them at once).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import ResponseError

from monitor import keys
from monitor.checks.jobs import result_json
from monitor.models import CheckResult

Fields = dict[Any, Any]
Entry = tuple[str, str, Fields]  # (kind, entry id, fields)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class WorkQueue:
    """``consumer`` of the workers' group on the streams of ``kinds``."""

    def __init__(
        self, redis: aioredis.Redis, consumer: str, kinds: Sequence[str], *, claim_idle: float
    ) -> None:
        self._redis = redis
        self.consumer = consumer
        self.kinds = tuple(kinds)
        self.claim_idle = claim_idle

    async def make_groups(self) -> None:
        for kind in self.kinds:
            try:
                await self._redis.xgroup_create(
                    keys.work_stream(kind), keys.WORK_GROUP, id="0", mkstream=True
                )
            except ResponseError as exc:
                if "BUSYGROUP" not in str(exc):
                    raise

    async def read(self, count: int, block_ms: int) -> list[Entry]:
        """Up to ``count`` new jobs of any kind, waiting at most ``block_ms`` for one."""
        streams: dict[Any, Any] = {keys.work_stream(kind): ">" for kind in self.kinds}
        reply: Any = await self._redis.xreadgroup(
            keys.WORK_GROUP, self.consumer, streams, count=count, block=block_ms
        )
        return [
            (_text(stream).removeprefix(keys.WORK_STREAM_PREFIX), _text(entry_id), fields)
            for stream, items in reply or []
            for entry_id, fields in items
            if fields
        ]

    async def take_over(self, count: int) -> list[Entry]:
        """Up to ``count`` jobs of any kind idle longer than the claim threshold, now ours."""
        taken: list[Entry] = []
        idle_ms = int(self.claim_idle * 1000)
        for kind in self.kinds:
            if len(taken) >= count:
                break
            reply: Any = await self._redis.xautoclaim(
                keys.work_stream(kind),
                keys.WORK_GROUP,
                self.consumer,
                min_idle_time=idle_ms,
                start_id="0-0",
                count=count - len(taken),
            )
            taken.extend((kind, _text(i), f) for i, f in reply[1] if f)
        return taken

    async def renew(self, in_hand: Iterable[tuple[str, str]]) -> set[tuple[str, str]]:
        """Keep the jobs ``in_hand`` ((kind, entry id)) ours; those no longer ours (another
        worker took them over, or they are gone) are returned."""
        by_kind: dict[str, list[str]] = {}
        for kind, entry_id in in_hand:
            by_kind.setdefault(kind, []).append(entry_id)
        lost: set[tuple[str, str]] = set()
        for kind, ids in by_kind.items():
            stream = keys.work_stream(kind)
            pending: Any = await self._redis.xpending_range(
                stream,
                keys.WORK_GROUP,
                min="-",
                max="+",
                count=max(100, 2 * len(ids)),
                consumername=self.consumer,
            )
            ours = {_text(p["message_id"]) for p in pending}
            keep = [i for i in ids if i in ours]
            lost.update((kind, i) for i in ids if i not in ours)
            if keep:
                kept: Any = await self._redis.xclaim(
                    stream,
                    keys.WORK_GROUP,
                    self.consumer,
                    min_idle_time=0,
                    message_ids=list[Any](keep),
                    justid=True,
                )
                found = {_text(i) for i in kept}
                lost.update((kind, i) for i in keep if i not in found)  # deleted meanwhile
        return lost

    async def answer(self, kind: str, entry_id: str, job_id: str, reply: str, result: CheckResult) -> None:
        """Send the reply, then acknowledge and delete the job (done once it is answered)."""
        body = json.dumps({"job": job_id, "result": result_json(result)}, separators=(",", ":"))
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.xadd(reply, {keys.WORK_REPLY_FIELD: body}, maxlen=keys.WORK_REPLY_MAXLEN, approximate=True)
            pipe.expire(reply, keys.WORK_REPLY_TTL_SECONDS)
            await pipe.execute()
        await self.done(kind, entry_id)

    async def done(self, kind: str, entry_id: str) -> None:
        """Acknowledge and delete a job (answered, or unreadable)."""
        stream = keys.work_stream(kind)
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.xack(stream, keys.WORK_GROUP, entry_id)
            pipe.xdel(stream, entry_id)
            await pipe.execute()

    async def hand_back(self, in_hand: Iterable[tuple[str, str]]) -> None:
        """Make the jobs ``in_hand`` claimable by the next worker that looks."""
        for kind, entry_id in in_hand:
            await self._redis.xclaim(
                keys.work_stream(kind),
                keys.WORK_GROUP,
                self.consumer,
                min_idle_time=0,
                message_ids=[entry_id],
                idle=keys.HANDBACK_IDLE_MS,
                justid=True,
            )


async def depth(redis: aioredis.Redis, kind: str) -> tuple[int, int]:
    """(jobs waiting, jobs in workers' hands) of a kind's stream; (0, 0) when there is none."""
    stream = keys.work_stream(kind)
    length = int(await redis.xlen(stream))
    try:
        groups: Any = await redis.xinfo_groups(stream)
    except ResponseError:  # no such stream
        return length, 0
    pending = sum(int(g["pending"]) for g in groups if _text(g["name"]) == keys.WORK_GROUP)
    # Entries are deleted once answered: what is still in the stream and pending is running.
    return max(0, length - pending), pending
