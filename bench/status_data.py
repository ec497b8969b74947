"""The status bench's data: one account, N monitors with D days of rollups, a status page over them.

Made by SQL in well under a second for the default shape (``generate_series``): each monitor is
checked every 60 s, so an hour's rollup holds 60 checks whose latencies (around 40..400 ms,
varying by monitor and hour) sit in three buckets of ``monitor.rollups``' histogram; the daily
rollups are summed from the hours as migration 004 does. Each monitor has three closed incidents
at random times over the days (2-60 min; their hours lose the checks they cover), the last one
is down now with an ongoing incident, and the last ``raw_hours`` hours also have their raw check
rows (what the API reads at a window's partial first hour). The page has ``groups`` groups: even
ones name their monitors by id, odd ones by a tag, so both ways are read. With ``posts``, the
page lists a year of incident posts (``post_history_days`` 365): one open, the others resolved
at even intervals over the 365 days, each with ``POST_UPDATES`` updates of a Markdown text
(its HTML made once, as a write stores it) and the first group and two monitors affected.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

import asyncpg

from bench import database
from monitor import markdown, rollups
from monitor.domain import accounts

SLUG = "bench"
CHECKS_PER_HOUR = 60
# Latency buckets used: indexes (0-based) of monitor.rollups' histogram for ~50, ~100, ~250 ms.
_BUCKETS = (rollups.bucket_of(50), rollups.bucket_of(100), rollups.bucket_of(250))
POST_UPDATES = 5
POST_TEXT = (
    "We are **investigating** elevated errors on `checkout`.\n\n- payments time out\n"
    "- see [the provider's page](https://status.example.com/)\n\n> Next update in 30 minutes."
)


@dataclass(frozen=True)
class Loaded:
    account_id: int
    monitor_ids: list[int]
    badge_tokens: list[str]
    now: datetime
    rows: dict[str, int]


def _hist_sql() -> str:
    """An SQL array expression: 60 checks spread 20/30/10 over three latency buckets."""
    counts = [0] * rollups.N_BUCKETS
    for index, n in zip(_BUCKETS, (20, 30, 10), strict=True):
        counts[index] += n
    return "ARRAY[" + ", ".join(map(str, counts)) + "]::integer[]"


async def load(
    conn: asyncpg.Connection,
    *,
    monitors: int,
    groups: int,
    days: int,
    raw_hours: int,
    seed: int,
    posts: int = 0,
) -> Loaded:
    """Empty the bench database and load the data set; see the module's docstring."""
    await database.reset(conn)
    await conn.execute("SELECT setseed($1)", (seed % 1000) / 1000)
    now: datetime = await conn.fetchval("SELECT now()")
    account_id = await accounts.create_account(conn, "bench")
    # Group g (0-based) holds monitors n with n % groups == g; odd groups are chosen by tag.
    await conn.execute(
        """INSERT INTO monitors (account_id, name, url, interval_seconds, timeout_seconds, created_at, tags)
           SELECT $1, 'Service ' || n, 'https://service-' || n || '.example/health', 60, 10,
                  date_trunc('hour', $2::timestamptz) - make_interval(days => $3 + 1),
                  ARRAY['group-' || (n % $5)]
           FROM generate_series(1, $4) n""",
        account_id,
        now,
        days,
        monitors,
        groups,
    )
    ids = [r["id"] for r in await conn.fetch("SELECT id FROM monitors ORDER BY id")]
    await conn.execute(
        """INSERT INTO monitor_state (monitor_id, status, last_check_at, last_ok, changed_at)
           SELECT id, CASE WHEN id = $2 THEN 'down' ELSE 'up' END, $1::timestamptz, id <> $2,
                  $1::timestamptz - make_interval(hours => id::int)
           FROM monitors""",
        now,
        ids[-1],
    )
    # Three closed incidents each, at random times of the days shown; the last monitor's ongoing.
    await conn.execute(
        """INSERT INTO incidents (monitor_id, started_at, ended_at, status_code, error)
           SELECT id, at, at + make_interval(mins => 2 + (random() * 58)::int), 503, 'HTTP 503'
           FROM (SELECT m.id, $1::timestamptz - make_interval(secs => 3600 + random() * ($2 - 1) * 86400)
                        AS at
                 FROM monitors m CROSS JOIN generate_series(1, 3) k) s""",
        now,
        days,
    )
    await conn.execute(
        """INSERT INTO incidents (monitor_id, started_at, status_code, error)
           VALUES ($1, $2::timestamptz - interval '25 minutes', 503, 'HTTP 503')""",
        ids[-1],
        now,
    )
    hist = _hist_sql()
    await conn.execute(
        f"""INSERT INTO checks_hourly
                (monitor_id, hour, checks, checks_up, latency_n, latency_sum, latency_max, latency_hist)
            SELECT m.id, h, {CHECKS_PER_HOUR}, {CHECKS_PER_HOUR} - coalesce(d.down, 0), {CHECKS_PER_HOUR},
                   {CHECKS_PER_HOUR} * (40 + (m.id * 37 + extract(hour FROM h)::int * 11) % 360),
                   400 + (m.id * 13) % 300, {hist}
            FROM monitors m
            CROSS JOIN generate_series(date_trunc('hour', m.created_at), date_trunc('hour', $1::timestamptz),
                                       interval '1 hour') h
            LEFT JOIN LATERAL (
                SELECT least({CHECKS_PER_HOUR}, sum(extract(epoch FROM
                         least(coalesce(i.ended_at, $1), h + interval '1 hour')
                         - greatest(i.started_at, h)) / 60)::int) AS down
                FROM incidents i
                WHERE i.monitor_id = m.id AND i.started_at < h + interval '1 hour'
                  AND coalesce(i.ended_at, $1) > h
            ) d ON true""",
        now,
    )
    sums = ", ".join(f"sum(latency_hist[{i}])" for i in range(1, rollups.N_BUCKETS + 1))
    await conn.execute(
        f"""INSERT INTO checks_daily
                (monitor_id, day, checks, checks_up, latency_n, latency_sum, latency_max, latency_hist)
            SELECT monitor_id, date_bin('1 day', hour, 'epoch'::timestamptz), sum(checks), sum(checks_up),
                   sum(latency_n), sum(latency_sum), max(latency_max), ARRAY[{sums}]::integer[]
            FROM checks_hourly GROUP BY 1, 2"""
    )
    await conn.execute(
        """INSERT INTO checks (time, monitor_id, ok, status_code, latency_ms, lateness_ms)
           SELECT t, m.id, true, 200, 40 + (m.id * 37) % 360 + random() * 20, random()
           FROM monitors m
           CROSS JOIN generate_series($1::timestamptz - make_interval(hours => $2), $1::timestamptz,
                                      interval '60 seconds') t""",
        now,
        raw_hours,
    )
    page_groups = [
        {
            "name": f"Group {g + 1}",
            "monitor_ids": [mid for n, mid in enumerate(ids, 1) if n % groups == g] if g % 2 == 0 else [],
            "tags": [f"group-{g}"] if g % 2 == 1 else [],
        }
        for g in range(groups)
    ]
    await conn.execute(
        """INSERT INTO status_pages (account_id, slug, title, description, groups)
           VALUES ($1, $2, 'Bench Status', 'The services of the status bench.', $3::jsonb)""",
        account_id,
        SLUG,
        json.dumps(page_groups),
    )
    if posts:
        await _posts(conn, account_id, now, posts, ids[:2], page_groups[0]["name"])
    tokens = [r["badge_token"] for r in await conn.fetch("SELECT badge_token FROM monitors ORDER BY id")]
    await conn.execute("ANALYZE")
    # The posts' tables only when asked for: --rev may measure a commit from before them.
    tables = ("monitors", "incidents", "checks_hourly", "checks_daily", "checks")
    tables += ("incident_posts", "incident_post_updates") if posts else ()
    rows = {table: int(await conn.fetchval(f"SELECT count(*) FROM {table}")) for table in tables}
    return Loaded(account_id, ids, tokens, now, rows)


