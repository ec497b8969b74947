"""The workers' registry in Redis: each live worker's heartbeat, for ``monitor cluster status``.

A worker writes ``keys.WORKER_PREFIX + id`` (JSON: id, host, pid, kinds, concurrency, running
jobs, started, seen) every ``keys.WORKER_HEARTBEAT_SECONDS`` with an expiry of
``keys.WORKER_TTL_SECONDS``, and adds its id to ``keys.WORKERS_SET``: a worker that dies drops
out of the listing when its key expires; the reader prunes such ids from the set.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import redis.asyncio as aioredis

from monitor import keys


@dataclass
class Presence:
    id: str
    host: str
    pid: int
    kinds: list[str]
    concurrency: int
    started: float
    running: list[dict[str, Any]] = field(default_factory=list)  # {"kind", "monitor_id", "job_id"}
    seen: float = 0.0

    async def beat(self, redis: aioredis.Redis, running: Callable[[], list[dict[str, Any]]]) -> None:
        """Say this worker is alive, with what it runs now."""
        self.running = running()
        self.seen = time.time()
        async with redis.pipeline(transaction=True) as pipe:
            pipe.set(keys.WORKER_PREFIX + self.id, json.dumps(asdict(self)), ex=keys.WORKER_TTL_SECONDS)
            pipe.sadd(keys.WORKERS_SET, self.id)
            await pipe.execute()

    async def leave(self, redis: aioredis.Redis) -> None:
        async with redis.pipeline(transaction=True) as pipe:
            pipe.delete(keys.WORKER_PREFIX + self.id)
            pipe.srem(keys.WORKERS_SET, self.id)
            await pipe.execute()


async def workers(redis: aioredis.Redis) -> list[dict[str, Any]]:
    """The live workers' heartbeats, by id; ids whose heartbeat expired are pruned."""
    ids = sorted(
        i.decode() if isinstance(i, bytes) else str(i) for i in await redis.smembers(keys.WORKERS_SET)
    )
    if not ids:
        return []
    values = await redis.mget([keys.WORKER_PREFIX + i for i in ids])
    found, gone = [], []
    for worker_id, value in zip(ids, values, strict=True):
        if value is None:
            gone.append(worker_id)
        else:
            found.append(json.loads(value))
    if gone:
        await redis.srem(keys.WORKERS_SET, *gone)
    return found
