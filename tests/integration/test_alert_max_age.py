"""Alerts that waited longer than MONITOR_ALERT_MAX_AGE arrive as one summary per chat.

An alerter without a bot token keeps events waiting; when the token is set, days of outages
and recoveries must not page the chat one by one as if they were happening now. The events
here were recorded two hours ago (the relay's ``at``) and the alerter starts with a token:
the chat gets one summary of them, and a fresh alert after it arrives as usual.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import asyncpg
import redis.asyncio as aioredis
from support import FakeTelegram, ProcessFactory, wait_for
from support.alerts import alert_state, alerter_env, make_event, publish_events

CHAT = "7301"


def _aged(event: dict[str, object], hours: float) -> dict[str, object]:
    when = (datetime.now(UTC) - timedelta(hours=hours)).isoformat().replace("+00:00", "Z")
    return {**event, "at": when, "started_at": when}


async def test_old_alerts_are_one_summary_and_fresh_ones_follow(
    db: asyncpg.Connection, redis_client: aioredis.Redis, fake_telegram: FakeTelegram, procs: ProcessFactory
) -> None:
    old = []
    for monitor_id in (1, 2, 3):
        old.append(_aged(make_event(monitor_id, f"shop-{monitor_id}", CHAT, "down"), 2))
        old.append(_aged(make_event(monitor_id, f"shop-{monitor_id}", CHAT, "up"), 1.9))
    await publish_events(redis_client, old)
    await procs.start("alerter", env={**alerter_env(fake_telegram), "MONITOR_ALERT_MAX_AGE": "3600"})

    await fake_telegram.wait_messages(1, chat_id=CHAT, timeout=20)

    async def settled(sent: int) -> bool:
        return (await alert_state(db, redis_client)).settled(sent=sent)

    await wait_for(lambda: settled(6), timeout=20, message="the six old events settled")
    [summary] = fake_telegram.messages_to(CHAT)
    text = summary.text or ""
    assert text.startswith("🕓 6 alerts older than 1h"), text
    for monitor_id in (1, 2, 3):
        assert f"<b>shop-{monitor_id}</b>: 1 down, 1 up; 🟢 last UP at" in text, text

    await publish_events(redis_client, [make_event(4, "fresh-shop", CHAT, "down")])
    await fake_telegram.wait_messages(2, chat_id=CHAT, timeout=20)
    fresh = fake_telegram.messages_to(CHAT)[1].text or ""
    assert "fresh-shop</b> is DOWN" in fresh and "older than" not in fresh, fresh
    assert not procs.tracebacks()
