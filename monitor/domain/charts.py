"""A monitor's figures over time as its page draws them: response times over a named range
(``1h`` to ``90d``) with the timing breakdown where it is kept, and its uptime per day for the
90-day bars.

Short ranges (``1h``, ``24h``) come from the raw checks, bucketed in the database: those rows
hold each phase of a check (``dns_ms``, ``connect_ms``, ``tls_ms``, ``ttfb_ms``), so every
bucket has its breakdown and exact percentiles. Long ranges come from the hourly and daily
rollups through ``history.stats`` (the same figures the API's ``/stats`` answers): fast at any
scale (90 days is 90 daily rows), but the rollups keep counts and a latency histogram only, so
those ranges have no breakdown (``breakdown: false``) and their percentiles are the
histogram's.

The breakdown is stacked: ``dns_ms``, ``connect_ms`` and ``tls_ms`` are each phase's own time,
``wait_ms`` the rest of the time to the first byte (``ttfb_ms`` runs from the hop's start),
``transfer_ms`` the rest of the check's latency; each is the average of the bucket's
successful checks, so the five add up to its average latency (less where a check followed
redirects, whose earlier hops are in its latency only).

The days are the status page's (``status.data``): ``uptime_of`` per UTC day over the records
of the 90 days read once, the days' check counts from the daily rollups (today's from
``count_checks``), and the incidents that touch each day outside maintenance.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from monitor.domain import history
from monitor.domain.context import Actor, Deps
from monitor.domain.errors import DomainError
from monitor.domain.roles import authorize
from monitor.domain.uptime import count_checks, records, subtract, uptime_of
from monitor.times import rfc3339_or_none as rfc3339

DAY = timedelta(days=1)
DAYS = 90


@dataclass(frozen=True)
class Range:
    span: timedelta
    bucket: timedelta
    raw: bool  # from the raw checks (with the breakdown), else the rollups
    rollup_bucket: str = "1h"  # history.stats' bucket, for a range of the rollups


RANGES: dict[str, Range] = {
    "1h": Range(timedelta(hours=1), timedelta(minutes=1), raw=True),
    "24h": Range(timedelta(hours=24), timedelta(minutes=5), raw=True),
    "7d": Range(timedelta(days=7), timedelta(hours=1), raw=False),
    "30d": Range(timedelta(days=30), timedelta(hours=1), raw=False),
    "90d": Range(timedelta(days=90), DAY, raw=False, rollup_bucket="1d"),
}
DEFAULT_RANGE = "24h"
PHASES = ("dns_ms", "connect_ms", "tls_ms", "wait_ms", "transfer_ms")

# One row per bucket ($4) of monitor $1's checks in [$2, $3): counts, the successful checks'
# latency figures and the average of each timing (NULLs, a phase a check had not, left out).
RAW_SQL = """
SELECT date_bin($4::interval, time, 'epoch'::timestamptz) AS bucket,
       count(*) AS checks, count(*) FILTER (WHERE ok) AS checks_up,
       min(latency_ms) FILTER (WHERE ok) AS min_ms, avg(latency_ms) FILTER (WHERE ok) AS avg_ms,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY latency_ms) FILTER (WHERE ok) AS p50_ms,
       percentile_cont(0.95) WITHIN GROUP (ORDER BY latency_ms) FILTER (WHERE ok) AS p95_ms,
       max(latency_ms) FILTER (WHERE ok) AS max_ms,
       count(*) FILTER (WHERE ok AND connect_ms IS NOT NULL) AS timed,
       avg(latency_ms) FILTER (WHERE ok AND connect_ms IS NOT NULL) AS timed_ms,
       avg(coalesce(dns_ms, 0)) FILTER (WHERE ok AND connect_ms IS NOT NULL) AS avg_dns_ms,
       avg(connect_ms) FILTER (WHERE ok) AS avg_connect_ms,
       avg(coalesce(tls_ms, 0)) FILTER (WHERE ok AND connect_ms IS NOT NULL) AS avg_tls_ms,
       avg(coalesce(ttfb_ms, dns_ms + connect_ms + coalesce(tls_ms, 0), connect_ms))
           FILTER (WHERE ok AND connect_ms IS NOT NULL) AS ttfb
