"""``monitor cluster status``'s second half: the heavy-check workers and their queues, read from
Redis (the schedulers' half comes from the database)."""

from __future__ import annotations

import asyncio
from typing import Any

import click

from monitor import config
from monitor.cli_support import print_rows

WORKER_COLUMNS = {"id": "WORKER", "host": "HOST", "pid": "PID", "kinds": "KINDS", "running": "RUNNING",
                  "seen_s_ago": "SEEN (S AGO)"}  # fmt: skip
QUEUE_COLUMNS = {"kind": "KIND", "waiting": "WAITING", "running": "RUNNING"}


async def _read(settings: config.Settings) -> tuple[list[Any], list[Any]]:
    # Imported here: the check types and Redis are not every command's business.
    from monitor import redisconn
    from monitor.checks import REGISTRY
    from monitor.worker.status import heavy_status

    kinds = [kind for kind in REGISTRY.kinds if REGISTRY.get(kind).heavy]
    redis = redisconn.from_settings(settings, socket_timeout=5, socket_connect_timeout=5)
    try:
        return await heavy_status(redis, kinds)
    finally:
        await redis.aclose()


def echo_workers(settings: config.Settings) -> None:
    """The workers (id, host, kinds, running of concurrency, last heartbeat) and each heavy
    kind's queue (waiting, running), as tables; a line saying why when they cannot be read."""
    click.echo("")
    if settings.redis_url is None:
        click.echo("workers: MONITOR_REDIS_URL is not set; the heavy-check queues are not shown")
        return
    try:
        found, queues = asyncio.run(_read(settings))
    except Exception as exc:  # an unreachable Redis must not hide the schedulers above
        click.echo(f"workers: Redis unreachable ({type(exc).__name__}); the heavy-check queues are not shown")
        return
    print_rows(found, WORKER_COLUMNS, as_json=False, none="no worker is running (`monitor worker`)")
    click.echo("")
    print_rows(queues, QUEUE_COLUMNS, as_json=False, none="no heavy check type in this version: no queue")