async def _posts(
    conn: asyncpg.Connection, account_id: int, now: datetime, posts: int, monitor_ids: list[int], group: str
) -> None:
    """``posts`` posts on the page: the first open, the others resolved over the last 365 days."""
    await conn.execute("UPDATE status_pages SET post_history_days = 365 WHERE slug = $1", SLUG)
    await conn.execute(
        """INSERT INTO incident_posts (account_id, page_id, title, impact, monitor_ids, groups, state,
                                       resolved_at, created_at, updated_at)
           SELECT $1, (SELECT id FROM status_pages WHERE slug = $2), 'Incident ' || n, 'minor', $3, ARRAY[$4],
                  CASE WHEN n = 0 THEN 'investigating' ELSE 'resolved' END,
                  CASE WHEN n = 0 THEN NULL ELSE at + interval '2 hours' END, at, at
           FROM (SELECT n, $5::timestamptz
                               - make_interval(secs => n * 364.0 * 86400 / greatest($6 - 1, 1)) AS at
                 FROM generate_series(0, $6 - 1) n) s""",
        account_id, SLUG, monitor_ids, group, now, posts,
    )  # fmt: skip
    await conn.execute(
        """INSERT INTO incident_post_updates (post_id, state, body, html, renderer, created_at)
           SELECT p.id, CASE WHEN p.state = 'resolved' AND k = $1 THEN 'resolved' ELSE 'investigating' END,
                  $2, $3, $4, p.created_at + make_interval(mins => k * 20)
           FROM incident_posts p CROSS JOIN generate_series(1, $1) k""",
        POST_UPDATES, POST_TEXT, markdown.render(POST_TEXT), markdown.RENDERER,
    )  # fmt: skip
