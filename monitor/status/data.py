"""What a status page shows, read from the database in one go: its monitors, their uptime over
the four windows and each of the last 90 days, response times, incidents and maintenance.

The reads are those of the API's uptime (``monitor.api.uptime``), over the page's monitors at
once: the incidents, pauses and maintenance of the 90 days are read once and every window and
day is computed from them, the days' check counts come from the daily rollups, so a page of
any size is built in about 16 queries (not 6 per day and window: 564), and a bar's figure is
the one the API answers for that day.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import asyncpg

from monitor.api.maintenance import rule_of
from monitor.api.uptime import WINDOWS_SQL, Records, count_checks, records, uptime_of
from monitor.maintenance import active_at, next_after
from monitor.status.view import DAY, WINDOWS, PageData, days_until

# Maintenance announced this far ahead.
AHEAD = timedelta(days=14)
# Monitors a page shows at most (the first by id, when its tags reach more): a page of 250
# is about 24,000 figures and 1 MB of HTML (bench/README.md), built once per period.
MAX_MONITORS = 250

_MONITORS = """
SELECT m.id, m.name, m.type, m.url, m.paused, m.tags, m.created_at,
       coalesce(s.status, 'unknown') AS status, s.changed_at
FROM monitors m LEFT JOIN monitor_state s ON s.monitor_id = m.id
WHERE m.account_id = $1 AND (m.id = ANY($2::bigint[]) OR m.tags && $3::text[])
ORDER BY m.id LIMIT $4
"""
_DAILY = """
SELECT monitor_id, day, checks, checks_up FROM checks_daily
WHERE monitor_id = ANY($1::bigint[]) AND day >= $2 AND day < $3
"""
_LATENCY = """
SELECT monitor_id, hour, latency_sum, latency_n FROM checks_hourly
WHERE monitor_id = ANY($1::bigint[]) AND hour >= $2 AND latency_n > 0 ORDER BY hour
"""


@dataclass(frozen=True)
class Raw:
    """What the database said for a page; ``assemble`` makes the figures from it."""

    page: Mapping[str, Any]
    monitors: list[dict[str, Any]]
    now: datetime
    days: list[datetime]
    found: Records
    window_counts: dict[str, dict[int, tuple[int, int]]]
    daily_counts: dict[tuple[int, datetime], tuple[int, int]]
    today_counts: dict[int, tuple[int, int]]
    latency: dict[int, list[tuple[datetime, float]]]
    maintenance: list[dict[str, Any]]


async def gather(conn: asyncpg.Connection, page: Mapping[str, Any], now: datetime) -> Raw:
    """Everything ``assemble`` needs for ``page`` (a ``status_pages`` row) at ``now``."""
    groups = page["groups"]
    ids = [m for g in groups for m in g["monitor_ids"]]
    tags = [t for g in groups for t in g["tags"]]
    monitors = [dict(r) for r in await conn.fetch(_MONITORS, page["account_id"], ids, tags, MAX_MONITORS)]
    found_ids = [m["id"] for m in monitors]
    days = days_until(now)
    start = min(days[0], now - WINDOWS["90d"])
    found = await records(conn, found_ids, start, now + DAY, now)
    window_counts = {
        name: await count_checks(conn, found_ids, now - delta, now, now) for name, delta in WINDOWS.items()
    }
    daily_counts = {
        (r["monitor_id"], r["day"]): (r["checks"], r["checks_up"])
        for r in await conn.fetch(_DAILY, found_ids, days[0], days[-1])
    }
    today_counts = await count_checks(conn, found_ids, days[-1], days[-1] + DAY, now)
    latency: dict[int, list[tuple[datetime, float]]] = defaultdict(list)
    for row in await conn.fetch(_LATENCY, found_ids, now - timedelta(hours=24)):
        latency[row["monitor_id"]].append((row["hour"], row["latency_sum"] / row["latency_n"]))
    maintenance = await _maintenance(conn, found_ids, now)
    return Raw(
        page,
        monitors,
        now,
        days,
        found,
        window_counts,
        daily_counts,
        today_counts,
        dict(latency),
        maintenance,
    )


def assemble(raw: Raw) -> PageData:
    """The figures of every window and day, from the records read once (pure: run in a
    thread, it keeps a large page's arithmetic off the event loop)."""
    now, found = raw.now, raw.found
    windows: dict[int, dict[str, Any]] = defaultdict(dict)
    daily: dict[int, list[Any]] = {}
    for monitor in raw.monitors:
        mid = monitor["id"]
        pair = (mid, monitor["created_at"])
        for name, delta in WINDOWS.items():
            counts = raw.window_counts[name].get(mid, (0, 0))
            windows[mid][name] = uptime_of(pair, now - delta, now, now, found, counts)
        daily[mid] = [
            uptime_of(pair, day, day + DAY, now, found, raw.daily_counts.get((mid, day), (0, 0)))
            for day in raw.days[:-1]
        ]
        today = raw.days[-1]
        daily[mid].append(uptime_of(pair, today, today + DAY, now, found, raw.today_counts.get(mid, (0, 0))))
    return PageData(
        page=raw.page,
        monitors=raw.monitors,
        now=now,
        days=raw.days,
        daily=daily,
        windows=dict(windows),
        incidents=found.incidents,
        latency=raw.latency,
        maintenance=raw.maintenance,
    )


async def _maintenance(conn: asyncpg.Connection, ids: Sequence[int], now: datetime) -> list[dict[str, Any]]:
    """The windows over these monitors that are open now or open within AHEAD: their span
    (the current one, else the next) and the monitors they cover."""
    shown: dict[int, dict[str, Any]] = {}
    for row in await conn.fetch(WINDOWS_SQL, list(ids), now, now + AHEAD):
        entry = shown.get(row["id"])
        if entry is None:
            rule = rule_of(row)
            span = active_at(rule, now) if rule is not None else None
            active = span is not None
            if span is None and rule is not None:
                span = next_after(rule, now)
            if span is None or span[0] >= now + AHEAD:
                continue
            entry = shown[row["id"]] = {
                "name": row["name"], "from": span[0], "to": span[1], "active": active, "monitor_ids": [],
            }  # fmt: skip
        entry["monitor_ids"].append(row["monitor_id"])
    return sorted(shown.values(), key=lambda w: (not w["active"], w["from"], w["name"]))
