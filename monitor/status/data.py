"""What a status page shows, read from the database in one statement: its monitors, their
uptime over the four windows and each of the last 90 days, response times, incidents and
maintenance.

The figures are those of the API's uptime (``monitor.domain.uptime``: ``uptime_of`` over the
records ``records`` reads, with ``count_checks``'s counts), over the page's monitors at
once: the incidents, pauses and maintenance of the 90 days are read once and every window and
day is computed from them, the days' check counts come from the daily rollups. All of it is
one statement (each part an array of rows), so a page costs the database one query per build,
whatever its size (the API's own reads would be 6 per day and window: 564), and a bar's
figure is the one the API answers for that day.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import asyncpg

from monitor import markdown
from monitor.domain.maintenance import rule_of
from monitor.domain.schemas.maintenance import MAX_ANNOUNCE_HOURS
from monitor.domain.uptime import HOUR, Records, ceil_hour, uptime_of, window_spans
from monitor.maintenance import active_at, next_after
from monitor.status.view import DAY, WINDOWS, PageData, days_until, per_day

# A window without a public text is announced (by its name) this far ahead; one with a text
# its own announce_hours ahead, at most MAX_ANNOUNCE_HOURS: the farthest a build reads.
AHEAD = timedelta(days=14)
FARTHEST = max(AHEAD, timedelta(hours=MAX_ANNOUNCE_HOURS))
# Monitors a page shows at most (those its groups name first, then by id): a page of 250 is
# about 24,000 figures and 2 MB of HTML (22 kB gzipped), built in 0.3 s of CPU once per period
# (0.7 s with two incidents a day on every monitor), in a worker thread.
MAX_MONITORS = 250
PAGE_FIELDS = (
    "id",
    "account_id",
    "slug",
    "title",
    "description",
    "logo_url",
    "favicon_url",
    "domain",
    "show_urls",
    "post_history_days",
    "groups",
)
MONITOR_FIELDS = ("id", "name", "type", "url", "paused", "tags", "created_at", "status", "changed_at")
WINDOW_FIELDS = ("monitor_id", "id", "name", "kind", "starts_at", "ends_at", "rrule", "cron", "dtstart",
                 "timezone", "duration_seconds", "public_text", "announce_hours", "updated_at")  # fmt: skip
# The spans of counted checks: the four windows, then today. Each is count_checks's for a
# window that runs to now: whole hours from the hourly rollups, the part before the first
# whole hour from raw checks.
COUNTED = (*WINDOWS, "today")
DAILY_FIELDS = ("monitor", "day", "n", "up")
# Incident posts a page shows at most: every open one, then the resolved ones of its
# post_history_days, newest first.
MAX_POSTS = 200
POST_FIELDS = (
    "id",
    "title",
    "impact",
    "state",
    "monitor_ids",
    "groups",
    "created_at",
    "updated_at",
    "resolved_at",
)
UPDATE_FIELDS = ("post_id", "state", "body", "html", "renderer", "created_at")


def _spans(table: str, alias: str) -> str:
    return f"""(SELECT array_agg(x.monitor_id) AS {alias}_monitor, array_agg(x.started_at) AS {alias}_start,
            array_agg(x.ended_at) AS {alias}_end
        FROM {table} x WHERE x.monitor_id IN (SELECT id FROM m) AND x.started_at < $4
          AND coalesce(x.ended_at, 'infinity') > $3) {alias}"""


# $1 the page's slug, $2 MAX_MONITORS; $3, $4 the records' span; $5 the maintenance rows' end;
# $6 the first of the days; $7 the end of the counted whole hours; from $8 each COUNTED span's
# start and first whole hour; then today (the end of the daily rollups), 24 h ago, now and
# MAX_POSTS.
_BOUNDS = 8
_LAST = _BOUNDS + 2 * len(COUNTED)


def _counts() -> str:
    parts = []
    for i in range(len(COUNTED)):
        start, full_start = f"${_BOUNDS + 2 * i}", f"${_BOUNDS + 1 + 2 * i}"
        parts.append(f"""SELECT {i} AS i, h.monitor_id, sum(h.checks)::bigint AS n,
                   sum(h.checks_up)::bigint AS up
            FROM checks_hourly h WHERE h.monitor_id IN (SELECT id FROM m)
              AND h.hour >= {full_start} AND h.hour < $7 GROUP BY h.monitor_id""")
        parts.append(f"""SELECT {i}, c.monitor_id, count(*), count(*) FILTER (WHERE c.ok)
            FROM checks c WHERE c.monitor_id IN (SELECT id FROM m)
              AND c.time >= {start} AND c.time < {full_start} GROUP BY c.monitor_id""")
    return "\n        UNION ALL ".join(parts)


def _monitor_column(name: str) -> str:
    # Each monitor's tags are an array: the arrays of all go as one JSON array.
    aggregate = "jsonb_agg" if name == "tags" else "array_agg"
    return f"{aggregate}(m.{name} ORDER BY m.id) AS m_{name}"


def _post_column(name: str) -> str:
    # A post's monitor ids and groups are arrays: the arrays of all go as one JSON array.
    aggregate = "jsonb_agg" if name in ("monitor_ids", "groups") else "array_agg"
    return f"{aggregate}(t.{name} ORDER BY t.id DESC) AS t_{name}"


def _update_column(name: str) -> str:
    # smallint[] is not among the arrays the pool's connections learn at start (integer[] is).
    value = f"u.{name}::integer" if name == "renderer" else f"u.{name}"
    return f"array_agg({value} ORDER BY u.post_id, u.id) AS u_{name}"


def _window_column(name: str) -> str:
    return f"array_agg({'m.id' if name == 'monitor_id' else 'w.' + name}) AS w_{name}"


# One row of arrays of built-in types (asyncpg learns those once per connection, when the
# api's pool opens it: db.preload_array_codecs; an array of rows it would look up again), or
# none when the page is gone. The page's row is read here too, so a build never shows what a
# stale copy of it says (a show_urls just turned off, a group just removed).
SQL = f"""
WITH p AS (SELECT * FROM status_pages WHERE slug = $1),
g AS (SELECT jsonb_array_elements(p.groups) AS g FROM p),
named AS (SELECT (jsonb_array_elements_text(g -> 'monitor_ids'))::bigint AS id FROM g),
m AS (
    SELECT m.id, m.name, m.type, m.url, m.paused, m.tags, m.created_at,
           coalesce(s.status, 'unknown') AS status, s.changed_at
    FROM p JOIN monitors m ON m.account_id = p.account_id LEFT JOIN monitor_state s ON s.monitor_id = m.id
    WHERE m.id IN (SELECT id FROM named)
       OR m.tags && ARRAY(SELECT jsonb_array_elements_text(g -> 'tags') FROM g)
    -- The monitors a group names come first, then those its tags reach.
    ORDER BY m.id IN (SELECT id FROM named) DESC, m.id LIMIT $2
),
-- Posts: the open ones, and those resolved within the page's post_history_days.
t AS (
    SELECT x.* FROM incident_posts x
    WHERE x.page_id = (SELECT id FROM p)
      AND (x.resolved_at IS NULL
           OR x.resolved_at >= ${_LAST + 2}::timestamptz
                               - make_interval(days => (SELECT post_history_days FROM p)))
    ORDER BY x.resolved_at IS NULL DESC, x.id DESC LIMIT ${_LAST + 3}
)
SELECT * FROM
    (SELECT {", ".join(f"p.{f} AS p_{f}" for f in PAGE_FIELDS)} FROM p) page,
    (SELECT {", ".join(_monitor_column(f) for f in MONITOR_FIELDS)} FROM m) mon,
    {_spans("incidents", "inc")},
    {_spans("degradations", "deg")},
    {_spans("monitor_pauses", "pau")},
    (SELECT {", ".join(_window_column(f) for f in WINDOW_FIELDS)}
     FROM m JOIN maintenance_windows w
       ON w.account_id = (SELECT account_id FROM p) AND (w.monitor_ids @> ARRAY[m.id] OR w.tags && m.tags)
     WHERE w.kind <> 'once' OR (w.starts_at < $5 AND w.ends_at > $3)) win,
    (SELECT array_agg(k.i) AS c_i, array_agg(k.monitor_id) AS c_monitor, array_agg(k.n) AS c_n,
            array_agg(k.up) AS c_up
     FROM ({_counts()}) k) cnt,
    (SELECT array_agg(d.monitor_id) AS d_monitor, array_agg(d.day) AS d_day, array_agg(d.checks) AS d_n,
            array_agg(d.checks_up) AS d_up
     FROM checks_daily d WHERE d.monitor_id IN (SELECT id FROM m) AND d.day >= $6 AND d.day < ${_LAST}) day,
    (SELECT array_agg(h.monitor_id ORDER BY h.hour) AS l_monitor, array_agg(h.hour ORDER BY h.hour) AS l_hour,
            array_agg(h.latency_sum ORDER BY h.hour) AS l_sum, array_agg(h.latency_n ORDER BY h.hour) AS l_n
     FROM checks_hourly h
     WHERE h.monitor_id IN (SELECT id FROM m) AND h.hour >= ${_LAST + 1} AND h.latency_n > 0) lat,
    (SELECT {", ".join(_post_column(f) for f in POST_FIELDS)} FROM t) pst,
    (SELECT {", ".join(_update_column(f) for f in UPDATE_FIELDS)}
     FROM incident_post_updates u WHERE u.post_id IN (SELECT id FROM t)) upd
