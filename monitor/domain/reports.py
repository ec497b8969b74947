"""SLA reports (issue 32): a monitor's, a tag's, a status page's or the whole account's figures
over a calendar month, a quarter or a range, in the account's time zone.

Every figure is read by the functions /uptime and /incidents answer from, over the same range:
``uptime.records``, ``count_checks``, ``uptime_of``, ``maintenance_seconds`` (and
``counted_seconds``, the time ``uptime_of`` takes its percentage over), and
``history.overlapping_incidents``; so a monitor's row of a report is, to the second, what
/uptime and /incidents answer for that monitor and range. ``monitor.reports.sla`` adds the rows
up (time-weighted) with MTTR, MTBF and the error budget; the faces write the result as JSON,
CSV, HTML or PDF (``monitor.reports.documents``). At most 14 queries whatever the number of
monitors (the account, its monitors, then the uptime functions' reads, incidents and latency).

Reading a report is for viewers and up (``roles.RULES``). An unknown or another account's
monitor, tag or page is a 404 naming the parameter (``id``, ``tag``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import asyncpg

from monitor import rollups
from monitor.domain import history, uptime
from monitor.domain.context import Actor, Deps
from monitor.domain.errors import DomainError
from monitor.domain.roles import authorize
from monitor.domain.schemas.monitors import TAG
from monitor.reports import periods, sla
from monitor.reports.sla import Report

RESOURCE = "reports"
SCOPES = ("monitor", "tag", "page", "account")
# Incidents listed in a report (newest first); every one is counted in the figures all the same.
MAX_LISTED = 1000
MONITOR_COLUMNS = "id, name, created_at"


def _bad(field: str, message: str, status: int = 400) -> DomainError:
    return DomainError(status, "invalid" if status == 400 else "not_found", f"{field}: {message}", field)


async def sla_report(
    deps: Deps,
    actor: Actor,
    *,
    scope: str = "account",
    subject_id: int | None = None,
    tag: str | None = None,
    month: str | None = None,
    quarter: str | None = None,
    start: str | None = None,
    end: str | None = None,
    target: str | None = None,
) -> Report:
    """The report of ``scope`` (``monitor``/``page`` by ``subject_id``, ``tag`` by ``tag``) over
    the period named (default: the last whole month), with ``target``'s budget when given."""
    authorize(actor, RESOURCE, "read")
    if scope not in SCOPES:
        raise _bad("scope", f"one of {', '.join(SCOPES)}")
    if scope in ("monitor", "page") and subject_id is None:
        raise _bad("id", f"give the {scope}'s id")
    if scope == "tag" and (not tag or not TAG.match(tag)):
        raise _bad("tag", "give a tag (letters, digits, '-', '_', ':', '.'; as monitors carry them)")
    try:
        wanted = sla.target(target)
    except sla.TargetError as exc:
        raise _bad("target", str(exc).partition(": ")[2]) from None
    async with deps.pool.acquire() as conn:
        account = await conn.fetchrow("SELECT name, timezone FROM accounts WHERE id = $1", actor.account_id)
        if account is None:
            raise DomainError(404, "not_found", "account not found")
        now: datetime = await conn.fetchval("SELECT now()")
        try:
            period = periods.choose(
                ZoneInfo(account["timezone"]), now, month_raw=month, quarter_raw=quarter,
                start_raw=start, end_raw=end,
            )  # fmt: skip
        except periods.PeriodError as exc:
            raise _bad(exc.field, str(exc).partition(": ")[2]) from None
        subject, monitors = await _scope(conn, actor, scope, subject_id, tag, account["name"])
        rows, listed = await _figures(conn, monitors, period, now)
    return Report(
        scope=scope,
        subject=subject,
        subject_id=subject_id if scope in ("monitor", "page") else None,
        period=period,
        now=now,
        total=sla.summarize(rows, wanted),
        monitors=[(f, sla.summarize([f], wanted)) for f in rows],
        incidents=listed[:MAX_LISTED],
        incidents_listed_all=len(listed) <= MAX_LISTED,
    )


