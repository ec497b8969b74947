"""A monitor's screenshots (sql/026, kept by ``visual/store.py`` in a worker): list them, read
one's PNG, accept one as the baseline, set the baseline's masks.

Reading is for viewers and up, as the monitor's history is; accepting and masking change what
the monitor's next check is judged against, so they are writes of the monitor (editor and up).
Another account's monitor or screenshot is a 404, as is a screenshot of another monitor.

Accepting copies the chosen screenshot into the baseline row (the old baseline goes, its masks
stay: they are regions of the page, the new one has them where the old had); the latest keeps
being replaced by each run, so a person may accept what they saw even after the next run.
An onset screenshot is found with its incident by time: the incident the monitor had open at
the moment it was taken (``incidents.started_at`` is the first failing check's time, which is
the screenshot's when the first failing run took one).
"""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg

from monitor.domain import audit
from monitor.domain.context import Actor, Deps
from monitor.domain.errors import DomainError, not_found, validated
from monitor.domain.roles import authorize
from monitor.domain.schemas.screenshots import MaskList
from monitor.times import rfc3339, rfc3339_or_none
from monitor.visual import diff
from monitor.visual.store import masks_of

RESOURCE = "monitors"
LISTED_ONSETS = 100

_COLUMNS = """s.id, s.role, s.taken_at, s.failed, s.width, s.height, octet_length(s.png) AS bytes,
    s.diff_percent, s.baseline_id, s.masks, s.accepted_at,
    (SELECT i.id FROM incidents i WHERE s.role = 'onset' AND i.monitor_id = s.monitor_id
        AND i.started_at <= s.taken_at AND (i.ended_at IS NULL OR i.ended_at > s.taken_at)
     ORDER BY i.started_at DESC LIMIT 1) AS incident_id"""
_OWNED = "SELECT 1 FROM monitors WHERE id = $1 AND account_id = $2"


def image_path(monitor_id: int, screenshot_id: int) -> str:
    return f"/api/v1/monitors/{monitor_id}/screenshots/{screenshot_id}"


def render(monitor_id: int, row: Any) -> dict[str, Any]:
    return {
        "id": row["id"],
        "role": row["role"],
        "taken_at": rfc3339(row["taken_at"]),
        "failed": row["failed"],
        "width": row["width"],
        "height": row["height"],
        "bytes": row["bytes"],
        "diff_percent": row["diff_percent"],
        "baseline_id": row["baseline_id"],
        "masks": [m.model_dump() for m in masks_of(row["masks"])],
        "accepted_at": rfc3339_or_none(row["accepted_at"]),
        "incident_id": row["incident_id"],
        "image": image_path(monitor_id, row["id"]),
    }


async def _owned(conn: asyncpg.Connection, actor: Actor, monitor_id: int) -> None:
    if await conn.fetchval(_OWNED, monitor_id, actor.account_id) is None:
        raise not_found("monitor")


async def listing(deps: Deps, actor: Actor, monitor_id: int) -> dict[str, Any]:
    """The latest, the baseline, then the outages' screenshots, newest first."""
    authorize(actor, RESOURCE, "read")
    async with deps.pool.acquire() as conn:
        await _owned(conn, actor, monitor_id)
        rows = await conn.fetch(
            f"""(SELECT {_COLUMNS} FROM screenshots s WHERE s.monitor_id = $1 AND s.role <> 'onset'
                 ORDER BY s.role DESC)
                UNION ALL
                (SELECT {_COLUMNS} FROM screenshots s WHERE s.monitor_id = $1 AND s.role = 'onset'
                 ORDER BY s.taken_at DESC LIMIT $2)""",
            monitor_id,
            LISTED_ONSETS,
        )
    return {"screenshots": [render(monitor_id, row) for row in rows]}


async def get(deps: Deps, actor: Actor, monitor_id: int, screenshot_id: int) -> dict[str, Any]:
    authorize(actor, RESOURCE, "read")
    async with deps.pool.acquire() as conn:
        await _owned(conn, actor, monitor_id)
        row = await conn.fetchrow(
            f"SELECT {_COLUMNS} FROM screenshots s WHERE s.id = $1 AND s.monitor_id = $2",
            screenshot_id,
            monitor_id,
        )
    if row is None:
        raise not_found("screenshot")
    return render(monitor_id, row)


