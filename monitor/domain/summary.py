"""The account at a glance: its monitors by status, the ones down (longest first, at most
``DOWN_LISTED``), and the maintenance windows open now and coming next. Three queries, whatever
the number of monitors (``counts``: only the first, for a list's header).
"""

from __future__ import annotations

import hashlib
from typing import Any

import asyncpg

from monitor.domain.context import Actor, Deps
from monitor.domain.maintenance import account_windows
from monitor.domain.roles import authorize
from monitor.times import rfc3339_or_none as rfc3339

RESOURCE = "summary"
DOWN_LISTED = 100


COUNTS = """
SELECT CASE WHEN m.paused THEN 'paused' ELSE coalesce(s.status, 'unknown') END AS status, count(*) AS n,
       max(m.updated_at) AS changed, max(s.changed_at) AS moved, max(m.id) AS top
FROM monitors m LEFT JOIN monitor_state s ON s.monitor_id = m.id
WHERE m.account_id = $1 GROUP BY 1"""


async def _by_status(conn: asyncpg.Connection | asyncpg.Pool, account_id: int) -> tuple[dict[str, int], str]:
    """The monitors by status, and a version of the account's list: a token that moves when a
    monitor is added, removed or changed, or changes state (not on every check)."""
    by_status = {"up": 0, "degraded": 0, "down": 0, "paused": 0, "unknown": 0}
    marks = [str(account_id)]
    for row in await conn.fetch(COUNTS, account_id):
        by_status[row["status"]] = row["n"]
        marks.append(f"{row['status']}:{row['n']}:{row['changed']}:{row['moved']}:{row['top']}")
    return by_status, hashlib.sha256("|".join(sorted(marks)).encode()).hexdigest()[:20]


async def counts(deps: Deps, actor: Actor) -> dict[str, Any]:
    """Only the account's monitors by status, and the list's ``version`` (one query): what a
    list shows on top, and what a face that polls compares to tell that nothing moved."""
    authorize(actor, RESOURCE, "read")
    by_status, version = await _by_status(deps.pool, actor.account_id)
    return {"monitors": sum(by_status.values()), "by_status": by_status, "version": version}


async def summary(deps: Deps, actor: Actor) -> dict[str, Any]:
    authorize(actor, RESOURCE, "read")
    async with deps.pool.acquire() as conn:
        by_status, _ = await _by_status(conn, actor.account_id)
        down = await conn.fetch(
            """SELECT m.id, m.name, m.url, s.changed_at, s.last_error, s.last_status_code
               FROM monitors m JOIN monitor_state s ON s.monitor_id = m.id
               WHERE m.account_id = $1 AND NOT m.paused AND s.status = 'down'
               ORDER BY s.changed_at NULLS LAST, m.id LIMIT $2""",
            actor.account_id,
            DOWN_LISTED,
        )
        maintenance = await account_windows(conn, actor.account_id)
    return {
        "monitors": sum(by_status.values()),
        "by_status": by_status,
        "down": [
            {
                "id": r["id"],
                "name": r["name"],
                "url": r["url"],
                "since": rfc3339(r["changed_at"]),
                "error": r["last_error"],
                "status_code": r["last_status_code"],
            }
            for r in down
        ],
        "maintenance": maintenance,
    }


async def first_steps(deps: Deps, actor: Actor) -> dict[str, Any]:
    """How far a new account is through its first steps (the dashboard's guided start): a
    monitor made, a channel made, and the first monitor that has been checked (its id), in one
    query of three probes that each stop at the first row."""
    authorize(actor, RESOURCE, "read")
    row = await deps.pool.fetchrow(
        """SELECT EXISTS (SELECT 1 FROM monitors WHERE account_id = $1) AS monitor,
                  EXISTS (SELECT 1 FROM channels WHERE account_id = $1) AS channel,
                  (SELECT m.id FROM monitors m JOIN monitor_state s ON s.monitor_id = m.id
                   WHERE m.account_id = $1 AND s.last_check_at IS NOT NULL
                   ORDER BY m.id LIMIT 1) AS checked""",
        actor.account_id,
    )
    steps = {"monitor": row["monitor"], "channel": row["channel"], "checked": row["checked"]}
    steps["done"] = bool(steps["monitor"] and steps["channel"] and steps["checked"] is not None)
    return steps