FROM checks WHERE monitor_id = $1 AND time >= $2 AND time < $3
GROUP BY 1 ORDER BY 1
"""
DAILY_COUNTS_SQL = """
SELECT day, checks, checks_up FROM checks_daily WHERE monitor_id = $1 AND day >= $2 AND day < $3"""


def range_of(raw: str | None) -> tuple[str, Range]:
    name = raw or DEFAULT_RANGE
    if name not in RANGES:
        raise DomainError(400, "invalid", f"range: one of {', '.join(RANGES)}", "range")
    return name, RANGES[name]


def _phases(row: Any) -> dict[str, float] | None:
    """The stacked breakdown of a bucket of raw checks (its successful checks that connected),
    or None when none did (a heartbeat, a ping)."""
    if not row["timed"]:
        return None
    dns, connect, tls = row["avg_dns_ms"], row["avg_connect_ms"], row["avg_tls_ms"]
    wait = max(0.0, row["ttfb"] - dns - connect - tls)
    return {
        "dns_ms": dns,
        "connect_ms": connect,
        "tls_ms": tls,
        "wait_ms": wait,
        "transfer_ms": max(0.0, row["timed_ms"] - dns - connect - tls - wait),
    }


async def response_times(
    deps: Deps, actor: Actor, monitor_id: int, range_name: str | None = None
) -> dict[str, Any]:
    """The monitor's response times over the range (``RANGES``) up to now, per bucket: checks,
    share up, and the successful checks' min (raw only), average, p50, p95 and max, with the
    breakdown (``PHASES``) where the range is read from raw checks."""
    name, chosen = range_of(range_name)
    authorize(actor, history.RESOURCE, "read")
    if not chosen.raw:
        got = await history.stats(
            deps, actor, monitor_id, bucket=chosen.rollup_bucket,
            start=await _now(deps) - chosen.span,
        )  # fmt: skip
        items = [
            {"start": i["start"], "checks": i["checks"], "up_share": i["up_share"], "min_ms": None,
             "avg_ms": i["avg_ms"], "p50_ms": i["p50_ms"], "p95_ms": i["p95_ms"], "max_ms": i["max_ms"],
             "phases": None}
            for i in got["items"]
        ]  # fmt: skip
        return _answer(got["monitor_id"], name, chosen, got["from"], got["to"], items)
    async with deps.pool.acquire() as conn:
        monitor = await history._owned(conn, actor, monitor_id)
        now: datetime = await conn.fetchval("SELECT now()")
        start = now - chosen.span
        first = history._bucket_start(start, chosen.bucket)
        rows = await conn.fetch(RAW_SQL, monitor["id"], first, now, chosen.bucket)
    items = [
        {"start": rfc3339(r["bucket"]), "checks": r["checks"],
         "up_share": r["checks_up"] / r["checks"] if r["checks"] else None,
         "min_ms": r["min_ms"], "avg_ms": r["avg_ms"], "p50_ms": r["p50_ms"], "p95_ms": r["p95_ms"],
         "max_ms": r["max_ms"], "phases": _phases(r)}
        for r in rows
    ]  # fmt: skip
    return _answer(monitor["id"], name, chosen, rfc3339(start), rfc3339(now), items)


def _answer(
    monitor_id: int, name: str, chosen: Range, start: str | None, end: str | None, items: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "monitor_id": monitor_id,
        "range": name,
        "from": start,
        "to": end,
        "bucket_seconds": int(chosen.bucket.total_seconds()),
        "source": "checks" if chosen.raw else "rollups",
        "breakdown": chosen.raw,
        "items": items,
    }


async def _now(deps: Deps) -> datetime:
    async with deps.pool.acquire() as conn:
        now: datetime = await conn.fetchval("SELECT now()")
    return now


def day_starts(now: datetime, days: int = DAYS) -> list[datetime]:
    """The starts of the ``days`` UTC days that end with today's."""
    today = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return [today - (days - 1 - i) * DAY for i in range(days)]


async def daily(deps: Deps, actor: Actor, monitor_id: int, days: int = DAYS) -> list[dict[str, Any]]:
    """The monitor's last ``days`` UTC days, oldest first, as a status page's bars show them:
    ``date``, ``uptime_percent`` (None: nothing observed), ``downtime_seconds`` and the number
    of ``incidents`` that touch the day outside maintenance."""
    authorize(actor, history.RESOURCE, "read")
    async with deps.pool.acquire() as conn:
        monitor = await history._owned(conn, actor, monitor_id)
        now: datetime = await conn.fetchval("SELECT now()")
        starts = day_starts(now, days)
        mid, ids = monitor["id"], [monitor["id"]]
        found = await records(conn, ids, starts[0], now, now)
        rows = await conn.fetch(DAILY_COUNTS_SQL, mid, starts[0], starts[-1])
        counts = {r["day"]: (r["checks"], r["checks_up"]) for r in rows}
        counts[starts[-1]] = (await count_checks(conn, ids, starts[-1], now, now)).get(mid, (0, 0))
    life = (mid, monitor["created_at"])
    maintenance = [(s, e or now) for s, e in found.maintenance[mid]]
    outages = [subtract([(s, e or now)], maintenance) for s, e in found.incidents[mid]]
    out = []
    for day in starts:
        u = uptime_of(life, day, day + DAY, now, found, counts.get(day, (0, 0)))
        touching = sum(1 for parts in outages if any(s < day + DAY and e > day for s, e in parts))
        out.append(
            {"date": day.date().isoformat(), "uptime_percent": u.percent,
             "downtime_seconds": u.downtime_seconds, "incidents": touching}
        )  # fmt: skip
    return out
