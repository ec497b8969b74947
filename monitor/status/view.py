"""A status page as its visitors see it, from the data read for it: pure, so what the page,
its JSON and its feed say is decided (and tested) here.

What is public is decided here too: a monitor's name, state, uptime, daily bars and response
times; its target only when the page's owner shows it; incidents with their times and
durations, never the check's error text (it names hosts, addresses and status lines of the
owner's network); no ids, but an incident post's (it is the post's permalink). A post's
Markdown is shown as ``monitor/markdown.py`` makes it, and nothing else of a post is markup.

Maintenance is not downtime, here as in the uptime figures (``domain/uptime.py``) and on badges:
an incident wholly inside the monitor's maintenance windows is listed (and in the feed) as
maintenance, not as an outage, and a day's bar does not count it; one that runs past a window
is an outage whose ``downtime_seconds`` is the part outside the windows. A monitor in an open
window is shown as "Maintenance", whatever its checks say.
"""

from __future__ import annotations

import heapq
import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from monitor import markdown, times
from monitor.domain.uptime import Interval, Spans, Uptime, subtract

# Name-based UUIDs of status pages and their incidents (Atom ids) are made in this namespace.
NAMESPACE = uuid.UUID("5b0f7c1e-2a55-4d39-9a3c-6d3e1f0b7a21")
DAY = timedelta(days=1)
DAYS = 90
WINDOWS = {"24h": timedelta(hours=24), "7d": 7 * DAY, "30d": 30 * DAY, "90d": 90 * DAY}
INCIDENTS_LISTED = 30
# How a day's bar is drawn, by its uptime: the first level it reaches.
LEVELS = ((100.0, "up"), (99.0, "minor"), (95.0, "partial"), (0.0, "down"))
STATE_TEXT = {
    "investigating": "Investigating",
    "identified": "Identified",
    "monitoring": "Monitoring",
    "resolved": "Resolved",
}
IMPACT_TEXT = {"none": "No impact", "minor": "Minor", "major": "Major", "critical": "Critical"}
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
    # The average of every check of those hours (weighted by checks, as a badge's); without
    # it, the mean of the hourly averages.
    response_ms: Mapping[int, float] = field(default_factory=dict)
    maintenance: Sequence[Mapping[str, Any]] = ()  # name, from, to, active, monitor_ids
    # Each monitor's maintenance spans over the days shown (to now): what is not downtime.
    maintenance_spans: Spans = field(default_factory=dict)
    # Incident posts (open ones, and resolved ones of the page's post_history_days), and each
    # one's updates, oldest first.
    posts: Sequence[Mapping[str, Any]] = ()
    post_updates: Mapping[int, Sequence[Mapping[str, Any]]] = field(default_factory=dict)


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


Span = tuple[datetime, datetime | None]


