"""The account's monitors as a list: searched, filtered, sorted and paged (keyset), each with
what a list shows of it (uptime windows, the last 24 hours of response times). (The list's
version, for a face that polls, comes with its counts: ``summary.counts``.)

Search (``q``) is a case-insensitive substring of the name or the target (URL, host); filters
are ANDed: a status, every tag given, a type, a location. Sorts (``SORTS``), each a keyset on
an expression and the id, so paging stays stable while rows are added:

- ``id``: oldest first (the default; the API's historical order);
- ``name``: by ``lower(name)``;
- ``state``: the worst first (down, degraded, waiting, up, paused);
- ``last_check``: the most recently checked first, never-checked last.

At 10,000 monitors a search reads the account's rows (about 5 ms, bench/README.md "Issue 29"):
no trigram index is needed at that size.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import asyncpg

from monitor.checks import REGISTRY as CHECKS
from monitor.domain import paging
from monitor.domain.context import Actor, Deps
from monitor.domain.errors import DomainError
from monitor.domain.monitors import RESOURCE, SELECT, STATUSES, UPTIME_INCLUDES, render
from monitor.domain.roles import authorize
from monitor.domain.schemas.common import TAG
from monitor.domain.schemas.locations import LOCATION
from monitor.domain.uptime import uptimes
from monitor.times import rfc3339

# What a listing may add to each monitor (``include=``): uptime windows, and each of the last
# 24 hours' mean response time (from the hourly rollups, one query for the page).
RESPONSE_24H = "response_24h"
INCLUDES = (*UPTIME_INCLUDES, RESPONSE_24H)
MAX_QUERY = 200
# The rank of each state in the "state" sort: what needs a look first.
STATE_RANK = """CASE WHEN m.paused THEN 4 ELSE CASE coalesce(s.status, 'unknown')
    WHEN 'down' THEN 0 WHEN 'degraded' THEN 1 WHEN 'unknown' THEN 2 ELSE 3 END END"""
LAST_CHECK_US = "coalesce((extract(epoch FROM s.last_check_at) * 1000000)::bigint, 0)"
# sort: (the key's expression, its cursor type, ascending?)
SORTS: dict[str, tuple[str, type, bool]] = {
    "id": ("m.id", int, True),
    "name": ("lower(m.name)", str, True),
    "state": (STATE_RANK, int, True),
    "last_check": (LAST_CHECK_US, int, False),
}
# Each filter given adds its condition (``$n`` its value): the statement holds only the filters
# given, so PostgreSQL plans each combination for what it is. (One statement with "$n IS NULL
# OR ..." for every filter gets a generic plan, after five runs, that reads all 10,000 rows
# to sort them: 17 ms where the index gives the page in 2.)
CONDITIONS = {
    "tags": "m.tags @> {}::text[]",
    "status": "CASE WHEN m.paused THEN 'paused' ELSE coalesce(s.status, 'unknown') END = {}::text",
    "q": "(strpos(lower(m.name), lower({0}::text)) > 0"
    " OR strpos(lower(coalesce(m.url, '')), lower({0}::text)) > 0)",
    "type": "m.type = {}::text",
    "location": "{}::text = ANY(m.locations)",
}


def where(account_id: int, given: dict[str, Any]) -> tuple[str, list[Any]]:
    """The WHERE clause of the account's monitors with the filters ``given`` (by
    ``CONDITIONS``' names; None or empty: not given), and its arguments."""
    args: list[Any] = [account_id]
    parts = ["m.account_id = $1"]
    for name, condition in CONDITIONS.items():
        value = given.get(name)
        if value is None or value == [] or value == ():
            continue
        args.append(list(value) if name == "tags" else value)
        parts.append(condition.format(f"${len(args)}"))
    return " WHERE " + " AND ".join(parts), args


SPARK = """
SELECT monitor_id, hour, latency_sum / latency_n AS avg_ms FROM checks_hourly
WHERE monitor_id = ANY($1::bigint[]) AND hour > $2::timestamptz - interval '24 hours' AND latency_n > 0
ORDER BY monitor_id, hour"""


