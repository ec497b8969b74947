"""The one place a Redis client is made: a plain URL, or a master found through Sentinel.

``MONITOR_REDIS_URL`` is ``redis://``/``rediss://``/``unix://`` (redis-py's ``from_url``) or
``redis+sentinel://...`` (monitor/dsn.py). Through Sentinel the client is redis-py's
``Sentinel.master_for``: every new connection asks the sentinels where the master is, and a
connection to a server that answers ``READONLY`` (a master demoted to replica by a failover) is
dropped and raised as a ``ConnectionError``, so the callers' retry paths (the relay, the
alerter's reads and acks) take it as the connection error it is, and their next try reaches the
new master. redis-py retries a command itself too (3 times, with backoff) before the caller sees
the error.

Redis replicates asynchronously: a write the old master acknowledged in the moment before a
failover may never reach the new one. :func:`write_replicated` is the guard of the alerts
the relay publishes (their outbox rows are marked published only after it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline
from redis.asyncio.sentinel import Sentinel, SentinelConnectionPool
from redis.exceptions import ConnectionError as RedisConnectionError

from monitor import dsn
from monitor import logging as mlog
from monitor.config import Settings

log = mlog.get(__name__)

# How long the relay waits for the replica to acknowledge what it published (WAIT 1 <ms>): on
# loopback or a LAN an acknowledgement takes well under a millisecond; this long only when the
# replica is away or was just promoted.
REPLICATION_WAIT_MS = 2000


class SentinelRedis(aioredis.Redis):
    """A ``master_for`` client that closes its sentinels' connections with its own."""

    async def aclose(self, close_connection_pool: bool | None = None) -> None:
        await super().aclose(close_connection_pool)
        pool = self.connection_pool
        if isinstance(pool, SentinelConnectionPool):
            await pool.sentinel_manager.aclose()


def client(
    url: str,
    *,
    socket_timeout: float,
    socket_connect_timeout: float,
    sentinel_password: str | None = None,
) -> aioredis.Redis:
    """A client of ``url`` (plain or ``redis+sentinel://``); no I/O until its first command."""
    target = dsn.parse_redis(url)
    if target is None:
        return aioredis.Redis.from_url(
            url, socket_timeout=socket_timeout, socket_connect_timeout=socket_connect_timeout
        )
    timeouts: dict[str, Any] = {
        "socket_timeout": socket_timeout,
        "socket_connect_timeout": socket_connect_timeout,
    }
    sentinel = Sentinel(
        list(target.sentinels),
        sentinel_kwargs={**timeouts, "password": sentinel_password or None},
        **timeouts,
    )
    return sentinel.master_for(
        target.service,
        redis_class=SentinelRedis,
        db=target.db,
        username=target.username,
        password=target.password,
    )


def from_settings(
    settings: Settings, *, socket_timeout: float, socket_connect_timeout: float
) -> aioredis.Redis:
    """The client of ``MONITOR_REDIS_URL`` (and ``MONITOR_REDIS_SENTINEL_PASSWORD``)."""
    secret = settings.redis_sentinel_password
    return client(
        settings.redis_dsn,
        socket_timeout=socket_timeout,
        socket_connect_timeout=socket_connect_timeout,
        sentinel_password=secret.get_secret_value() if secret is not None else None,
    )


def describe(url: str) -> str:
    """``url`` for a log line: no password."""
    target = dsn.parse_redis(url)
    return target.describe() if target is not None else mlog.redact(url)


async def write_replicated(
    redis: aioredis.Redis,
    fill: Callable[[Pipeline], object],
    *,
    timeout_ms: int = REPLICATION_WAIT_MS,
) -> list[Any]:
    """Run the writes ``fill`` puts in a pipeline (one round trip) and return their replies,
    once they are on a replica too, or when no failover can lose them; raise
    ``ConnectionError`` when they may be lost, so the caller writes them again.

    Only through Sentinel does this wait (a plain client just runs the pipeline): ``WAIT 1``,
    on the pipeline's connection, answers 1 when the replica has the writes. 0 means the
    replica is away, or was just promoted and the server written to is the old master, whose
    writes the failover drops: the sentinels say which. A master alone (its replica down) is
    trusted, as a Redis without a replica is.
    """
    pool = redis.connection_pool
    guarded = isinstance(pool, SentinelConnectionPool)
    before = pool.master_address if isinstance(pool, SentinelConnectionPool) else None
    async with redis.pipeline(transaction=False) as pipe:
        fill(pipe)
        if guarded:
            pipe.execute_command("WAIT", 1, timeout_ms)
        replies: list[Any] = await pipe.execute()
    if not guarded:
        return replies
    assert isinstance(pool, SentinelConnectionPool)
    acknowledged = replies.pop()
    if int(acknowledged) < 1:
        now = await pool.get_master_address()  # asks the sentinels; drops idle connections if it moved
        if before is not None and now != before:
            raise RedisConnectionError(f"the Redis master moved from {before} to {now} while writing")
        log.warning("redis.not_replicated", master=f"{now[0]}:{now[1]}", waited_ms=timeout_ms)
    return replies
