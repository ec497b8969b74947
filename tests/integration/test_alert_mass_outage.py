"""A network outage: 300 monitors of three chats go down together, and the whole picture reaches
Telegram within seconds in combined messages, without Telegram ever refusing one for flooding.

The real scheduler checks 300 monitors of one local target every second (confirm_after 2);
the target starts answering 500. The fake Telegram enforces the flood limits (1 message a
second per chat, 20 a minute in a group) with 429s, as the real API does.
"""

from __future__ import annotations

import time
from collections import Counter

import asyncpg
import redis.asyncio as aioredis
from support import FakeTelegram, ProcessFactory, TargetServer, wait_for
from support.alerts import Alert, alert_state, delivered_alerts

# Two private chats and a group (negative id: 20 messages a minute).
CHATS = ["9001", "9002", "-1009003"]
PER_CHAT = 100
REPORTED_WITHIN = 30.0


async def test_300_monitors_down_together_are_reported_within_30s_without_a_429(
    db: asyncpg.Connection,
    redis_client: aioredis.Redis,
    monitor_factory,
    target: TargetServer,
    procs: ProcessFactory,
) -> None:
    chat_of: dict[str, str] = {}
    for c, chat in enumerate(CHATS):
        for n in range(PER_CHAT):
            name = f"mass-{c}-{n:03d}"
            await monitor_factory(name=name, url=target.url(f"/{name}"), telegram_chat_id=chat)
            chat_of[name] = chat
    total = len(chat_of)

    async with FakeTelegram(enforce_rate_limits=True) as fake:
        await procs.start("scheduler")
        await procs.start("alerter", env=fake.env())
        await wait_for(lambda: _count_up(db, total), timeout=30, message=f"{total} monitors up")

        flipped = time.time()
        target.set(500)
        reported = await wait_for(
            lambda: _all_reported(fake, total),
            timeout=REPORTED_WITHIN,
            interval=0.2,
            message=lambda: f"every outage reported: {len({a.name for a in delivered_alerts(fake)})}/{total}",
        )
        await wait_for(
            lambda: _settled(db, redis_client, total),
            timeout=20,
            message="every event delivered, recorded and acknowledged",
        )

    last = max(a.request.received_at for a in reported)
    assert last - flipped < REPORTED_WITHIN
    assert Counter((a.name, a.kind) for a in reported) == Counter({(name, "DOWN"): 1 for name in chat_of})
    for alert in reported:
        assert alert.chat_id == chat_of[alert.name], (alert.name, alert.chat_id)
    refused = [r for r in fake.requests if r.status == 429]
    assert not refused, f"{len(refused)} refused: {fake.describe()}"
    # Combined: a handful of messages per chat, never one per monitor.
    per_chat = Counter(r.chat_id for r in fake.messages)
    assert set(per_chat) == set(CHATS) and max(per_chat.values()) <= 10, per_chat
    assert all(len(r.text or "") <= 4096 for r in fake.requests)
    print(f"all {total} outages reported {last - flipped:.1f}s after the flip in {dict(per_chat)} messages")
    assert not procs.tracebacks()


async def _count_up(db: asyncpg.Connection, total: int) -> bool:
    return await db.fetchval("SELECT count(*) FROM monitor_state WHERE status = 'up'") == total


def _all_reported(fake: FakeTelegram, total: int) -> list[Alert] | None:
    alerts = delivered_alerts(fake)
    return alerts if len({a.name for a in alerts if a.kind == "DOWN"}) >= total else None


async def _settled(db: asyncpg.Connection, redis: aioredis.Redis, total: int) -> bool:
    return (await alert_state(db, redis)).settled(sent=total)