def per_day(spans: Sequence[Span], days: Sequence[datetime], now: datetime) -> list[list[Span]]:
    """For each of ``days`` (consecutive day starts), the spans that touch it (an open one runs
    to ``now``): each span is looked at once per day it covers."""
    buckets: list[list[Span]] = [[] for _ in days]
    if not days:
        return buckets
    first, last = days[0], len(days) - 1
    for began, ended in spans:
        low = max(0, (began - first) // DAY)
        high = min(last, ((ended or now) - first) // DAY)
        for i in range(low, high + 1):
            buckets[i].append((began, ended))
    return buckets


def shown_target(url: str | None) -> str | None:
    """A target as visitors may see it: without a query or fragment, where tokens hide
    (``?key=...``); a type's own target text (``tcp://host:25``) as it is."""
    if not url:
        return None
    return url.split("#", 1)[0].split("?", 1)[0] if url.startswith(("http://", "https://")) else url


def outside(span: Span, maintenance: Sequence[Span], now: datetime) -> list[Interval]:
    """The parts of an incident (an open one to ``now``) outside the maintenance spans: its
    downtime; none for an incident wholly inside them."""
    began, ended = span
    return subtract([(began, ended or now)], [(s, e or now) for s, e in maintenance])


def _overlapping(spans: Sequence[Sequence[Interval]], start: datetime, end: datetime) -> int:
    """How many of the incidents (each given by its parts outside maintenance) touch the day."""
    return sum(1 for parts in spans if any(s < end and e > start for s, e in parts))


def _monitor(data: PageData, monitor: Mapping[str, Any], in_maintenance: bool) -> dict[str, Any]:
    mid = monitor["id"]
    hours = data.latency.get(mid, ())
    windows = data.windows.get(mid, {})
    incidents = data.incidents.get(mid, [])
    by_day = per_day(incidents, data.days, data.now)
    maintenance = data.maintenance_spans.get(mid, [])
    parts = {span: outside(span, maintenance, data.now) for span in incidents} if maintenance else None
    return {
        "name": monitor["name"],
        "type": monitor["type"],
        "target": shown_target(monitor["url"]) if data.page["show_urls"] else None,
        "status": status_of(monitor, in_maintenance),
        "since": monitor["changed_at"],
        "uptime": {name: (windows[name].percent if name in windows else None) for name in WINDOWS},
        "days": [
            {
                "date": day.date().isoformat(),
                "uptime_percent": u.percent,
                "downtime_seconds": u.downtime_seconds,
                "incidents": _overlapping(
                    [parts[s] if parts is not None else [(s[0], s[1] or data.now)] for s in touching],
                    day,
                    day + DAY,
                ),
            }
            for day, u, touching in zip(data.days, data.daily.get(mid, ()), by_day, strict=False)
        ],
        "response_time": {
            "avg_ms": data.response_ms.get(mid, sum(v for _, v in hours) / len(hours) if hours else None),
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
    # The INCIDENTS_LISTED to show (ongoing first, then newest) chosen before any is written
    # out: a page of 250 monitors can hold 40,000 incidents in 90 days.
    listed = heapq.nsmallest(
        INCIDENTS_LISTED,
        (
            (ended is not None, -began.timestamp(), shown[mid], mid, began, ended)
            for mid, spans in data.incidents.items()
            if mid in shown
            for began, ended in spans
        ),
    )
    incidents = [
        _incident(data, page["id"], mid, name, began, ended) for _, _, name, mid, began, ended in listed
    ]
    return {
        "title": page["title"],
        "description": page["description"],
        "logo_url": page["logo_url"],
        "favicon_url": page["favicon_url"],
        "updated_at": data.now,
        "status": overall([m["status"] for g in groups for m in g["monitors"]]),
        "groups": groups,
        "incidents": incidents,
        "posts": posts_of(data.posts, data.post_updates, page, shown),
        "post_history_days": page["post_history_days"],
        "maintenance": [maintenance_of(w, page["id"], shown) for w in data.maintenance],
    }


def maintenance_of(window: Mapping[str, Any], page_id: int, shown: Mapping[int, str]) -> dict[str, Any]:
    """An announced window as visitors see it: its name, the occurrence shown (the one open
    now, else the next), its public text with the sanitiser's HTML of it (null without one)
    and the monitors it covers that the page shows, by name. ``ref`` names the occurrence (a
    recurring window's next one is a new entry in the feed); no window or monitor id."""
    return {
        "name": window["name"],
        "from": window["from"],
        "to": window["to"],
        "active": window["active"],
        "text": window.get("text"),
        "html": window.get("html"),
        "announced_at": window.get("announced_at"),
        "monitors": [shown[m] for m in window["monitor_ids"] if m in shown],
        "ref": uuid.uuid5(
            NAMESPACE, f"{page_id}/maintenance/{window.get('id')}/{times.rfc3339(window['from'])}"
        ).urn,
    }


def posts_of(
    posts: Sequence[Mapping[str, Any]],
    updates: Mapping[int, Sequence[Mapping[str, Any]]],
    page: Mapping[str, Any],
    shown: Mapping[int, str],
) -> list[dict[str, Any]]:
    """The page's posts as visitors see them: open ones first, then resolved ones, each newest
    first. What a post affects is named as the page shows it (a monitor by its name, a group by
    its heading), only where the page still shows it; no monitor id. A post's own id is public:
    it is its permalink."""
    groups = {g["name"] for g in page["groups"]}
    ordered = sorted(posts, key=lambda p: (p["resolved_at"] is not None, -p["id"]))
    return [post_of(p, updates.get(p["id"], ()), page["id"], shown, groups) for p in ordered]


def post_of(
    post: Mapping[str, Any],
    updates: Sequence[Mapping[str, Any]],
    page_id: int,
    shown: Mapping[int, str],
    groups: Collection[str],
) -> dict[str, Any]:
    """One post: its fields, what it affects, and its updates newest first, each text as
    sanitised HTML (``monitor/markdown.py``) beside the Markdown it came from."""
    return {
        "id": post["id"],
        # A stable Atom id: the page and the post.
        "ref": uuid.uuid5(NAMESPACE, f"{page_id}/posts/{post['id']}").urn,
        "title": post["title"],
        "impact": post["impact"],
        "state": post["state"],
        "resolved": post["resolved_at"] is not None,
        "created_at": post["created_at"],
        "updated_at": post["updated_at"],
        "resolved_at": post["resolved_at"],
        "affected": {
            "monitors": [shown[m] for m in post["monitor_ids"] if m in shown],
            "groups": [g for g in post["groups"] if g in groups],
        },
        "updates": [
            {
                "state": u["state"],
                "text": u["body"],
                "html": markdown.html_of(u["body"], u.get("html"), u.get("renderer")),
                "at": u["created_at"],
            }
            for u in reversed(updates)
        ],
    }


def _incident(
    data: PageData, page_id: int, mid: int, name: str, began: datetime, ended: datetime | None
) -> dict[str, Any]:
    down = outside((began, ended), data.maintenance_spans.get(mid, []), data.now)
    return {
        # Stable and unique (an Atom entry's id): the page, the monitor and the start, hashed,
        # as names are neither unique nor fixed. The same whether it is maintenance or not, so
        # an entry's kind can change (a window ended with the monitor still down) in place.
        "ref": uuid.uuid5(NAMESPACE, f"{page_id}/{mid}/{times.rfc3339(began)}").urn,
        "monitor": name,
        # "maintenance": wholly inside the monitor's maintenance windows, so no downtime.
        "kind": "outage" if down else "maintenance",
        "started_at": began,
        "ended_at": ended,
        "ongoing": ended is None,
        "duration_seconds": round(((ended or data.now) - began).total_seconds()),
        # The part outside maintenance: what counts against uptime.
        "downtime_seconds": round(sum((e - s).total_seconds() for s, e in down)),
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
