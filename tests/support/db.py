"""Database and Redis helpers: the state reset before each test, and rows made directly."""

from __future__ import annotations

from typing import Any

import asyncpg
import redis.asyncio as aioredis

TABLES = (
    "accounts",
    "api_keys",
    "monitors",
    "checks",
    "pings",
    "checks_hourly",
    "checks_daily",
    "monitor_state",
    "monitor_pauses",
    "channels",
    "monitor_channels",
    "incidents",
    "outbox",
    "deliveries",
    "scheduler_members",
    "users",
    "signin_throttle",
    "sso_logins",
    "setup_tokens",
)
TEST_ACCOUNT = "test"


async def ensure_account(conn: asyncpg.Connection, name: str = TEST_ACCOUNT) -> int:
    """The id of the account ``name``, made on first use."""
    await conn.execute("INSERT INTO accounts (name) VALUES ($1) ON CONFLICT (name) DO NOTHING", name)
    return int(await conn.fetchval("SELECT id FROM accounts WHERE name = $1", name))


async def reset(conn: asyncpg.Connection, redis_url: str) -> None:
    """Empty every table the processes write, and the test Redis database."""
    await conn.execute(f"TRUNCATE {', '.join(TABLES)} RESTART IDENTITY CASCADE")
    client = aioredis.Redis.from_url(redis_url)
    try:
        await client.flushdb()
    finally:
        await client.aclose()


async def insert_monitor(conn: asyncpg.Connection, **fields: Any) -> asyncpg.Record:
    """A monitor row (and its state row) written directly, bypassing the API and its checks.

    Needs ``url``; everything else has a test-friendly default (1 s interval), and the monitor
    belongs to the "test" account unless ``account_id`` is given. ``telegram_chat_id`` attaches
    that account's channel for the chat (made on first use), like the API's shortcut. ``conn``
    comes from ``monitor.db.connect``, whose jsonb codec takes ``expected_status`` as a list.
    """
    values: dict[str, Any] = {
        "name": "test",
        "type": "http",
        "interval_seconds": 1.0,
        "timeout_seconds": 10.0,
        "expected_status": [[200, 399]],
        "confirm_after": 2,
        "follow_redirects": False,
        "paused": False,
    }
    values.update(fields)
    chat = values.pop("telegram_chat_id", None)
    if "url" not in values:
        raise TypeError("insert_monitor needs url=")
    columns = list(values)
    placeholders = ", ".join(f"${i}" for i in range(1, len(columns) + 1))
    async with conn.transaction():
        if "account_id" not in values:
            values["account_id"] = await ensure_account(conn)
            columns = list(values)
            placeholders = ", ".join(f"${i}" for i in range(1, len(columns) + 1))
        row = await conn.fetchrow(
            f"INSERT INTO monitors ({', '.join(columns)}) VALUES ({placeholders}) RETURNING *",
            *values.values(),
        )
        await conn.execute("INSERT INTO monitor_state (monitor_id) VALUES ($1)", row["id"])
        if chat is not None:
            channel = await conn.fetchval(
                """SELECT id FROM channels WHERE account_id = $1 AND kind = 'telegram'
                   AND config ->> 'chat_id' = $2""",
                values["account_id"],
                str(chat),
            )
            if channel is None:
                channel = await conn.fetchval(
                    """INSERT INTO channels (account_id, kind, name, config)
                       VALUES ($1, 'telegram', $2, $3) RETURNING id""",
                    values["account_id"],
                    f"Telegram {chat}",
                    {"chat_id": str(chat)},
                )
            await conn.execute(
                "INSERT INTO monitor_channels (monitor_id, channel_id) VALUES ($1, $2)", row["id"], channel
            )
    return row
