"""What ``monitor cluster status`` shows of the heavy-check side: the live workers (from their
heartbeats, ``presence.py``) and each heavy kind's queue (``queue.depth``)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import redis.asyncio as aioredis

from monitor.worker.presence import workers
from monitor.worker.queue import depth


@dataclass(frozen=True)
class WorkerStatus:
    id: str
    host: str
    pid: int
    kinds: str
    running: str  # "1/2": jobs running of its concurrency
    seen_s_ago: float


@dataclass(frozen=True)
class QueueStatus:
    kind: str
    waiting: int  # jobs no worker has taken yet
    running: int  # jobs in a worker's hands (pending in the group)


async def heavy_status(
    redis: aioredis.Redis, kinds: Sequence[str]
) -> tuple[list[WorkerStatus], list[QueueStatus]]:
    now = time.time()
    found = [
        WorkerStatus(
            id=str(w["id"]),
            host=str(w["host"]),
            pid=int(w["pid"]),
            kinds=",".join(w.get("kinds") or []) or "-",
            running=f"{len(w.get('running') or [])}/{w.get('concurrency')}",
            seen_s_ago=round(max(0.0, now - float(w.get("seen") or now)), 1),
        )
        for w in await workers(redis)
    ]
    queues = []
    for kind in kinds:
        waiting, running = await depth(redis, kind)
        queues.append(QueueStatus(kind, waiting, running))
    return found, queues