"""


# A post's permalink page: the page's row, the post, its updates (oldest first) and the names
# of the monitors it affects that the page shows, in one statement ($1 the slug, $2 the post).
POST_SQL = f"""
SELECT {", ".join(f"s.{f} AS p_{f}" for f in PAGE_FIELDS)},
       {", ".join(f"x.{f} AS t_{f}" for f in POST_FIELDS)},
       u.states AS u_state, u.bodies AS u_body, u.htmls AS u_html, u.renderers AS u_renderer,
       u.times AS u_created_at, n.ids AS n_id, n.names AS n_name
FROM status_pages s JOIN incident_posts x ON x.page_id = s.id
CROSS JOIN LATERAL (
    SELECT array_agg(u.state ORDER BY u.id) AS states, array_agg(u.body ORDER BY u.id) AS bodies,
           array_agg(u.html ORDER BY u.id) AS htmls,
           array_agg(u.renderer::integer ORDER BY u.id) AS renderers,
           array_agg(u.created_at ORDER BY u.id) AS times
    FROM incident_post_updates u WHERE u.post_id = x.id
) u
CROSS JOIN LATERAL (
    SELECT array_agg(m.id) AS ids, array_agg(m.name) AS names FROM monitors m
    WHERE m.account_id = s.account_id AND m.id = ANY(x.monitor_ids)
      AND (m.id IN (SELECT (jsonb_array_elements_text(g -> 'monitor_ids'))::bigint
                    FROM jsonb_array_elements(s.groups) g)
           OR m.tags && ARRAY(SELECT jsonb_array_elements_text(g -> 'tags')
                              FROM jsonb_array_elements(s.groups) g))
) n
WHERE s.slug = $1 AND x.id = $2
"""


def post_parts(
    row: Mapping[str, Any],
) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]], dict[int, str]]:
    """What ``POST_SQL`` read: the page's row, the post, its updates and the names of the
    monitors it affects that the page shows."""
    page = {f: row[f"p_{f}"] for f in PAGE_FIELDS}
    post = {f: row[f"t_{f}"] for f in POST_FIELDS}
    names = ("state", "body", "html", "renderer", "created_at")
    updates = [
        dict(zip(names, u, strict=True)) for u in zip(*(row[f"u_{n}"] or () for n in names), strict=True)
    ]
    shown = dict(zip(row["n_id"] or (), row["n_name"] or (), strict=True))
    return page, post, updates, shown


def _rows(row: Mapping[str, Any], prefix: str, names: Sequence[str]) -> list[dict[str, Any]]:
    """The rows of one part of the answer: its columns ``<prefix>_<name>`` zipped."""
    columns = [row[f"{prefix}_{name}"] or () for name in names]
    return [dict(zip(names, values, strict=True)) for values in zip(*columns, strict=True)]


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
    latency: dict[int, list[tuple[datetime, float, int]]]  # each hour's latency sum and count
    maintenance: list[dict[str, Any]]
    # Posts newest first, and each one's updates oldest first.
    posts: list[dict[str, Any]] = field(default_factory=list)
    post_updates: dict[int, list[dict[str, Any]]] = field(default_factory=dict)


def _by_monitor(row: Mapping[str, Any], prefix: str) -> dict[int, list[tuple[datetime, datetime | None]]]:
    spans: dict[int, list[tuple[datetime, datetime | None]]] = defaultdict(list)
    for r in _rows(row, prefix, ("monitor", "start", "end")):
        spans[r["monitor"]].append((r["start"], r["end"]))
    return spans


async def gather(conn: asyncpg.Connection, slug: str, now: datetime) -> Raw | None:
    """Everything ``assemble`` needs for the page ``slug`` at ``now``, in one statement; None
    when there is no such page."""
    days = days_until(now)
    start, end = min(days[0], now - WINDOWS["90d"]), now + DAY
    counted = [now - delta for delta in WINDOWS.values()] + [days[-1]]
    bounds = [value for s in counted for value in (s, ceil_hour(s))]
    row = await conn.fetchrow(
        SQL, slug, MAX_MONITORS, start, end, now + FARTHEST, days[0], ceil_hour(now), *bounds, days[-1],
        now - 24 * HOUR, now, MAX_POSTS,
    )  # fmt: skip
    if row is None:
        return None
    page = {f: row[f"p_{f}"] for f in PAGE_FIELDS}
    monitors = _rows(row, "m", MONITOR_FIELDS)
    windows = _rows(row, "w", WINDOW_FIELDS)
    counts: list[dict[int, tuple[int, int]]] = [defaultdict(lambda: (0, 0)) for _ in COUNTED]
    for c in _rows(row, "c", ("i", "monitor", "n", "up")):
        was = counts[c["i"]][c["monitor"]]
        counts[c["i"]][c["monitor"]] = (was[0] + c["n"], was[1] + c["up"])
    latency: dict[int, list[tuple[datetime, float, int]]] = defaultdict(list)
    for h in _rows(row, "l", ("monitor", "hour", "sum", "n")):
        latency[h["monitor"]].append((h["hour"], h["sum"], h["n"]))
    updates: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for u in _rows(row, "u", UPDATE_FIELDS):
        updates[u["post_id"]].append(u)
    found = Records(
        _by_monitor(row, "inc"),
        _by_monitor(row, "deg"),
        _by_monitor(row, "pau"),
        # Maintenance is left out like paused time (only the part up to now can be observed).
        window_spans(windows, start, max(start, now)),
    )
    return Raw(
        page, monitors, now, days, found,
        window_counts={name: dict(counts[i]) for i, name in enumerate(WINDOWS)},
        daily_counts={(d["monitor"], d["day"]): (d["n"], d["up"]) for d in _rows(row, "d", DAILY_FIELDS)},
        today_counts=dict(counts[-1]),
        latency=dict(latency),
        maintenance=_maintenance(windows, now),
        posts=_rows(row, "t", POST_FIELDS),
        post_updates=updates,
    )  # fmt: skip


def assemble(raw: Raw) -> PageData:
    """The figures of every window and day, from the records read once (pure: run in a
    thread, it keeps a large page's arithmetic off the event loop). Each day is computed from
    the records that touch it only (``view.per_day``), so a build grows with days plus records,
    not with their product (250 monitors with two incidents a day each: 5.4 s before)."""
    now, found, days = raw.now, raw.found, raw.days
    parts = (found.incidents, found.degradations, found.pauses, found.maintenance)
    windows: dict[int, dict[str, Any]] = defaultdict(dict)
    daily: dict[int, list[Any]] = {}
    for monitor in raw.monitors:
        mid = monitor["id"]
        pair = (mid, monitor["created_at"])
        for name, delta in WINDOWS.items():
            counts = raw.window_counts[name].get(mid, (0, 0))
            windows[mid][name] = uptime_of(pair, now - delta, now, now, found, counts)
        by_day = [per_day(part.get(mid, ()), days, now) for part in parts]
        daily[mid] = []
        for i, day in enumerate(days):
            counts = (
                raw.today_counts.get(mid, (0, 0))
                if i == len(days) - 1
                else raw.daily_counts.get((mid, day), (0, 0))
            )
            only = Records(*({mid: spans[i]} for spans in by_day))
            daily[mid].append(uptime_of(pair, day, day + DAY, now, only, counts))
    return PageData(
        page=raw.page,
        monitors=raw.monitors,
        now=now,
        days=days,
        daily=daily,
        windows=dict(windows),
        incidents=found.incidents,
        latency={mid: [(hour, total / n) for hour, total, n in hours] for mid, hours in raw.latency.items()},
        response_ms={
            mid: sum(total for _, total, _ in hours) / sum(n for _, _, n in hours)
            for mid, hours in raw.latency.items()
        },
        maintenance=with_html(raw.maintenance),
        maintenance_spans=found.maintenance,
        posts=raw.posts,
        post_updates=raw.post_updates,
    )


def with_html(windows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The announced windows, each text with the sanitiser's HTML of it (``monitor.markdown``:
    about a millisecond each, so in ``assemble``'s thread, not on the event loop)."""
    return [{**w, "html": None if w["text"] is None else markdown.render(w["text"])} for w in windows]


def lead(row: Mapping[str, Any]) -> timedelta:
    """How long before an occurrence opens the page announces it: a window with a public text
    its ``announce_hours``, one without AHEAD."""
    return AHEAD if row["public_text"] is None else timedelta(hours=row["announce_hours"])


def _maintenance(rows: Sequence[Mapping[str, Any]], now: datetime) -> list[dict[str, Any]]:
    """The windows over these monitors that are open now or whose next occurrence opens within
    their lead (``lead``): their span (the current one, else the next), their public text (its
    HTML is ``with_html``'s) and the monitors they cover."""
    shown: dict[int, dict[str, Any]] = {}
    skipped: set[int] = set()
    for row in rows:
        if row["id"] in skipped:
            continue
        entry = shown.get(row["id"])
        if entry is None:
            rule = rule_of(row)
            span = active_at(rule, now) if rule is not None else None
            active = span is not None
            if span is None and rule is not None:
                span = next_after(rule, now)
            if span is None or (not active and span[0] > now + lead(row)):
                skipped.add(row["id"])
                continue
            entry = shown[row["id"]] = {
                "id": row["id"], "name": row["name"], "from": span[0], "to": span[1], "active": active,
                "text": row["public_text"], "html": None, "monitor_ids": [],
                # When this occurrence came on the page: its lead began, or the window changed.
                "announced_at": min(now, max(row["updated_at"], span[0] - lead(row))),
            }  # fmt: skip
        entry["monitor_ids"].append(row["monitor_id"])
    return sorted(shown.values(), key=lambda w: (not w["active"], w["from"], w["name"]))
