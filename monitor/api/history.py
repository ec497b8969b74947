"""A monitor's history: checks, incidents, uptime over windows, response-time statistics."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
from aiohttp import web

from monitor import rollups
from monitor.api.context import POOL
from monitor.api.errors import ApiError, not_found
from monitor.api.guard import account_id
from monitor.api.params import (
    decode_cursor,
    encode_cursor,
    int_param,
    next_page,
    path_id,
    rfc3339,
    time_range,
    window_param,
)
from monitor.domain.schemas.locations import LOCATION
from monitor.domain.uptime import (
    Uptime,
    count_checks,
    fetch_spans,
    location_uptimes,
    maintenance_seconds,
    records,
    time_in,
    uptime_of,
)

DEFAULT_WINDOW = "24h"
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
BUCKETS = {"1h": timedelta(hours=1), "1d": timedelta(days=1)}
MAX_BUCKETS = 2400
# One row per bucket ($4: its size) of one monitor's hourly rollups in [$2, $3), histograms
# added element by element; buckets start at whole multiples of their size since the epoch.
STATS_SQL = f"""
SELECT date_bin($4::interval, hour, 'epoch'::timestamptz) AS bucket,
       sum(checks) AS checks, sum(checks_up) AS checks_up, sum(latency_n) AS latency_n,
       sum(latency_sum) AS latency_sum, max(latency_max) AS latency_max,
       ARRAY[{", ".join(f"sum(latency_hist[{i}])" for i in range(1, rollups.N_BUCKETS + 1))}] AS hist
