"""A status page as its visitors see it, from the data read for it: pure, so what the page,
its JSON and its feed say is decided (and tested) here.

What is public is decided here too: a monitor's name, state, uptime, daily bars and response
times; its target only when the page's owner shows it; incidents with their times and
durations, never the check's error text (it names hosts, addresses and status lines of the
owner's network); no ids.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from monitor import times
from monitor.api.uptime import Spans, Uptime

# Name-based UUIDs of status pages and their incidents (Atom ids) are made in this namespace.
NAMESPACE = uuid.UUID("5b0f7c1e-2a55-4d39-9a3c-6d3e1f0b7a21")
DAY = timedelta(days=1)
DAYS = 90
WINDOWS = {"24h": timedelta(hours=24), "7d": 7 * DAY, "30d": 30 * DAY, "90d": 90 * DAY}
INCIDENTS_LISTED = 30
# How a day's bar is drawn, by its uptime: the first level it reaches.
LEVELS = ((100.0, "up"), (99.0, "minor"), (95.0, "partial"), (0.0, "down"))
STATUS_TEXT = {
    "up": "Up",
    "degraded": "Degraded",
    "down": "Down",
    "paused": "Paused",
    "maintenance": "Maintenance",
    "unknown": "No data",
}
OVERALL_TEXT = {
    "up": "All systems operational",
    "degraded": "Degraded performance",
    "partial": "Partial outage",
    "down": "Major outage",
    "maintenance": "Scheduled maintenance in progress",
    "unknown": "No data yet",
}


@dataclass(frozen=True)
class PageData:
    page: Mapping[str, Any]  # the status_pages row
    monitors: Sequence[Mapping[str, Any]]  # id, name, type, url, paused, tags, created_at, status, changed_at
    now: datetime
    days: Sequence[datetime]  # the start of each day shown, oldest first (UTC)
    daily: Mapping[int, Sequence[Uptime]] = field(default_factory=dict)  # per monitor, per day
    windows: Mapping[int, Mapping[str, Uptime]] = field(default_factory=dict)  # per monitor, per WINDOWS key
    incidents: Spans = field(default_factory=dict)  # (started_at, ended_at) per monitor
    latency: Mapping[int, Sequence[tuple[datetime, float]]] = field(default_factory=dict)  # hourly averages
    maintenance: Sequence[Mapping[str, Any]] = ()  # name, from, to, active, monitor_ids


def days_until(now: datetime) -> list[datetime]:
    """The starts of the DAYS days (UTC) that end with today's."""
    today = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return [today - (DAYS - 1 - i) * DAY for i in range(DAYS)]


def level(percent: float | None) -> str:
    if percent is None:
        return "nodata"
    return next((name for floor, name in LEVELS if percent >= floor), "down")


def status_of(monitor: Mapping[str, Any], in_maintenance: bool) -> str:
    if monitor["paused"]:
        return "paused"
    if in_maintenance:
        return "maintenance"
    return str(monitor["status"]) if monitor["status"] in STATUS_TEXT else "unknown"


def overall(statuses: Sequence[str]) -> str:
    """The page's headline from its monitors' states (paused ones say nothing)."""
    watched = [s for s in statuses if s != "paused"]
    down = watched.count("down")
    if down:
        return "down" if down == len(watched) else "partial"
    for status in ("degraded", "maintenance"):
        if status in watched:
            return status
    if watched and all(s == "up" for s in watched):
        return "up"
    return "unknown"


def _overlapping(spans: Sequence[tuple[datetime, datetime | None]], start: datetime, end: datetime) -> int:
    return sum(1 for began, ended in spans if began < end and (ended is None or ended > start))


