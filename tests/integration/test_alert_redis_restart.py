"""Redis stops while a monitor goes down and comes back: the outbox keeps both events, and once
Redis returns they reach Telegram once each, in order.

The scheduler and the alerter of this test use a private ``redis-server`` (append-only file,
so its streams and the alerter's group survive the restart) that the test stops and starts by
PID, leaving the shared Redis of the other tests alone.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest
import redis.asyncio as aioredis
from support import FakeTelegram, ProcessFactory, TargetServer, wait_for
from support.alerts import alert_state, delivered_alerts
from support.redis_server import RedisServer

from monitor import keys

CHAT = "8001"
DEADLINE = 30.0


@pytest.fixture
async def private_redis(tmp_path: Path) -> AsyncIterator[RedisServer]:
    async with RedisServer(tmp_path / "redis") as server:
        yield server


async def test_events_wait_in_the_outbox_while_redis_is_down_and_arrive_once_each_in_order(
    db: asyncpg.Connection,
    monitor_factory,
    target: TargetServer,
    fake_telegram: FakeTelegram,
    procs: ProcessFactory,
    private_redis: RedisServer,
) -> None:
    monitor = await monitor_factory(
        name="redis-shop", url=target.url("/shop"), confirm_after=2, telegram_chat_id=CHAT
    )
    env = {"MONITOR_REDIS_URL": private_redis.url()}
    await procs.start("scheduler", env=env)
    await procs.start("alerter", env={**env, **fake_telegram.env()})
    redis = aioredis.Redis.from_url(private_redis.url(), decode_responses=True)
    try:
        await wait_for(lambda: _status(db, monitor["id"], "up"), timeout=DEADLINE, message="monitor up")
        # The alerter has made its group (kept in the append-only file across the restart).
        await wait_for(lambda: redis.xinfo_groups(keys.EVENTS_STREAM), timeout=DEADLINE, message="group")
        await private_redis.stop()

        target.set(500)
        down = await wait_for(
            lambda: _outbox(db, "down"), timeout=DEADLINE, message="the down event in the outbox"
        )
        assert down["published_at"] is None and await _incident_open(db, monitor["id"])
        target.set(200)
        up = await wait_for(lambda: _outbox(db, "up"), timeout=DEADLINE, message="the up event in the outbox")
        assert up["published_at"] is None and not await _incident_open(db, monitor["id"])
        assert fake_telegram.requests == []

        await private_redis.start()
        await wait_for(
            lambda: _settled(db, redis),
            timeout=DEADLINE,
            message=lambda: f"both delivered after the restart; Telegram saw: {fake_telegram.describe()}",
        )
        # Published in outbox order: the down event's stream entry precedes the recovery's.
        entries = await redis.xrange(keys.EVENTS_STREAM)
        assert [json.loads(f[keys.EVENT_FIELD])["event_id"] for _, f in entries] == [
            str(down["event_id"]),
            str(up["event_id"]),
        ]
    finally:
        await redis.aclose()

    alerts = delivered_alerts(fake_telegram)
    assert [(a.name, a.kind, a.chat_id) for a in alerts] == [
        ("redis-shop", "DOWN", CHAT),
        ("redis-shop", "UP", CHAT),
    ], fake_telegram.describe()
    assert private_redis.starts == 2
    for proc in procs.processes:
        assert proc.running, proc.tail()
    assert not procs.tracebacks()


async def _status(db: asyncpg.Connection, monitor_id: int, status: str) -> bool:
    return await db.fetchval("SELECT status FROM monitor_state WHERE monitor_id = $1", monitor_id) == status


async def _outbox(db: asyncpg.Connection, kind: str) -> asyncpg.Record | None:
    return await db.fetchrow("SELECT event_id, published_at FROM outbox WHERE kind = $1", kind)


async def _incident_open(db: asyncpg.Connection, monitor_id: int) -> bool:
    return bool(
        await db.fetchval(
            "SELECT count(*) FROM incidents WHERE monitor_id = $1 AND ended_at IS NULL", monitor_id
        )
    )


async def _settled(db: asyncpg.Connection, redis: aioredis.Redis) -> bool:
    return (await alert_state(db, redis)).settled(sent=2)