FROM checks_hourly WHERE monitor_id = $1 AND hour >= $2 AND hour < $3
GROUP BY 1 ORDER BY 1
"""


STATS_DAILY_SQL = """
SELECT day AS bucket, checks, checks_up, latency_n, latency_sum, latency_max, latency_hist AS hist
FROM checks_daily WHERE monitor_id = $1 AND day >= $2 AND day < $3 ORDER BY day
"""


async def _owned(conn: asyncpg.Connection, request: web.Request) -> asyncpg.Record:
    row = await conn.fetchrow(
        "SELECT id, created_at, locations FROM monitors WHERE id = $1 AND account_id = $2",
        path_id(request),
        account_id(request),
    )
    if row is None:
        raise not_found("monitor")
    return row


def _render_check(row: asyncpg.Record) -> dict[str, Any]:
    return {
        "time": rfc3339(row["time"]),
        "ok": row["ok"],
        "status_code": row["status_code"],
        "latency_ms": row["latency_ms"],
        "error": row["error"],
        "location": row["location"],
        "checked_from": row["checked_from"],
        "timings": {
            "dns_ms": row["dns_ms"],
            "connect_ms": row["connect_ms"],
            "tls_ms": row["tls_ms"],
            "ttfb_ms": row["ttfb_ms"],
        },
        "details": row["details"],
    }


async def list_checks(request: web.Request) -> web.Response:
    start, end = time_range(request)
    limit = int_param(request, "limit", 100, 1, 1000)
    cursor = decode_cursor(request, (int,))
    if cursor is not None:
        # The cursor is the previous page's last time, in microseconds since the epoch.
        try:
            before = EPOCH + timedelta(microseconds=cursor[0])
        except OverflowError:
            raise ApiError(400, "invalid", "cursor: not a cursor this endpoint issued", "cursor") from None
        end = before if end is None else min(end, before)
    location = request.query.get("checked_from")
    if location is not None and not LOCATION.match(location):
        raise ApiError(
            400, "invalid", "checked_from: not a location name (as MONITOR_LOCATION)", "checked_from"
        )
    async with request.app[POOL].acquire() as conn:
        monitor = await _owned(conn, request)
        rows = await conn.fetch(
            """SELECT * FROM checks
               WHERE monitor_id = $1 AND ($2::timestamptz IS NULL OR time >= $2)
                 AND ($3::timestamptz IS NULL OR time < $3)
                 AND ($5::text IS NULL OR checked_from = $5)
               ORDER BY time DESC LIMIT $4""",
            monitor["id"],
            start,
            end,
            limit + 1,
            location,
        )
    next_cursor = None
    if len(rows) > limit:
        next_cursor = encode_cursor([(rows[limit - 1]["time"] - EPOCH) // timedelta(microseconds=1)])
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
    start, end = time_range(request)
    limit = int_param(request, "limit", 100, 1, 1000)
    cursor = decode_cursor(request, (int,))
    async with request.app[POOL].acquire() as conn:
        monitor = await _owned(conn, request)
        now = await conn.fetchval("SELECT now()")
        rows = await conn.fetch(
            """SELECT * FROM incidents
               WHERE monitor_id = $1
                 AND ($2::timestamptz IS NULL OR coalesce(ended_at, 'infinity') > $2)
                 AND ($3::timestamptz IS NULL OR started_at < $3)
                 AND ($4::bigint IS NULL OR id < $4)
               ORDER BY id DESC LIMIT $5""",
            monitor["id"],
            start,
            end,
            cursor[0] if cursor else None,
            limit + 1,
        )
    page, next_cursor = next_page(rows, limit)
    return web.json_response({"items": [_render_incident(r, now) for r in page], "next_cursor": next_cursor})


async def uptime(request: web.Request) -> web.Response:
    """``?window=24h`` (several: ``24h,7d,30d``) or ``?from=&to=``; one window answers flat. A
    monitor with locations gets each one's figures too. 4 queries, 2 per window, and 2 more for
    locations."""
    start, end = time_range(request)
    window = request.query.get("window")
    if window is not None and (start is not None or end is not None):
        raise ApiError(400, "invalid", "window: give either window or from/to, not both", "window")
    windows = [w for w in (window or "").split(",") if w] if window is not None else []
    if window is not None and not windows:
        raise ApiError(400, "invalid", "window: must look like 24h, 7d, 30d or 90d", "window")
    if len(windows) > 8:
        raise ApiError(400, "invalid", "window: at most 8 windows", "window")
    deltas = [window_param(w) for w in windows]
    async with request.app[POOL].acquire() as conn:
        monitor = await _owned(conn, request)
        now = await conn.fetchval("SELECT now()")
        if not deltas:
            to = end or now
            spans = [(start or to - window_param(DEFAULT_WINDOW), to)]
        else:
            spans = [(now - delta, now) for delta in deltas]
        # Read once for every window (each lies inside [first, last)); checks counted per window.
        life, ids = (monitor["id"], monitor["created_at"]), [monitor["id"]]
        first, last = min(s for s, _ in spans), max(e for _, e in spans)
        found = await records(conn, ids, first, last, now)
        overall = []
        for span_start, span_end in spans:
            counts = await count_checks(conn, ids, span_start, span_end, now)
            overall.append(uptime_of(life, span_start, span_end, now, found, counts.get(life[0], (0, 0))))
        in_maintenance = [maintenance_seconds(life, s, e, now, found) for s, e in spans]
        located: list[dict[str, Uptime]] = []
        if monitor["locations"]:
            located = await location_uptimes(conn, life, monitor["locations"], spans, now, found)
    results = []
    for i, u in enumerate(overall):
        result = {
            "monitor_id": monitor["id"],
            "from": rfc3339(u.start),
            "to": rfc3339(u.end),
            # What the percentage is computed over: the window clipped to the monitor's life
            # (creation to now); paused time inside it is left out too.
            "observed_from": rfc3339(max(u.start, monitor["created_at"])),
            "observed_to": rfc3339(max(min(u.end, now), u.start, monitor["created_at"])),
            "uptime_percent": u.percent,
            "downtime_seconds": u.downtime_seconds,
            "degraded_seconds": u.degraded_seconds,
            "maintenance_seconds": in_maintenance[i],
            "checks": u.checks,
            "checks_up": u.checks_up,
        }
        if located:
            result["locations"] = {
                name: {"uptime_percent": x.percent, "downtime_seconds": x.downtime_seconds,
                       "checks": x.checks, "checks_up": x.checks_up}
                for name, x in located[i].items()
            }  # fmt: skip
        results.append(result)
    if len(windows) > 1:
        return web.json_response(
            {"monitor_id": monitor["id"], "windows": {w: r for w, r in zip(windows, results, strict=True)}}
        )
    return web.json_response(results[0])


def _bucket_start(value: datetime, size: timedelta) -> datetime:
    return EPOCH + ((value - EPOCH) // size) * size


async def stats(request: web.Request) -> web.Response:
    """Response-time statistics per hour or day, from the hourly and daily rollups (fast, and
    kept after raw checks expire): count, share up, and the average, p50, p95 and max latency
    of the successful checks (null where none succeeded)."""
    bucket = request.query.get("bucket", "1h")
    if bucket not in BUCKETS:
        raise ApiError(400, "invalid", "bucket: 1h or 1d", "bucket")
    size = BUCKETS[bucket]
    start, end = time_range(request)
    async with request.app[POOL].acquire() as conn:
        monitor = await _owned(conn, request)
        now = await conn.fetchval("SELECT now()")
        end = end or now
        start = start or end - (timedelta(hours=24) if bucket == "1h" else timedelta(days=30))
        if (end - start) / size > MAX_BUCKETS:
            raise ApiError(400, "invalid", f"from: at most {MAX_BUCKETS} buckets per request", "from")
        # Summed per bucket in the database: of a 90-day range's 2,160 hourly rows only the 90
        # bucket sums travel, rather than every row's histogram being merged here.
        first = _bucket_start(start, size)
        if bucket == "1d":
            # Whole days from the daily rollups (90 rows for 90 days), the day still running
            # from its hours.
            today = _bucket_start(end, size)
            rows = [
                *await conn.fetch(STATS_DAILY_SQL, monitor["id"], first, today),
                *await conn.fetch(STATS_SQL, monitor["id"], max(first, today), end, size),
            ]
        else:
            rows = await conn.fetch(STATS_SQL, monitor["id"], first, end, size)
        degradations = (await fetch_spans(conn, "degradations", [monitor["id"]], first, end))[monitor["id"]]
    items = []
    for row in rows:
        key = row["bucket"]
        r = rollups.Rollup(
            row["checks"], row["checks_up"], row["latency_n"], row["latency_sum"], row["latency_max"],
            list(row["hist"]),
        )  # fmt: skip
        items.append(
            {
                "start": rfc3339(key),
                "checks": r.checks,
                "up_share": r.checks_up / r.checks if r.checks else None,
                "avg_ms": r.latency_sum / r.latency_n if r.latency_n else None,
                "p50_ms": rollups.percentile(r.hist, 0.50, r.latency_max),
                "p95_ms": rollups.percentile(r.hist, 0.95, r.latency_max),
                "max_ms": r.latency_max,
                "degraded_seconds": time_in([(key, min(key + size, now))], degradations, now),
            }
        )
    return web.json_response(
        {
            "monitor_id": monitor["id"],
            "bucket": bucket,
            "from": rfc3339(start),
            "to": rfc3339(end),
            "items": items,
        }
    )


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/api/v1/monitors/{id}/checks", list_checks)
    router.add_get("/api/v1/monitors/{id}/incidents", list_incidents)
    router.add_get("/api/v1/monitors/{id}/uptime", uptime)
    router.add_get("/api/v1/monitors/{id}/stats", stats)
