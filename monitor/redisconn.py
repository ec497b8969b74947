"""The one place a Redis client is made: a plain URL, or a master found through Sentinel.

``MONITOR_REDIS_URL`` is ``redis://``/``rediss://``/``unix://`` (redis-py's ``from_url``) or
``redis+sentinel://...`` (monitor/dsn.py). Through Sentinel the client is redis-py's
``Sentinel.master_for``: every new connection asks the sentinels where the master is, and a
connection to a server that answers ``READONLY`` (a master demoted to replica by a failover) is
dropped and raised as a ``ConnectionError``, so the callers' retry paths (the relay, the
alerter's reads and acks) take it as the connection error it is, and their next try reaches the
new master. A plain URL's client tries a command once more, at once, on a connection error: the
first command on a connection the server closed (it restarted) fails though the server is back,
and redis-py's ``from_url`` gives its connections no retry of their own (a client built by hand
gets one), so after a Redis restart every idle pooled connection failed one command (the
alerter's pacing fell back to in-process for a second; a read could leave entries it had taken
unhandled until a reclaim). A server that is really away still fails at once, after two
refused connects.

Redis replicates asynchronously: a write the old master acknowledged in the moment before a
failover may never reach the new one. :func:`write_replicated` is the guard of the alerts
the relay publishes (their outbox rows are marked published only after it).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import Sentinel, SentinelConnectionPool
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError

from monitor import dsn
from monitor import logging as mlog
from monitor.config import Settings

log = mlog.get(__name__)

# How long the relay waits for the replica to acknowledge what it published (WAIT 1 <ms>): on
# loopback or a LAN an acknowledgement takes well under a millisecond; this long only when the
# replica is away or was just promoted. Also how long a master must have been without a replica
# before the sentinels' word that it is still the master is taken: twice their INFO period
# during a failover (1 s), after which they have seen a promotion.
REPLICATION_WAIT_MS = 2000


class SentinelRedis(aioredis.Redis):
    """A ``master_for`` client that closes its sentinels' connections with its own, and keeps
    when its master was first seen without a replica (:func:`write_replicated`)."""

    alone_since: tuple[Any, float] | None = None  # (the master's address, monotonic time)

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
            url,
            socket_timeout=socket_timeout,
            socket_connect_timeout=socket_connect_timeout,
            # Not on a timeout: that would double the wait for a server that hangs.
            retry=Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,)),
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


async def write_replicated(
    redis: aioredis.Redis,
    fill: Callable[[Pipeline], object],
    *,
    timeout_ms: int = REPLICATION_WAIT_MS,
) -> list[Any]:
    """Run the writes ``fill`` puts in a pipeline (one round trip) and return their replies,
    once they are on a replica too, or when no failover can lose them; raise
    ``ConnectionError`` when they may be lost, so the caller writes them again.

    Only through Sentinel is there more to it (a plain client just runs the pipeline). ``ROLE``
    first. A master with a replica gets ``WAIT 1`` appended to the pipeline, on its connection,
    which answers 1 once the replica has the writes. A master without one may be the old master
    whose replica was just promoted (its writes are dropped when it is made a replica), or a
    master whose replica is down (nothing to wait for; no failover can happen without one): the
    two look alike from the master, and the sentinels tell them apart only once they saw the
    promotion, within a second (their INFO period during a failover). So a write to a master
    alone for less than ``timeout_ms`` is confirmed with the sentinels once that much time has
    passed; later ones at once; the writes went to an old master if they name another one.
    """
    pool = redis.connection_pool
    if not isinstance(redis, SentinelRedis) or not isinstance(pool, SentinelConnectionPool):
        async with redis.pipeline(transaction=False) as pipe:
            fill(pipe)
            return list(await pipe.execute())
    role: Any = await redis.execute_command("ROLE")
    server = pool.master_address
    if _text(role[0]) != "master":  # a connection to a demoted master that has not failed yet
        await _still_master(pool, None, "")
        raise RedisConnectionError(f"the Redis server at {_where(server)} is a {_text(role[0])} now")
    alone = not role[2]
    since = redis.alone_since
    if not alone:
        redis.alone_since = None
    elif since is None or since[0] != server:
        since = redis.alone_since = (server, time.monotonic())
    async with redis.pipeline(transaction=False) as pipe:
        fill(pipe)
        if not alone:
            pipe.execute_command("WAIT", 1, timeout_ms)
        replies: list[Any] = list(await pipe.execute())
    if alone:
        assert since is not None
        await asyncio.sleep(max(0.0, since[1] + timeout_ms / 1000 - time.monotonic()))
        await _still_master(pool, server, "")
    elif int(replies.pop()) < 1:
        await _still_master(pool, server, f"no replica acknowledged in {timeout_ms} ms")
    return replies


async def _still_master(pool: SentinelConnectionPool, server: Any, warn: str) -> None:
    """Raise ConnectionError unless the sentinels still name ``server`` the master (asking them
    also drops the pool's idle connections to a master that moved); ``warn``: why to log."""
    now = await pool.get_master_address()
    if server is not None and tuple(now) != tuple(server):
        raise RedisConnectionError(f"the Redis master moved from {_where(server)} to {_where(now)}")
    if warn:
        log.warning("redis.unreplicated_write", master=_where(now), why=warn)


def _where(address: Any) -> str:
    return f"{address[0]}:{address[1]}" if address else "?"


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
