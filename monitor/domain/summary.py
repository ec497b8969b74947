"""The account at a glance: its monitors by status, the ones down (longest first, at most
``DOWN_LISTED``), and the maintenance windows open now and coming next. Three queries, whatever
the number of monitors.
"""

from __future__ import annotations

from typing import Any

from monitor.domain.context import Actor, Deps
from monitor.domain.maintenance import account_windows
from monitor.domain.roles import authorize
from monitor.times import rfc3339_or_none as rfc3339

RESOURCE = "summary"
DOWN_LISTED = 100


async def summary(deps: Deps, actor: Actor) -> dict[str, Any]:
    authorize(actor, RESOURCE, "read")
    async with deps.pool.acquire() as conn:
        counts = await conn.fetch(
            """SELECT CASE WHEN m.paused THEN 'paused' ELSE coalesce(s.status, 'unknown') END AS status,
                      count(*) AS n
               FROM monitors m LEFT JOIN monitor_state s ON s.monitor_id = m.id
               WHERE m.account_id = $1 GROUP BY 1""",
            actor.account_id,
        )
        down = await conn.fetch(
            """SELECT m.id, m.name, m.url, s.changed_at, s.last_error, s.last_status_code
               FROM monitors m JOIN monitor_state s ON s.monitor_id = m.id
               WHERE m.account_id = $1 AND NOT m.paused AND s.status = 'down'
               ORDER BY s.changed_at NULLS LAST, m.id LIMIT $2""",
            actor.account_id,
            DOWN_LISTED,
        )
        maintenance = await account_windows(conn, actor.account_id)
    by_status = {"up": 0, "degraded": 0, "down": 0, "paused": 0, "unknown": 0}
    for row in counts:
        by_status[row["status"]] = row["n"]
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
