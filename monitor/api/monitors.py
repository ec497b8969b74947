"""``/api/v1/monitors``: create, list, read, update, delete."""

from __future__ import annotations

from typing import Any

import asyncpg
from aiohttp import web
from pydantic import ValidationError

from monitor import logging as mlog
from monitor.api.context import POOL, RESOLVER, SETTINGS
from monitor.api.errors import ApiError, from_validation, not_found
from monitor.api.params import decode_cursor, encode_cursor, int_param, json_object, path_id, rfc3339
from monitor.api.schemas import MonitorCreate, MonitorPatch, parse_status_ranges, render_status_ranges
from monitor.net.policy import BlockedTarget, InvalidTarget, parse_target_url
from monitor.net.resolver import ResolutionError

log = mlog.get(__name__)

COLUMNS = (
    "name",
    "type",
    "url",
    "interval_seconds",
    "timeout_seconds",
    "expected_status",
    "confirm_after",
    "follow_redirects",
    "telegram_chat_id",
    "paused",
)
SELECT = """
SELECT m.*, s.status, s.last_check_at, s.last_ok, s.last_error, s.last_status_code,
       s.last_latency_ms, s.changed_at
FROM monitors m LEFT JOIN monitor_state s ON s.monitor_id = m.id
"""


def render(row: asyncpg.Record) -> dict[str, Any]:
    status = "paused" if row["paused"] else (row["status"] or "unknown")
    last_check = None
    if row["last_check_at"] is not None:
        last_check = {
            "time": rfc3339(row["last_check_at"]),
            "ok": row["last_ok"],
            "status_code": row["last_status_code"],
            "latency_ms": row["last_latency_ms"],
            "error": row["last_error"],
        }
    return {
        "id": row["id"],
        "name": row["name"],
        "type": row["type"],
        "url": row["url"],
        "interval_seconds": row["interval_seconds"],
        "timeout_seconds": row["timeout_seconds"],
        "expected_status": render_status_ranges(row["expected_status"]),
        "confirm_after": row["confirm_after"],
        "follow_redirects": row["follow_redirects"],
        "telegram_chat_id": row["telegram_chat_id"],
        "paused": row["paused"],
        "status": status,
        "status_since": rfc3339(row["changed_at"]),
        "last_check": last_check,
        "created_at": rfc3339(row["created_at"]),
        "updated_at": rfc3339(row["updated_at"]),
    }


async def _vet_target(request: web.Request, url: str) -> None:
    """First of the two SSRF layers: refuse a target that is denied right now."""
    host = parse_target_url(url).raw_host or ""
    try:
        await request.app[RESOLVER].vet(host)
    except BlockedTarget as exc:
        raise ApiError(400, "target_blocked", f"url: {exc}", "url") from None
    except InvalidTarget as exc:
        raise ApiError(400, "invalid", f"url: {exc}", "url") from None
    except ResolutionError as exc:
        # Not resolving is not dangerous: the site may not be live yet, or DNS may be down.
        # The monitor is created and its checks report the failure (as Uptime Kuma does);
        # the scheduler judges every answer again at each connection.
        log.info("api.target_unresolved", host=host, error=str(exc))


def _validation_context(request: web.Request) -> dict[str, Any]:
    return {"min_interval_seconds": request.app[SETTINGS].min_interval_seconds}


async def create_monitor(request: web.Request) -> web.Response:
    body = await json_object(request)
    try:
        spec = MonitorCreate.model_validate(body, context=_validation_context(request))
    except ValidationError as exc:
        raise from_validation(exc) from None
    await _vet_target(request, spec.url)
    values = spec.model_dump(include=set(COLUMNS))
    values["expected_status"] = parse_status_ranges(values["expected_status"])
    columns = ", ".join(COLUMNS)
    placeholders = ", ".join(f"${i}" for i in range(1, len(COLUMNS) + 1))
    async with request.app[POOL].acquire() as conn, conn.transaction():
        new_id = await conn.fetchval(
            f"INSERT INTO monitors ({columns}) VALUES ({placeholders}) RETURNING id",
            *(values[c] for c in COLUMNS),
        )
        await conn.execute("INSERT INTO monitor_state (monitor_id) VALUES ($1)", new_id)
        row = await conn.fetchrow(SELECT + " WHERE m.id = $1", new_id)
    response = web.json_response(render(row), status=201)
    response.headers["Location"] = f"/api/v1/monitors/{new_id}"
    return response


async def list_monitors(request: web.Request) -> web.Response:
    limit = int_param(request, "limit", 100, 1, 1000)
    cursor = decode_cursor(request, (int,))
    after = cursor[0] if cursor else 0
    rows = await request.app[POOL].fetch(SELECT + " WHERE m.id > $1 ORDER BY m.id LIMIT $2", after, limit + 1)
    items = [render(r) for r in rows[:limit]]
    next_cursor = encode_cursor([rows[limit - 1]["id"]]) if len(rows) > limit else None
    return web.json_response({"items": items, "next_cursor": next_cursor})


async def get_monitor(request: web.Request) -> web.Response:
    monitor_id = path_id(request)
    row = await request.app[POOL].fetchrow(SELECT + " WHERE m.id = $1", monitor_id)
    if row is None:
        raise not_found("monitor")
    return web.json_response(render(row))


async def patch_monitor(request: web.Request) -> web.Response:
    monitor_id = path_id(request)
    body = await json_object(request)
    try:
        patch = MonitorPatch.model_validate(body, context=_validation_context(request))
    except ValidationError as exc:
        raise from_validation(exc) from None
    values = patch.model_dump(include=set(COLUMNS), exclude_unset=True)
    if "url" in values:
        await _vet_target(request, values["url"])
    if "expected_status" in values:
        values["expected_status"] = parse_status_ranges(values["expected_status"])
    async with request.app[POOL].acquire() as conn, conn.transaction():
        if values:
            assignments = ", ".join(f"{c} = ${i}" for i, c in enumerate(values, start=2))
            updated = await conn.fetchval(
                f"UPDATE monitors SET {assignments}, updated_at = now() WHERE id = $1 RETURNING id",
                monitor_id,
                *values.values(),
            )
            if updated is None:
                raise not_found("monitor")
        row = await conn.fetchrow(SELECT + " WHERE m.id = $1", monitor_id)
    if row is None:
        raise not_found("monitor")
    return web.json_response(render(row))


async def delete_monitor(request: web.Request) -> web.Response:
    monitor_id = path_id(request)
    deleted = await request.app[POOL].fetchval("DELETE FROM monitors WHERE id = $1 RETURNING id", monitor_id)
    if deleted is None:
        raise not_found("monitor")
    return web.Response(status=204)


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_post("/api/v1/monitors", create_monitor)
    router.add_get("/api/v1/monitors", list_monitors)
    router.add_get("/api/v1/monitors/{id}", get_monitor)
    router.add_patch("/api/v1/monitors/{id}", patch_monitor)
    router.add_delete("/api/v1/monitors/{id}", delete_monitor)
