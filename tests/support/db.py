"""Database and Redis helpers: the state reset before each test, and rows made directly."""

from __future__ import annotations

from typing import Any

import asyncpg
import redis.asyncio as aioredis

TABLES = ("monitors", "checks", "monitor_state", "incidents", "outbox", "deliveries")


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

    Needs ``url``; everything else has a test-friendly default (1 s interval). ``conn`` comes
    from ``monitor.db.connect``, whose jsonb codec takes ``expected_status`` as a Python list.
    """
    values: dict[str, Any] = {
        "name": "test",
        "type": "http",
        "interval_seconds": 1.0,
        "timeout_seconds": 10.0,
        "expected_status": [[200, 399]],
        "confirm_after": 2,
        "follow_redirects": False,
        "telegram_chat_id": None,
        "paused": False,
    }
    values.update(fields)
    if "url" not in values:
        raise TypeError("insert_monitor needs url=")
    columns = list(values)
    placeholders = ", ".join(f"${i}" for i in range(1, len(columns) + 1))
    async with conn.transaction():
        row = await conn.fetchrow(
            f"INSERT INTO monitors ({', '.join(columns)}) VALUES ({placeholders}) RETURNING *",
            *values.values(),
        )
        await conn.execute("INSERT INTO monitor_state (monitor_id) VALUES ($1)", row["id"])
    return row
