"""A monitor's past: its checks and incidents page by page, its uptime over windows, its
response-time statistics per hour or day.

Checks page by time (newest first: the cursor is the last time of the page before), incidents
by id. Uptime is time-based (``domain/uptime.py``): several windows are read in one pass, 2
queries per window and 2 more for a monitor's locations. Statistics come from the hourly and
daily rollups (fast, and kept after raw checks expire), summed per bucket in the database: of a
90-day range's 2,160 hourly rows only the 90 bucket sums travel.

Each operation judges its input before it looks the monitor up, so a bad parameter is a 400
whether or not the monitor exists; another account's monitor is a 404, like an absent one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg

from monitor import rollups
from monitor.domain import paging
from monitor.domain.context import Actor, Deps
from monitor.domain.errors import DomainError, not_found
from monitor.domain.roles import authorize
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
from monitor.times import rfc3339_or_none as rfc3339

RESOURCE = "history"
DEFAULT_WINDOW = "24h"
MAX_WINDOWS = 8
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
BUCKETS = {"1h": timedelta(hours=1), "1d": timedelta(days=1)}
MAX_BUCKETS = 2400
_WINDOW = re.compile(r"^(\d{1,4})([hd])$")
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
# Each of $1's monitors' latency over the hours that start in [$2, $3): histograms added
# element by element, as STATS_SQL adds them per bucket (SLA reports' p50 and p95).
LATENCY_SQL = f"""
SELECT monitor_id, max(latency_max) AS latency_max,
       ARRAY[{", ".join(f"sum(latency_hist[{i}])" for i in range(1, rollups.N_BUCKETS + 1))}] AS hist
FROM checks_hourly WHERE monitor_id = ANY($1::bigint[]) AND hour >= $2 AND hour < $3
GROUP BY monitor_id
"""
# The incidents of $1's monitors that overlap [$2, $3) (either end open when NULL), newest
# first, below id $4 when given, at most $5 (NULL: all): /incidents' pages and SLA reports.
INCIDENTS_SQL = """
SELECT * FROM incidents
WHERE monitor_id = ANY($1::bigint[])
  AND ($2::timestamptz IS NULL OR coalesce(ended_at, 'infinity') > $2)
  AND ($3::timestamptz IS NULL OR started_at < $3)
  AND ($4::bigint IS NULL OR id < $4)
ORDER BY id DESC LIMIT $5
"""
STATS_DAILY_SQL = """
SELECT day AS bucket, checks, checks_up, latency_n, latency_sum, latency_max, latency_hist AS hist
FROM checks_daily WHERE monitor_id = $1 AND day >= $2 AND day < $3 ORDER BY day
"""


def window(raw: str, name: str = "window") -> timedelta:
    """A window as a client names it (``24h``, ``7d``: hours or days, at most 3650 days)."""
    match = _WINDOW.match(raw)
    if not match or int(match.group(1)) == 0:
        raise DomainError(400, "invalid", f"{name}: must look like 24h, 7d, 30d or 90d", name)
    amount = int(match.group(1))
    delta = timedelta(hours=amount) if match.group(2) == "h" else timedelta(days=amount)
    if delta > timedelta(days=3650):
        raise DomainError(400, "invalid", f"{name}: at most 3650d", name)
    return delta


def bucket_size(bucket: str) -> timedelta:
    """A statistics bucket by its name (``BUCKETS``)."""
    if bucket not in BUCKETS:
        raise DomainError(400, "invalid", "bucket: 1h or 1d", "bucket")
    return BUCKETS[bucket]


def render_check(row: Mapping[str, Any]) -> dict[str, Any]:
    """A check as the API shows one (a ``checks`` row, or a trial's: ``domain/trials.py``)."""
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


def render_incident(row: asyncpg.Record, now: datetime) -> dict[str, Any]:
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
        # Who took it in hand (domain/incidents.py): their name as it was then, and their note.
        "acknowledged_at": rfc3339(row["acknowledged_at"]),
        "acknowledged_by": row["acknowledged_by_name"],
        "acknowledged_note": row["acknowledged_note"],
    }


# -- operations -----------------------------------------------------------------------------------


