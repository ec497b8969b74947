"""A monitor's history: its checks, its incidents and its uptime over a window."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
from aiohttp import web

from monitor.api.context import POOL
from monitor.api.errors import ApiError, not_found
from monitor.api.params import (
    decode_cursor,
    encode_cursor,
    int_param,
    path_id,
    rfc3339,
    time_range,
    window_param,
)

DEFAULT_WINDOW = "24h"


async def _monitor_created_at(conn: asyncpg.Connection, monitor_id: int) -> datetime:
    created = await conn.fetchval("SELECT created_at FROM monitors WHERE id = $1", monitor_id)
    if created is None:
        raise not_found("monitor")
    return created


def _render_check(row: asyncpg.Record) -> dict[str, Any]:
    return {
        "time": rfc3339(row["time"]),
        "ok": row["ok"],
        "status_code": row["status_code"],
        "latency_ms": row["latency_ms"],
        "error": row["error"],
        "location": row["location"],
        "timings": {
            "dns_ms": row["dns_ms"],
            "connect_ms": row["connect_ms"],
            "tls_ms": row["tls_ms"],
            "ttfb_ms": row["ttfb_ms"],
        },
    }


async def list_checks(request: web.Request) -> web.Response:
    monitor_id = path_id(request)
    start, end = time_range(request)
    limit = int_param(request, "limit", 100, 1, 1000)
    cursor = decode_cursor(request, (int,))
    if cursor is not None:
        # The cursor is the previous page's last time, in microseconds since the epoch.
        before = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=cursor[0])
        end = before if end is None else min(end, before)
    async with request.app[POOL].acquire() as conn:
        await _monitor_created_at(conn, monitor_id)
        rows = await conn.fetch(
            """SELECT * FROM checks
               WHERE monitor_id = $1 AND ($2::timestamptz IS NULL OR time >= $2)
                 AND ($3::timestamptz IS NULL OR time < $3)
               ORDER BY time DESC LIMIT $4""",
            monitor_id,
            start,
            end,
            limit + 1,
        )
    next_cursor = None
    if len(rows) > limit:
        last = rows[limit - 1]["time"] - datetime(1970, 1, 1, tzinfo=UTC)
        next_cursor = encode_cursor([last // timedelta(microseconds=1)])
    return web.json_response({"items": [_render_check(r) for r in rows[:limit]], "next_cursor": next_cursor})


def _render_incident(row: asyncpg.Record, now: datetime) -> dict[str, Any]:
    end = row["ended_at"] or now
    return {
        "id": row["id"],
        "monitor_id": row["monitor_id"],
        "started_at": rfc3339(row["started_at"]),
        "ended_at": rfc3339(row["ended_at"]),
        "ongoing": row["ended_at"] is None,
        "duration_seconds": round((end - row["started_at"]).total_seconds(), 3),
        "status_code": row["status_code"],
        "error": row["error"],
    }


async def list_incidents(request: web.Request) -> web.Response:
    monitor_id = path_id(request)
    start, end = time_range(request)
    limit = int_param(request, "limit", 100, 1, 1000)
    cursor = decode_cursor(request, (int,))
    async with request.app[POOL].acquire() as conn:
        await _monitor_created_at(conn, monitor_id)
        now = await conn.fetchval("SELECT now()")
        rows = await conn.fetch(
            """SELECT * FROM incidents
               WHERE monitor_id = $1
                 AND ($2::timestamptz IS NULL OR coalesce(ended_at, 'infinity') > $2)
                 AND ($3::timestamptz IS NULL OR started_at < $3)
                 AND ($4::bigint IS NULL OR id < $4)
               ORDER BY id DESC LIMIT $5""",
            monitor_id,
            start,
            end,
            cursor[0] if cursor else None,
            limit + 1,
        )
    next_cursor = encode_cursor([rows[limit - 1]["id"]]) if len(rows) > limit else None
    return web.json_response(
        {"items": [_render_incident(r, now) for r in rows[:limit]], "next_cursor": next_cursor}
    )


def uptime_figures(
    window_start: datetime,
    window_end: datetime,
    created_at: datetime,
    now: datetime,
    incidents: list[tuple[datetime, datetime | None]],
    checks: int,
) -> tuple[float | None, float | None]:
    """Time-based uptime: the share of the observed window not covered by incidents.

    The observed window is the requested one clipped to the monitor's lifetime
    (from its creation to now). With no check in the window there is nothing to
    judge: both figures are None.
    """
    start = max(window_start, created_at)
    end = min(window_end, now)
    if checks == 0 or end <= start:
        return None, None
    down = 0.0
    for began, ended in incidents:
        overlap = (min(ended or now, end) - max(began, start)).total_seconds()
        down += max(0.0, overlap)
    span = (end - start).total_seconds()
    return 100.0 * (1.0 - down / span), down


async def uptime(request: web.Request) -> web.Response:
    monitor_id = path_id(request)
    start, end = time_range(request)
    window = request.query.get("window")
    if window is not None and (start is not None or end is not None):
        raise ApiError(400, "invalid", "window: give either window or from/to, not both", "window")
    async with request.app[POOL].acquire() as conn:
        created_at = await _monitor_created_at(conn, monitor_id)
        now = await conn.fetchval("SELECT now()")
        end = end or now
        if start is None:
            start = end - window_param(window or DEFAULT_WINDOW)
        counts = await conn.fetchrow(
            """SELECT count(*) AS checks, count(*) FILTER (WHERE ok) AS checks_up FROM checks
               WHERE monitor_id = $1 AND time >= $2 AND time < $3""",
            monitor_id,
            start,
            end,
        )
        incidents = await conn.fetch(
            """SELECT started_at, ended_at FROM incidents
               WHERE monitor_id = $1 AND started_at < $3 AND coalesce(ended_at, 'infinity') > $2""",
            monitor_id,
            start,
            end,
        )
    percent, down = uptime_figures(
        start, end, created_at, now, [(r["started_at"], r["ended_at"]) for r in incidents], counts["checks"]
    )
    return web.json_response(
        {
            "monitor_id": monitor_id,
            "from": rfc3339(start),
            "to": rfc3339(end),
            "uptime_percent": percent,
            "downtime_seconds": down,
            "checks": counts["checks"],
            "checks_up": counts["checks_up"],
        }
    )


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/api/v1/monitors/{id}/checks", list_checks)
    router.add_get("/api/v1/monitors/{id}/incidents", list_incidents)
    router.add_get("/api/v1/monitors/{id}/uptime", uptime)
