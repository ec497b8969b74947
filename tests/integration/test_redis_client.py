"""The Redis client every process makes (monitor/redisconn.py) across a restart of the server:
its pooled connections died with the old process, and none of them fails a command for it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError
from support.redis_server import RedisServer

from monitor import redisconn


async def test_every_pooled_connection_works_after_a_restart(tmp_path: Path) -> None:
    async with RedisServer(tmp_path / "redis", keep_data=False) as server:
        client = redisconn.client(server.url(), socket_timeout=5, socket_connect_timeout=5)
        try:
            # Three connections in the pool, each idle when the server goes.
            await asyncio.gather(*(client.blpop(["nothing"], timeout=0.1) for _ in range(3)))
            await server.stop()
            await server.start()
            assert [await client.incr("after") for _ in range(4)] == [1, 2, 3, 4]
            await server.stop()
            with pytest.raises(RedisConnectionError):  # and a server away is still an error
                await client.get("after")
        finally:
            await client.aclose()
