"""A Telegram group upgraded to a supergroup: its alerts follow it to the new chat id.

Telegram answers a message to the old group with 400 and ``migrate_to_chat_id``; that used
to be a permanent error, so the alert was dead-lettered and every later one too. Now the
alert goes to the new chat at once, the channel's stored chat id follows, and the next
alert for the old id goes straight to the new one.
"""

from __future__ import annotations

import asyncpg
import redis.asyncio as aioredis
from support import FakeTelegram, ProcessFactory, ensure_account, wait_for
from support.alerts import alert_state, alerter_env, make_event, publish_events

OLD, NEW = "-4001", "-1004001"


async def test_alerts_follow_a_group_that_became_a_supergroup(
    db: asyncpg.Connection, redis_client: aioredis.Redis, fake_telegram: FakeTelegram, procs: ProcessFactory
) -> None:
    account = await ensure_account(db)
    channel = await db.fetchval(
        """INSERT INTO channels (account_id, kind, name, config)
           VALUES ($1, 'telegram', 'ops', $2) RETURNING id""",
        account,
        {"chat_id": OLD},
    )
    fake_telegram.migrate_chat(OLD, NEW)
    await procs.start("alerter", env=alerter_env(fake_telegram))
    await publish_events(redis_client, [make_event(1, "moved-shop", OLD)])

    await fake_telegram.wait_messages(1, chat_id=NEW, timeout=20)
    config = await db.fetchval("SELECT config FROM channels WHERE id = $1", channel)
    assert config == {"chat_id": NEW}, config

    await publish_events(redis_client, [make_event(2, "moved-api", OLD)])
    await fake_telegram.wait_messages(2, chat_id=NEW, timeout=20)

    async def settled() -> bool:
        return (await alert_state(db, redis_client)).settled(sent=2)

    await wait_for(settled, timeout=20, message="both alerts sent and acknowledged")
    to_old = [r for r in fake_telegram.requests if r.chat_id == OLD]
    assert len(to_old) == 1, "only the first message went to the old id"
    assert not procs.tracebacks()
