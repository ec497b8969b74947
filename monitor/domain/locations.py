"""How each of a monitor's locations sees it, for the answers about one monitor.

A location is *live* while one of its schedulers holds an unexpired lease (sql/014,
monitor/scheduler/membership.py); only live locations count towards the quorum, so a location
with none is shown as such rather than left out. Its view is what its scheduler last confirmed
(``location_state``, sql/015); a location that has not checked the monitor yet is ``unknown``.
One query whatever the number of locations.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import asyncpg

from monitor.times import rfc3339_or_none as rfc3339

# $1: the monitor, $2: its locations in its order.
STATUS_SQL = """
SELECT l.location,
       EXISTS (SELECT 1 FROM scheduler_members m
               WHERE m.location = l.location AND m.lease_until > now()) AS live,
       s.status, s.changed_at, s.reason, s.last_check_at
FROM unnest($2::text[]) WITH ORDINALITY AS l(location, n)
LEFT JOIN location_state s ON s.monitor_id = $1 AND s.location = l.location
ORDER BY l.n
"""


def render_status(row: asyncpg.Record | dict[str, Any]) -> dict[str, Any]:
    return {
        "location": row["location"],
        "live": row["live"],
        "status": row["status"] or "unknown",
        "since": rfc3339(row["changed_at"]),
        "reason": row["reason"],
        "last_check_at": rfc3339(row["last_check_at"]),
    }


async def location_status(
    conn: asyncpg.Connection | asyncpg.Pool, monitor_id: int, locations: Sequence[str]
) -> list[dict[str, Any]]:
    """Each location of the monitor, in its order: live or not, and its confirmed status."""
    return [render_status(r) for r in await conn.fetch(STATUS_SQL, monitor_id, list(locations))]


# A location taken off a monitor's list: its outage (if open) ends now, its view goes.
END_REMOVED = """
UPDATE location_incidents SET ended_at = greatest(started_at, now())
WHERE monitor_id = $1 AND ended_at IS NULL AND NOT (location = ANY($2::text[]))"""
DROP_REMOVED = "DELETE FROM location_state WHERE monitor_id = $1 AND NOT (location = ANY($2::text[]))"


async def drop_removed(conn: asyncpg.Connection, monitor_id: int, kept: Sequence[str]) -> None:
    """The locations no longer in the monitor's list (a PATCH of ``locations``): an outage one
    of them had open ends now (per-location uptime would count it down for ever), and its view
    is dropped (were it listed again, it starts afresh)."""
    await conn.execute(END_REMOVED, monitor_id, list(kept))
    await conn.execute(DROP_REMOVED, monitor_id, list(kept))
