"""The ping route of a live ``monitor api``, beyond the e2e test's cron job (found in review):
a log tail that arrives in several pieces is kept whole, a paused monitor's job gets its 200,
and ``curl -I`` (HEAD) is a ping like GET."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import asyncpg
import pytest
from support import ApiClient

pytestmark = pytest.mark.timeout(60)


async def _heartbeat(api: ApiClient, **fields: object) -> tuple[int, str]:
    created = await api.post("/api/v1/monitors", json={"type": "heartbeat", "name": "job", **fields})
    assert created.status == 201, created
    return created.json["id"], created.json["ping_url"].removeprefix(api.base_url)


async def _stored(db: asyncpg.Connection, monitor_id: int) -> list[asyncpg.Record]:
    return await db.fetch(
        "SELECT kind, body, body_truncated FROM pings WHERE monitor_id = $1 ORDER BY id", monitor_id
    )


async def test_a_body_in_pieces_is_kept_whole_up_to_its_cap(api: ApiClient, db: asyncpg.Connection) -> None:
    monitor_id, path = await _heartbeat(api)

    async def slowly(pieces: list[bytes]) -> AsyncIterator[bytes]:
        for piece in pieces:
            yield piece
            await asyncio.sleep(0.05)  # a slow client's pace, so the pieces arrive apart

    lines = [f"line {i:04d} of the backup log\n".encode() for i in range(200)]  # 5,400 bytes
    whole = b"".join(lines)
    sent = await api.post(f"{path}/fail", data=slowly([whole[:1000], whole[1000:3000], whole[3000:]]))
    assert sent.status == 200, sent
    too_long = b"x" * 10_000 + b"the end that is cut"
    assert (await api.post(path, data=slowly([too_long[:6000], too_long[6000:]]))).status == 200
    rows = await _stored(db, monitor_id)
    assert [(r["kind"], r["body"], r["body_truncated"]) for r in rows] == [
        ("fail", whole.decode(), False),
        ("ok", "x" * 10_000, True),
    ]


async def test_a_paused_monitors_job_gets_its_200(api: ApiClient, db: asyncpg.Connection) -> None:
    # Stored: whether the monitor is still paused when the row is read is the scheduler's to
    # judge (it drops such pings); an api's cache could still say paused after a resume.
    monitor_id, path = await _heartbeat(api, paused=True)
    assert (await api.get(path)).status == 200
    assert [r["kind"] for r in await _stored(db, monitor_id)] == ["ok"]


async def test_head_is_a_ping(api: ApiClient, db: asyncpg.Connection) -> None:
    monitor_id, path = await _heartbeat(api)
    assert (await api.request("HEAD", path)).status == 200
    assert [r["kind"] for r in await _stored(db, monitor_id)] == ["ok"]