def _check(
    status: str | None,
    tags: Sequence[str],
    q: str | None,
    type_: str | None,
    location: str | None,
    sort: str,
    includes: Sequence[str],
) -> None:
    if status is not None and status not in STATUSES:
        raise DomainError(400, "invalid", f"status: one of {', '.join(STATUSES)}", "status")
    # Only a well-formed tag can match (and PostgreSQL refuses a NUL in a text parameter).
    bad = next((t for t in tags if not TAG.match(t)), None)
    if bad is not None:
        raise DomainError(400, "invalid", f"tag: {bad!r} is not a tag (letters, digits and _.:-)", "tag")
    if q is not None and (len(q) > MAX_QUERY or "\x00" in q):
        raise DomainError(400, "invalid", f"q: at most {MAX_QUERY} characters, no NUL", "q")
    if type_ is not None and type_ not in list(CHECKS.kinds):
        raise DomainError(400, "invalid", f"type: one of {', '.join(list(CHECKS.kinds))}", "type")
    if location is not None and not LOCATION.match(location):
        raise DomainError(400, "invalid", f"location: {location!r} is not a location name", "location")
    if sort not in SORTS:
        raise DomainError(400, "invalid", f"sort: one of {', '.join(SORTS)}", "sort")
    unknown = [i for i in includes if i not in INCLUDES]
    if unknown:
        raise DomainError(
            400, "invalid", f"include: unknown {unknown[0]!r} ({'|'.join(INCLUDES)})", "include"
        )


async def listing(
    deps: Deps,
    actor: Actor,
    *,
    limit: int = paging.DEFAULT_LIMIT,
    cursor: str | None = None,
    status: str | None = None,
    tags: Sequence[str] = (),
    q: str | None = None,
    type_: str | None = None,
    location: str | None = None,
    sort: str = "id",
    includes: Sequence[str] = (),
    base: str = "",
) -> dict[str, Any]:
    """A page of the account's monitors that match (``q``: name or target; ``status``; every
    one of ``tags``; ``type_``; ``location``), in the order ``sort`` names, each with what
    ``includes`` names (``INCLUDES``)."""
    authorize(actor, RESOURCE, "read")
    paging.check_limit(limit)
    q = (q.strip() or None) if q is not None else None
    _check(status, tags, q, type_, location, sort, includes)
    key, kind, ascending = SORTS[sort]
    # By id, the cursor is the last id (as it always was); otherwise the last key and id.
    by_id = sort == "id"
    after = paging.decode_cursor(cursor, (int,) if by_id else (kind, int))
    clause, args = where(
        actor.account_id, {"tags": tags, "status": status, "q": q, "type": type_, "location": location}
    )
    if after is not None:
        args += after
        n = len(args)
        ahead = ">" if ascending else "<"
        clause += (
            f" AND m.id > ${n}"
            if by_id
            else f" AND ({key} {ahead} ${n - 1} OR ({key} = ${n - 1} AND m.id > ${n}))"
        )
    direction = "" if ascending else " DESC"
    select = SELECT.replace("SELECT m.*", f"SELECT {key} AS sort_key, m.*", 1)
    rows = await deps.pool.fetch(
        f"{select}{clause} ORDER BY {key}{direction}, m.id LIMIT ${len(args) + 1}", *args, limit + 1
    )
    page = rows[:limit]
    next_cursor = None
    if len(rows) > limit:
        last = page[-1]
        next_cursor = paging.encode_cursor([last["id"]] if by_id else [last["sort_key"], last["id"]])
    items = [render(r, base) for r in page]
    if includes and page:
        await _include(deps.pool, page, items, includes)
    return {"items": items, "next_cursor": next_cursor}


async def _include(
    pool: asyncpg.Pool, page: Sequence[asyncpg.Record], items: list[dict[str, Any]], includes: Sequence[str]
) -> None:
    async with pool.acquire() as conn:
        now = await conn.fetchval("SELECT now()")
        for include in dict.fromkeys(includes):
            if include == RESPONSE_24H:
                hours = await response_hours(conn, [r["id"] for r in page], now)
                for item in items:
                    item[RESPONSE_24H] = hours.get(item["id"], [])
                continue
            start = now - UPTIME_INCLUDES[include]
            figures = await uptimes(conn, [(r["id"], r["created_at"]) for r in page], start, now, now)
            for item in items:
                u = figures[item["id"]]
                item[include] = {"uptime_percent": u.percent, "downtime_seconds": u.downtime_seconds,
                                 "degraded_seconds": u.degraded_seconds, "checks": u.checks}  # fmt: skip


async def response_hours(
    conn: asyncpg.Connection, ids: Sequence[int], now: datetime
) -> dict[int, list[dict[str, Any]]]:
    """Each monitor's mean response time of each of the last 24 hours that had a successful
    check (the current one too), oldest first: one query for all of ``ids``."""
    found: dict[int, list[dict[str, Any]]] = {}
    for row in await conn.fetch(SPARK, list(ids), now):
        found.setdefault(row["monitor_id"], []).append(
            {"hour": rfc3339(row["hour"]), "avg_ms": round(row["avg_ms"], 1)}
        )
    return found


def types() -> list[str]:
    """The monitor types a list may be filtered by."""
    return list(CHECKS.kinds)