async def checks(
    deps: Deps,
    actor: Actor,
    monitor_id: int,
    *,
    start: datetime | None = None,
    end: datetime | None = None,
    limit: int = paging.DEFAULT_LIMIT,
    cursor: str | None = None,
    checked_from: str | None = None,
) -> dict[str, Any]:
    """The monitor's checks in [start, end), newest first, of one location if ``checked_from``."""
    authorize(actor, RESOURCE, "read")
    paging.check_limit(limit)
    after = paging.decode_cursor(cursor, (int,))
    if after is not None:
        # The cursor is the previous page's last time, in microseconds since the epoch.
        try:
            before = EPOCH + timedelta(microseconds=after[0])
        except OverflowError:
            raise DomainError(400, "invalid", "cursor: not a cursor this endpoint issued", "cursor") from None
        end = before if end is None else min(end, before)
    if checked_from is not None and not LOCATION.match(checked_from):
        raise DomainError(
            400, "invalid", "checked_from: not a location name (as MONITOR_LOCATION)", "checked_from"
        )
    async with deps.pool.acquire() as conn:
        monitor = await _owned(conn, actor, monitor_id)
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
            checked_from,
        )
    next_cursor = None
    if len(rows) > limit:
        next_cursor = paging.encode_cursor([(rows[limit - 1]["time"] - EPOCH) // timedelta(microseconds=1)])
    return {"items": [render_check(r) for r in rows[:limit]], "next_cursor": next_cursor}


async def incidents(
    deps: Deps,
    actor: Actor,
    monitor_id: int,
    *,
    start: datetime | None = None,
    end: datetime | None = None,
    limit: int = paging.DEFAULT_LIMIT,
    cursor: str | None = None,
) -> dict[str, Any]:
    """The monitor's incidents that overlap [start, end), newest first."""
    authorize(actor, RESOURCE, "read")
    paging.check_limit(limit)
    after = paging.decode_cursor(cursor, (int,))
    async with deps.pool.acquire() as conn:
        monitor = await _owned(conn, actor, monitor_id)
        now = await conn.fetchval("SELECT now()")
        rows = await overlapping_incidents(
            conn, [monitor["id"]], start, end, below=after[0] if after else None, limit=limit + 1
        )
    page, next_cursor = paging.next_page(rows, limit)
    return {"items": [render_incident(r, now) for r in page], "next_cursor": next_cursor}


async def uptime(
    deps: Deps,
    actor: Actor,
    monitor_id: int,
    *,
    start: datetime | None = None,
    end: datetime | None = None,
    windows: str | None = None,
) -> dict[str, Any]:
    """Over ``windows`` (``24h``, several: ``24h,7d,30d``) up to now, or over [start, end)
    (default: the last 24 hours to ``end``); one window answers flat. A monitor with locations
    gets each one's figures too."""
    authorize(actor, RESOURCE, "read")
    if windows is not None and (start is not None or end is not None):
        raise DomainError(400, "invalid", "window: give either window or from/to, not both", "window")
    names = [w for w in (windows or "").split(",") if w] if windows is not None else []
    if windows is not None and not names:
        raise DomainError(400, "invalid", "window: must look like 24h, 7d, 30d or 90d", "window")
    if len(names) > MAX_WINDOWS:
        raise DomainError(400, "invalid", f"window: at most {MAX_WINDOWS} windows", "window")
    deltas = [window(w) for w in names]
    async with deps.pool.acquire() as conn:
        monitor = await _owned(conn, actor, monitor_id)
        now = await conn.fetchval("SELECT now()")
        if not deltas:
            to = end or now
            spans = [(start or to - window(DEFAULT_WINDOW), to)]
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
    if len(names) > 1:
        return {"monitor_id": monitor["id"], "windows": {w: r for w, r in zip(names, results, strict=True)}}
    return results[0]


async def stats(
    deps: Deps,
    actor: Actor,
    monitor_id: int,
    *,
    bucket: str = "1h",
    start: datetime | None = None,
    end: datetime | None = None,
) -> dict[str, Any]:
    """Per ``bucket`` in [start, end) (default: the last 24 hours, or 30 days by day): count,
    share up, and the average, p50, p95 and max latency of the successful checks (null where
    none succeeded), and the time spent degraded."""
    authorize(actor, RESOURCE, "read")
    size = bucket_size(bucket)
    async with deps.pool.acquire() as conn:
        monitor = await _owned(conn, actor, monitor_id)
        now = await conn.fetchval("SELECT now()")
        end = end or now
        start = start or end - (timedelta(hours=24) if bucket == "1h" else timedelta(days=30))
        if (end - start) / size > MAX_BUCKETS:
            raise DomainError(400, "invalid", f"from: at most {MAX_BUCKETS} buckets per request", "from")
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
    return {
        "monitor_id": monitor["id"],
        "bucket": bucket,
        "from": rfc3339(start),
        "to": rfc3339(end),
        "items": items,
    }


# -- what the operations read ---------------------------------------------------------------------


async def overlapping_incidents(
    conn: asyncpg.Connection,
    ids: list[int],
    start: datetime | None,
    end: datetime | None,
    *,
    below: int | None = None,
    limit: int | None = None,
) -> list[asyncpg.Record]:
    """The incidents of ``ids`` that overlap [start, end), newest first (``INCIDENTS_SQL``)."""
    rows: list[asyncpg.Record] = await conn.fetch(INCIDENTS_SQL, ids, start, end, below, limit)
    return rows


async def latency(
    conn: asyncpg.Connection, ids: list[int], start: datetime, end: datetime
) -> dict[int, tuple[list[int], float | None]]:
    """Each monitor's (latency histogram, max) over the hours that start in [start, end), from
    the hourly rollups (``LATENCY_SQL``); ``rollups.percentile`` reads its quantiles."""
    return {
        row["monitor_id"]: (list(row["hist"]), row["latency_max"])
        for row in await conn.fetch(LATENCY_SQL, ids, start, end)
    }


def _bucket_start(value: datetime, size: timedelta) -> datetime:
    return EPOCH + ((value - EPOCH) // size) * size


async def _owned(conn: asyncpg.Connection, actor: Actor, monitor_id: int) -> asyncpg.Record:
    row = await conn.fetchrow(
        "SELECT id, created_at, locations FROM monitors WHERE id = $1 AND account_id = $2",
        monitor_id,
        actor.account_id,
    )
    if row is None:
        raise not_found("monitor")
    return row
