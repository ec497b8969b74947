"""Redis restarts with its data lost while a group chat's limit is used up: the alerters know
the chat's recent messages again before they send, so the fake Telegram (which enforces 20
messages a minute in a group and one a second per chat) never answers 429, and every alert
arrives once and in order. With one alerter and with two sharing the chat.

The burst fills the chat's minute one message at a time (each alert its own message); then
the private Redis (no persistence) is stopped and started empty, and more alerts come at
once. Before this was built, the shared windows started empty and the first of them went at
once, into Telegram's 429.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from itertools import pairwise
from pathlib import Path

import asyncpg
import pytest
import redis.asyncio as aioredis
from support import FakeTelegram, ProcessFactory, wait_for
from support.alerts import alert_state, counts, delivered_alerts, make_event, publish_events
from support.redis_server import RedisServer

from monitor.channels.telegram import GROUP_MAX

pytestmark = pytest.mark.timeout(180)

CHAT = "-1007"  # a group: 20 a minute
AFTER = 4  # alerts sent once Redis is back, all at once


@pytest.fixture
async def forgetful_redis(tmp_path: Path) -> AsyncIterator[RedisServer]:
    async with RedisServer(tmp_path / "redis", keep_data=False) as server:
        yield server


@pytest.fixture
async def limited_telegram() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(enforce_rate_limits=True) as fake:
        yield fake


@pytest.mark.parametrize("alerters", [1, 2], ids=["one alerter", "two alerters"])
async def test_a_chats_limit_holds_across_a_redis_restart_that_lost_its_data(
    db: asyncpg.Connection,
    procs: ProcessFactory,
    limited_telegram: FakeTelegram,
    forgetful_redis: RedisServer,
    alerters: int,
) -> None:
    fake = limited_telegram
    env = {"MONITOR_REDIS_URL": forgetful_redis.url(), **fake.env()}
    running = [await procs.start("alerter", env=env) for _ in range(alerters)]
    redis = aioredis.Redis.from_url(forgetful_redis.url(), decode_responses=True)
    try:
        for n in range(GROUP_MAX):
            await publish_events(redis, [make_event(n + 1, f"lost-{n:02d}", CHAT, "down")])
            await fake.wait_messages(n + 1, chat_id=CHAT, timeout=15)

        await forgetful_redis.stop()
        await forgetful_redis.start()
        await redis.aclose()  # its connection went with the server
        redis = aioredis.Redis.from_url(forgetful_redis.url(), decode_responses=True)
        assert await redis.dbsize() == 0
        await publish_events(redis, [make_event(n + 1, f"lost-{n:02d}", CHAT, "up") for n in range(AFTER)])

        async def settled() -> bool:
            return (await alert_state(db, redis)).settled(sent=GROUP_MAX + AFTER)

        await wait_for(settled, timeout=120, message=fake.describe)
    finally:
        await redis.aclose()

    # The fake's limits were never passed: no 429, and none of its windows over its limit.
    sends = [r for r in fake.requests if r.method == "sendMessage"]
    assert Counter(r.status for r in sends) == Counter({200: len(sends)}), fake.describe()
    times = sorted(r.received_at for r in sends)
    crowded = [
        (times[i], times[i + GROUP_MAX])
        for i in range(len(times) - GROUP_MAX)
        if times[i + GROUP_MAX] - times[i] < 60.0
    ]
    assert not crowded, f"more than {GROUP_MAX} messages within a minute: {crowded}"
    assert all(later - earlier >= 1.0 for earlier, later in pairwise(times)), times

    # Every alert once, each monitor's recovery after its outage.
    alerts = delivered_alerts(fake)
    expected = [(f"lost-{n:02d}", "DOWN") for n in range(GROUP_MAX)]
    expected += [(f"lost-{n:02d}", "UP") for n in range(AFTER)]
    assert counts(alerts) == Counter(expected), fake.describe()
    assert [(a.name, a.kind) for a in alerts][:GROUP_MAX] == expected[:GROUP_MAX]
    if alerters == 1:  # one alerter keeps the stream's order across monitors too
        assert [(a.name, a.kind) for a in alerts] == expected
    for proc in running:
        assert not proc.events("alert.throttled"), proc.tail()
        assert proc.running, proc.tail()
    assert not procs.tracebacks()