def _monitor(data: PageData, monitor: Mapping[str, Any], in_maintenance: bool) -> dict[str, Any]:
    mid = monitor["id"]
    hours = data.latency.get(mid, ())
    windows = data.windows.get(mid, {})
    spans = data.incidents.get(mid, [])
    return {
        "name": monitor["name"],
        "type": monitor["type"],
        "target": (monitor["url"] or None) if data.page["show_urls"] else None,
        "status": status_of(monitor, in_maintenance),
        "since": monitor["changed_at"],
        "uptime": {name: (windows[name].percent if name in windows else None) for name in WINDOWS},
        "days": [
            {
                "date": day.date().isoformat(),
                "uptime_percent": u.percent,
                "downtime_seconds": u.downtime_seconds,
                "incidents": _overlapping(spans, day, day + DAY),
            }
            for day, u in zip(data.days, data.daily.get(mid, ()), strict=False)
        ],
        "response_time": {
            "avg_ms": sum(v for _, v in hours) / len(hours) if hours else None,
            "hours": [{"hour": hour, "avg_ms": value} for hour, value in hours],
        },
    }


def build(data: PageData) -> dict[str, Any]:
    """The page's model: what the HTML, the JSON and the Atom feed are made from."""
    page = data.page
    by_id = {m["id"]: m for m in data.monitors}
    in_maintenance = {mid for w in data.maintenance if w["active"] for mid in w["monitor_ids"]}
    groups, shown = [], {}
    for group in page["groups"]:
        chosen = [by_id[i] for i in dict.fromkeys(group["monitor_ids"]) if i in by_id]
        named = {m["id"] for m in chosen}
        tags = set(group["tags"])
        tagged = sorted(
            (m for m in data.monitors if m["id"] not in named and tags & set(m["tags"])),
            key=lambda m: (m["name"].lower(), m["id"]),
        )
        monitors = [_monitor(data, m, m["id"] in in_maintenance) for m in [*chosen, *tagged]]
        shown.update({m["id"]: m["name"] for m in [*chosen, *tagged]})
        groups.append({"name": group["name"], "monitors": monitors})
    incidents = sorted(
        (
            {
                # Stable and unique (an Atom entry's id): the page, the monitor and the start,
                # hashed, as names are neither unique nor fixed.
                "ref": uuid.uuid5(NAMESPACE, f"{page['id']}/{mid}/{times.rfc3339(began)}").urn,
                "monitor": shown[mid],
                "started_at": began,
                "ended_at": ended,
                "ongoing": ended is None,
                "duration_seconds": round(((ended or data.now) - began).total_seconds()),
            }
            for mid, spans in data.incidents.items()
            if mid in shown
            for began, ended in spans
        ),
        key=lambda i: (not i["ongoing"], -i["started_at"].timestamp(), i["monitor"]),
    )
    return {
        "title": page["title"],
        "description": page["description"],
        "logo_url": page["logo_url"],
        "updated_at": data.now,
        "status": overall([m["status"] for g in groups for m in g["monitors"]]),
        "groups": groups,
        "incidents": incidents[:INCIDENTS_LISTED],
        "maintenance": [
            {
                "name": w["name"],
                "from": w["from"],
                "to": w["to"],
                "active": w["active"],
                "monitors": [shown[m] for m in w["monitor_ids"] if m in shown],
            }
            for w in data.maintenance
        ],
    }


def spark_points(values: Sequence[float], width: float = 120.0, height: float = 28.0) -> str:
    """An SVG polyline's points for ``values`` spread over ``width``, the largest at the top
    (1 unit of margin), or "" for fewer than two values."""
    if len(values) < 2:
        return ""
    top, low = max(values), min(values)
    spread = (top - low) or 1.0
    step = width / (len(values) - 1)
    return " ".join(
        f"{i * step:.1f},{1 + (height - 2) * (1 - (v - low) / spread):.1f}" for i, v in enumerate(values)
    )


def duration_text(seconds: float | None) -> str:
    if seconds is None:
        return ""
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    if hours == 0:
        return f"{minutes} min"
    if days == 0:
        return f"{hours} h {minutes % 60} min"
    return f"{days} d {hours % 24} h"