async def image(deps: Deps, actor: Actor, monitor_id: int, screenshot_id: int) -> bytes:
    """A screenshot's PNG."""
    authorize(actor, RESOURCE, "read")
    png = await deps.pool.fetchval(
        """SELECT s.png FROM screenshots s JOIN monitors m ON m.id = s.monitor_id
           WHERE s.id = $1 AND s.monitor_id = $2 AND m.account_id = $3""",
        screenshot_id,
        monitor_id,
        actor.account_id,
    )
    if png is None:
        raise not_found("screenshot")
    return bytes(png)


async def accept(deps: Deps, actor: Actor, monitor_id: int, screenshot_id: int) -> dict[str, Any]:
    """Make a screenshot of the monitor its baseline (editor and up): the next checks are compared
    with it. The old baseline's masks carry over."""
    authorize(actor, RESOURCE, "write")
    async with deps.pool.acquire() as conn, conn.transaction():
        await _owned(conn, actor, monitor_id)
        chosen = await conn.fetchrow(
            "SELECT * FROM screenshots WHERE id = $1 AND monitor_id = $2 FOR UPDATE",
            screenshot_id,
            monitor_id,
        )
        if chosen is None:
            raise not_found("screenshot")
        if chosen["role"] == "baseline":
            raise DomainError(409, "already_baseline", "this screenshot is the baseline already")
        old_masks = await conn.fetchval(
            "DELETE FROM screenshots WHERE monitor_id = $1 AND role = 'baseline' RETURNING masks", monitor_id
        )
        new_id = await conn.fetchval(
            """INSERT INTO screenshots (monitor_id, role, taken_at, failed, down, width, height, png,
                                        masks, accepted_at, accepted_by)
               VALUES ($1, 'baseline', $2, $3, false, $4, $5, $6, $7, now(),
                       coalesce($8, (SELECT created_by FROM api_keys WHERE id = $9)))
               RETURNING id""",
            monitor_id,
            chosen["taken_at"],
            chosen["failed"],
            chosen["width"],
            chosen["height"],
            chosen["png"],
            [m.model_dump() for m in masks_of(old_masks)],
            actor.user_id,
            actor.key_id,
        )
        await audit.record(conn, actor, "screenshots", "accept_baseline", new_id)
        row = await conn.fetchrow(f"SELECT {_COLUMNS} FROM screenshots s WHERE s.id = $1", new_id)
    return render(monitor_id, row)


async def set_masks(deps: Deps, actor: Actor, monitor_id: int, body: Any) -> dict[str, Any]:
    """Replace the baseline's masks (editor and up); a 409 ``no_baseline`` before there is one."""
    authorize(actor, RESOURCE, "write")
    given = validated(MaskList, body)
    async with deps.pool.acquire() as conn, conn.transaction():
        await _owned(conn, actor, monitor_id)
        found = await conn.fetchval(
            "UPDATE screenshots SET masks = $2 WHERE monitor_id = $1 AND role = 'baseline' RETURNING id",
            monitor_id,
            [m.model_dump() for m in given.masks],
        )
        if found is None:
            raise DomainError(
                409, "no_baseline", "no baseline yet: masks are set on an accepted screenshot", "masks"
            )
        await audit.record(conn, actor, "screenshots", "set_masks", found, ["masks"])
        row = await conn.fetchrow(f"SELECT {_COLUMNS} FROM screenshots s WHERE s.id = $1", found)
    return render(monitor_id, row)


async def diff_image(deps: Deps, actor: Actor, monitor_id: int, screenshot_id: int) -> bytes:
    """A PNG of the screenshot with what differs from the current baseline in red and the
    masks grey (``diff.highlight``); a 409 ``no_baseline`` when there is none to compare with."""
    authorize(actor, RESOURCE, "read")
    async with deps.pool.acquire() as conn:
        await _owned(conn, actor, monitor_id)
        shot = await conn.fetchval(
            "SELECT png FROM screenshots WHERE id = $1 AND monitor_id = $2", screenshot_id, monitor_id
        )
        if shot is None:
            raise not_found("screenshot")
        baseline = await conn.fetchrow(
            "SELECT png, masks FROM screenshots WHERE monitor_id = $1 AND role = 'baseline'", monitor_id
        )
    if baseline is None:
        raise DomainError(409, "no_baseline", "no baseline to compare with")

    def draw() -> bytes:
        return diff.highlight(
            diff.pixels(bytes(shot)), diff.pixels(bytes(baseline["png"])), masks_of(baseline["masks"])
        )

    return await asyncio.to_thread(draw)
