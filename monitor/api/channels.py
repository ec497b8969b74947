"""``/api/v1/channels``: alert channels of an account, and a test message through the alerter."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg
from aiohttp import web
from pydantic import ValidationError

from monitor.api.context import POOL
from monitor.api.errors import from_validation, not_found
from monitor.api.guard import account_id
from monitor.api.params import decode_cursor, int_param, json_object, next_page, path_id, rfc3339
from monitor.api.schemas import ChannelCreate, ChannelPatch
from monitor.events import SCHEMA_VERSION

SELECT = """
SELECT c.*, (SELECT count(*) FROM monitor_channels mc WHERE mc.channel_id = c.id) AS monitors
FROM channels c
"""


def render(row: asyncpg.Record) -> dict[str, Any]:
    return {
        "id": row["id"],
        "kind": row["kind"],
        "name": row["name"],
        "config": row["config"],
        "monitors": row["monitors"],
        "created_at": rfc3339(row["created_at"]),
        "updated_at": rfc3339(row["updated_at"]),
    }


async def _owned(conn: asyncpg.Connection | asyncpg.Pool, request: web.Request) -> asyncpg.Record:
    row = await conn.fetchrow(
        SELECT + " WHERE c.id = $1 AND c.account_id = $2",
        path_id(request, what="channel"),
        account_id(request),
    )
    if row is None:
        raise not_found("channel")
    return row


async def create_channel(request: web.Request) -> web.Response:
    try:
        spec = ChannelCreate.model_validate(await json_object(request))
    except ValidationError as exc:
        raise from_validation(exc, ChannelCreate) from None
    async with request.app[POOL].acquire() as conn:
        new_id = await conn.fetchval(
            "INSERT INTO channels (account_id, kind, name, config) VALUES ($1, $2, $3, $4) RETURNING id",
            account_id(request),
            spec.kind,
            spec.name,
            spec.config.model_dump(),
        )
        row = await conn.fetchrow(SELECT + " WHERE c.id = $1", new_id)
    return web.json_response(render(row), status=201, headers={"Location": f"/api/v1/channels/{new_id}"})


async def list_channels(request: web.Request) -> web.Response:
    limit = int_param(request, "limit", 100, 1, 1000)
    cursor = decode_cursor(request, (int,))
    rows = await request.app[POOL].fetch(
        SELECT + " WHERE c.account_id = $1 AND c.id > $2 ORDER BY c.id LIMIT $3",
        account_id(request),
        cursor[0] if cursor else 0,
        limit + 1,
    )
    page, next_cursor = next_page(rows, limit)
    return web.json_response({"items": [render(r) for r in page], "next_cursor": next_cursor})


async def get_channel(request: web.Request) -> web.Response:
    return web.json_response(render(await _owned(request.app[POOL], request)))


async def patch_channel(request: web.Request) -> web.Response:
    try:
        patch = ChannelPatch.model_validate(await json_object(request))
    except ValidationError as exc:
        raise from_validation(exc, ChannelPatch) from None
    async with request.app[POOL].acquire() as conn, conn.transaction():
        current = await _owned(conn, request)
        await conn.execute(
            """UPDATE channels SET name = coalesce($2, name), config = coalesce($3, config),
                                   updated_at = now()
               WHERE id = $1""",
            current["id"],
            patch.name,
            patch.config.model_dump() if patch.config is not None else None,
        )
        row = await _owned(conn, request)
    return web.json_response(render(row))


async def delete_channel(request: web.Request) -> web.Response:
    deleted = await request.app[POOL].fetchval(
        "DELETE FROM channels WHERE id = $1 AND account_id = $2 RETURNING id",
        path_id(request, what="channel"),
        account_id(request),
    )
    if deleted is None:
        raise not_found("channel")
    return web.Response(status=204)


async def test_channel(request: web.Request) -> web.Response:
    """Queue a test message on the same path as real alerts: outbox, relay, stream, alerter."""
    async with request.app[POOL].acquire() as conn:
        row = await _owned(conn, request)
        event_id = uuid.uuid4()
        now = await conn.fetchval("SELECT now()")
        event = {
            "v": SCHEMA_VERSION,
            "event_id": str(event_id),
            "kind": "test",
            "monitor_id": None,
            "monitor_name": row["name"],
            "monitor_url": "",
            "telegram_chat_id": None,
            "incident_id": 0,
            "at": rfc3339(now),
            "started_at": None,
            "ended_at": None,
            "duration_seconds": None,
            "cause": {},
            "channels": [{"id": row["id"], "kind": row["kind"], "name": row["name"], **row["config"]}],
        }
        await conn.execute(
            "INSERT INTO outbox (event_id, monitor_id, kind, payload) VALUES ($1, NULL, 'test', $2)",
            event_id,
            event,
        )
    return web.json_response({"event_id": str(event_id), "status": "queued"}, status=202)


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_post("/api/v1/channels", create_channel)
    router.add_get("/api/v1/channels", list_channels)
    router.add_get("/api/v1/channels/{id}", get_channel)
    router.add_patch("/api/v1/channels/{id}", patch_channel)
    router.add_delete("/api/v1/channels/{id}", delete_channel)
    router.add_post("/api/v1/channels/{id}/test", test_channel)
