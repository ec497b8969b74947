"""PostgreSQL and Redis switch primaries under our clients: the pool, a LISTEN connection and the
Redis client reach the new one, and what a client was told is written survives the switch.

PostgreSQL: a primary and a streaming standby of our own (tests/support/pg_cluster.py), named by
one DSN with ``target_session_attrs=read-write``. Redis: a master, a replica and three sentinels
(tests/support/redis_sentinel.py), named by a ``redis+sentinel://`` URL.
"""

from __future__ import annotations

import asyncio
import contextlib

import asyncpg
import pytest
import redis.asyncio as aioredis
from redis.exceptions import RedisError
from support import wait_for
from support.pg_cluster import PgCluster
from support.redis_sentinel import RedisSentinels

from monitor import db, events, keys, redisconn

DEADLINE = 30.0


async def _port(pool: asyncpg.Pool) -> int:
    return int(await pool.fetchval("SELECT inet_server_port()"))


async def test_pool_and_listener_reach_the_promoted_standby(cluster: PgCluster) -> None:
    dsn = cluster.dsn()
    await db.migrate(dsn)  # `monitor migrate` takes the same DSN
    pool = await db.create_pool(dsn, min_size=0, max_size=3)
    notified: asyncio.Queue[str] = asyncio.Queue()
    listener = await db.connect(dsn)
    dropped = asyncio.Event()
    try:
        assert await _port(pool) == cluster.a.port
        await listener.add_listener("failover_test", lambda *args: notified.put_nowait(args[-1]))
        listener.add_termination_listener(lambda _conn: dropped.set())
        await pool.execute("CREATE TABLE written (n int PRIMARY KEY)")
        await pool.execute("INSERT INTO written VALUES (1)")

        await cluster.switch()

        # Writes go on: the dead connections are dropped, new ones skip the stopped host.
        await wait_for(
            lambda: pool.execute("INSERT INTO written VALUES (2) ON CONFLICT DO NOTHING"),
            timeout=DEADLINE,
            retry_on=(OSError, asyncpg.PostgresError, asyncpg.InterfaceError),
            message="a write through the pool after the switch",
        )
        assert await _port(pool) == cluster.b.port
        assert [r["n"] for r in await pool.fetch("SELECT n FROM written ORDER BY n")] == [1, 2]
        # The LISTEN connection was cut off with the old primary; connected again, it hears the new one.
        await asyncio.wait_for(dropped.wait(), DEADLINE)
        relisten = await db.connect(dsn)
        try:
            await relisten.add_listener("failover_test", lambda *args: notified.put_nowait(args[-1]))
            await pool.execute("SELECT pg_notify('failover_test', 'after')")
            assert await asyncio.wait_for(notified.get(), DEADLINE) == "after"
        finally:
            await relisten.close()
    finally:
        listener.terminate()
        await pool.close()


async def test_a_primary_fenced_read_only_is_left_for_the_promoted_standby(cluster: PgCluster) -> None:
    """The old primary stays up but takes no writes (``default_transaction_read_only``, as a
    failover tool fences it): the write that meets it fails like a dropped connection, no host
    taking writes is an OSError, and once the standby is promoted the pool writes there."""
    dsn = cluster.dsn()
    pool = await db.create_pool(dsn, min_size=0, max_size=2)
    listener = await db.connect(dsn)
    admin = await asyncpg.connect(cluster.a.url())
    try:
        await pool.execute("CREATE TABLE fenced (n int)")
        assert await db.writable(listener)
        await admin.execute("ALTER SYSTEM SET default_transaction_read_only = on")
        await admin.execute("SELECT pg_reload_conf()")

        async def refused() -> bool:
            with pytest.raises(asyncpg.exceptions.ReadOnlySQLTransactionError):
                await pool.execute("INSERT INTO fenced VALUES (1)")
            return True

        await wait_for(
            refused, timeout=DEADLINE, retry_on=(pytest.fail.Exception,), message="the write refused"
        )
        assert not await db.writable(listener)  # the scheduler's check of its LISTEN connection
        # Neither host takes writes yet: a connection error, as every caller already retries.
        with pytest.raises(db.NoPrimaryError) as caught:
            await pool.execute("INSERT INTO fenced VALUES (2)")
        assert isinstance(caught.value, OSError)

        promoted = await asyncpg.connect(cluster.b.url())
        try:
            assert await promoted.fetchval("SELECT pg_promote()")
        finally:
            await promoted.close()
        await pool.execute("INSERT INTO fenced VALUES (3)")
        assert await _port(pool) == cluster.b.port
    finally:
        listener.terminate()
        await admin.close()
        await pool.close()


async def _publish_until_stopped(
    client: aioredis.Redis, stop: asyncio.Event, published: list[str], failures: list[str]
) -> None:
    """Publish an event every 20 ms, as the relay does: a failure is retried (the relay keeps
    the rows), and only what ``publish`` returned counts as published."""
    n = 0
    while not stop.is_set():
        try:
            (stream_id,) = await events.publish(client, [{"event_id": f"e{n}", "n": n}])
            published.append(stream_id)
            n += 1
        except RedisError as exc:
            failures.append(type(exc).__name__)
            await asyncio.sleep(0.2)
        await asyncio.sleep(0.02)


@pytest.mark.parametrize("how", ["switchover", "master killed"])
async def test_redis_client_follows_a_sentinel_failover_and_loses_nothing_it_published(
    sentinels: RedisSentinels, how: str
) -> None:
    client = redisconn.client(sentinels.url(3), socket_timeout=3, socket_connect_timeout=2)
    stop = asyncio.Event()
    published: list[str] = []
    failures: list[str] = []
    writer = asyncio.create_task(_publish_until_stopped(client, stop, published, failures))
    try:
        await wait_for(lambda: len(published) >= 10, timeout=DEADLINE, message="publishing")
        new = await (sentinels.failover() if how == "switchover" else sentinels.kill_master())
        before = len(published)
        await wait_for(
            lambda: len(published) >= before + 20,
            timeout=DEADLINE,
            message=lambda: f"publishing goes on after the failover (failures: {failures})",
        )
        assert client.connection_pool.master_address == ("127.0.0.1", new)  # type: ignore[attr-defined]
        if how == "switchover":
            # The old master loses what it took after the promotion once it replicates the new one.
            await sentinels.wait_settled(new, known=False)
        stop.set()
        await writer
        direct = sentinels.server(new).client(db=3)
        try:
            stored = {i for i, _ in await direct.xrange(keys.EVENTS_STREAM)}
        finally:
            await direct.aclose()
        lost = [i for i in published if i not in stored]
        assert not lost, (
            f"{len(lost)} of {len(published)} published events are not on the new master: {lost[:5]}"
        )
    finally:
        stop.set()
        writer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await writer
        await client.aclose()
