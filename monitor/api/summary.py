"""``/api/v1/summary``: the account at a glance: monitors by status, which are down, and the
maintenance windows open now and coming next."""

from __future__ import annotations

from aiohttp import web

from monitor.api.context import POOL
from monitor.api.guard import account_id
from monitor.api.params import rfc3339
from monitor.domain.maintenance import account_windows

DOWN_LISTED = 100


async def summary(request: web.Request) -> web.Response:
    account = account_id(request)
    async with request.app[POOL].acquire() as conn:
        counts = await conn.fetch(
            """SELECT CASE WHEN m.paused THEN 'paused' ELSE coalesce(s.status, 'unknown') END AS status,
                      count(*) AS n
               FROM monitors m LEFT JOIN monitor_state s ON s.monitor_id = m.id
               WHERE m.account_id = $1 GROUP BY 1""",
            account,
        )
        down = await conn.fetch(
            """SELECT m.id, m.name, m.url, s.changed_at, s.last_error, s.last_status_code
               FROM monitors m JOIN monitor_state s ON s.monitor_id = m.id
               WHERE m.account_id = $1 AND NOT m.paused AND s.status = 'down'
               ORDER BY s.changed_at NULLS LAST, m.id LIMIT $2""",
            account,
            DOWN_LISTED,
        )
        maintenance = await account_windows(conn, account)
    by_status = {"up": 0, "degraded": 0, "down": 0, "paused": 0, "unknown": 0}
    for row in counts:
        by_status[row["status"]] = row["n"]
    return web.json_response(
        {
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
    )


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/api/v1/summary", summary)