async def _scope(
    conn: asyncpg.Connection, actor: Actor, scope: str, subject_id: int | None, tag: str | None, account: str
) -> tuple[str, list[asyncpg.Record]]:
    """(what the report is of, its monitors by id)."""
    where, args = "account_id = $1", list[Any]([actor.account_id])
    if scope == "monitor":
        where, args = "account_id = $1 AND id = $2", [actor.account_id, subject_id]
    elif scope == "tag":
        where, args = "account_id = $1 AND tags @> ARRAY[$2::text]", [actor.account_id, tag]
    elif scope == "page":
        page = await conn.fetchrow(
            "SELECT title, groups FROM status_pages WHERE id = $1 AND account_id = $2",
            subject_id,
            actor.account_id,
        )
        if page is None:
            raise _bad("id", "no such status page", 404)
        named = [int(i) for g in page["groups"] for i in g.get("monitor_ids", [])]
        tags = [t for g in page["groups"] for t in g.get("tags", [])]
        # The monitors a page shows: those its groups name and those their tags reach (status/data.py).
        where = "account_id = $1 AND (id = ANY($2::bigint[]) OR tags && $3::text[])"
        args = [actor.account_id, named, tags]
    found = await conn.fetch(f"SELECT {MONITOR_COLUMNS} FROM monitors WHERE {where} ORDER BY id", *args)
    if scope == "monitor" and not found:
        raise _bad("id", "no such monitor", 404)
    if scope == "tag" and not found:
        raise _bad("tag", "no monitor carries this tag", 404)
    subject = {"monitor": found[0]["name"] if found else "", "tag": tag or "", "account": account}.get(scope)
    return subject if subject is not None else page["title"], found


async def _figures(
    conn: asyncpg.Connection, monitors: Sequence[asyncpg.Record], period: periods.Period, now: datetime
) -> tuple[list[sla.MonitorFigures], list[dict[str, Any]]]:
    """Each monitor's figures, read as history.uptime reads them for /uptime?from=&to=, and the
    period's incidents as /incidents renders them (oldest first), each with its monitor's name
    and the downtime it counts for here (its part of the monitor's counted time)."""
    ids, start, end = [m["id"] for m in monitors], period.start, period.end
    if not ids:
        return [], []
    found = await uptime.records(conn, ids, start, end, now)
    counts = await uptime.count_checks(conn, ids, start, end, now)
    listed = await history.overlapping_incidents(conn, ids, start, end)
    latency = await history.latency(conn, ids, start, end)
    per_monitor: dict[int, list[asyncpg.Record]] = {m["id"]: [] for m in monitors}
    for row in reversed(listed):
        per_monitor[row["monitor_id"]].append(row)
    rows, items = [], []
    for m in monitors:
        life = (m["id"], m["created_at"])
        u = uptime.uptime_of(life, start, end, now, found, counts.get(m["id"], (0, 0)))
        hist, highest = latency.get(m["id"], ([0] * rollups.N_BUCKETS, None))
        rows.append(
            sla.MonitorFigures(
                monitor_id=m["id"],
                name=m["name"],
                period_seconds=max(0.0, (min(end, now) - start).total_seconds()),
                counted_seconds=uptime.counted_seconds(u, life, now, found),
                uptime_percent=u.percent,
                downtime_seconds=u.downtime_seconds,
                maintenance_seconds=uptime.maintenance_seconds(life, start, end, now, found),
                degraded_seconds=u.degraded_seconds,
                checks=u.checks,
                checks_up=u.checks_up,
                incidents=len(per_monitor[m["id"]]),
                hist=hist,
                latency_max=highest,
            )
        )
        excluded = [*found.pauses[m["id"]], *found.maintenance[m["id"]]]
        counted = uptime.observed(start, end, m["created_at"], now, excluded) if u.percent is not None else []
        for row in per_monitor[m["id"]]:
            item = history.render_incident(row, now)
            item["monitor_name"] = m["name"]
            item["downtime_seconds"] = uptime.time_in(counted, [(row["started_at"], row["ended_at"])], now)
            items.append(item)
    items.sort(key=lambda item: (item["started_at"], item["id"]))
    return rows, items
