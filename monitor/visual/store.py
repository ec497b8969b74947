"""The screenshot store a worker hands its browser checks as ``CheckContext.screenshots``.

``keep`` writes a run's PNG as the monitor's latest screenshot (the previous latest goes: one
per monitor, ~20-500 KB each), compares it with the accepted baseline when the monitor's
``visual.compare`` is on, and answers what the check puts in ``details["screenshot"]``
(``monitor.visual.Kept``). Rules, in the order they apply:

- bytes that are not a PNG, a PNG past ``MONITOR_SCREENSHOT_MAX_BYTES`` or past
  ``diff.MAX_PIXELS``: nothing stored, the answer says why in ``note`` (the check's own verdict
  stands: a screenshot is evidence, not the check);
- a failed run: stored, never compared (the page is not what its steps expect);
- a comparing monitor with no baseline: this screenshot becomes the baseline (as UptimeRobot
  takes the first one), nothing to compare it with yet;
- else compared with the baseline, its masks left out (``diff.py``);
- a run that counts down (failed, or changed with severity down) after one that did not: the
  screenshot is also kept as an ``onset`` row until ``MONITOR_SCREENSHOT_RETENTION_DAYS``; the
  answer's ``id`` is that row's, so a result's (and the down alert's) link stays good after
  later runs replace the latest. The incident the streak opens starts at this check's time
  (``incidents.started_at``), and the dashboard finds its screenshot by that time.

With MONITOR_PUBLIC_URL set, the answer has a ``url``: the monitor's screenshots page in the
dashboard, which the down alert of the incident links to (``scheduler/transitions.py`` copies
it from the deciding check's details into the event, ``channels/notice.py`` writes the line).

Comparing decodes both PNGs and takes ~40 ms of CPU for 1280x800: it runs in a thread, off the
worker's event loop. Each ``keep`` is one transaction; a monitor's runs are one at a time (the
scheduler dispatches its next tick after the last result), so there is no race between two
keeps of one monitor to guard against beyond the unique indexes of sql/026.
"""

from __future__ import annotations

import asyncio
import json
from datetime import datetime
from typing import Any

import asyncpg

from monitor import db
from monitor.config import Settings
from monitor.models import MonitorSpec
from monitor.visual import Kept, Mask, VisualSettings, visual_of
from monitor.visual.diff import ImageRefused, changed, compare_png, size_of, verdict

DEFAULT_MAX_BYTES = 2 * 1024 * 1024

_BASELINE = "SELECT id, png, masks FROM screenshots WHERE monitor_id = $1 AND role = 'baseline'"
_LATEST_DOWN = "SELECT down FROM screenshots WHERE monitor_id = $1 AND role = 'latest'"
_INSERT = """
INSERT INTO screenshots
    (monitor_id, role, taken_at, failed, down, width, height, png, diff_percent, baseline_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id"""


def masks_of(stored: Any) -> list[Mask]:
    """A baseline row's ``masks`` column (asyncpg hands jsonb over as text)."""
    raw = json.loads(stored) if isinstance(stored, str) else (stored or [])
    return [Mask.model_validate(m) for m in raw]


class ScreenshotStore:
    """``monitor.visual.ScreenshotKeeper`` on the database."""

    def __init__(
        self, pool: asyncpg.Pool, *, max_bytes: int = DEFAULT_MAX_BYTES, public_url: str | None = None
    ) -> None:
        self._pool = pool
        self._max_bytes = max_bytes
        # MONITOR_PUBLIC_URL: the answer's ``url`` (the dashboard's screenshots page of the
        # monitor), which the down alert links to; unset, no link (an alert has no origin to use).
        self._public_url = public_url.rstrip("/") if public_url else None
        self._owned = False

    @classmethod
    async def open(cls, settings: Settings) -> ScreenshotStore:
        """A store on a pool of its own (a worker's: at most 2 connections, opened on demand),
        with the operator's size cap and public URL; ``close`` closes that pool."""
        pool = await db.create_pool(settings.dsn, min_size=0, max_size=2)
        store = cls(pool, max_bytes=settings.screenshot_max_bytes, public_url=settings.public_url)
        store._owned = True
        return store

    async def close(self) -> None:
        """Close the pool if the store opened it (``open``); a pool given is its giver's."""
        if self._owned:
            await self._pool.close()

    def keeps(self, monitor: MonitorSpec) -> bool:
        return visual_of(monitor).compare

    async def keep(
        self,
        monitor: MonitorSpec,
        png: bytes,
        *,
        at: datetime,
        failed: bool,
        visual: VisualSettings | None = None,
    ) -> Kept:
        visual = visual or visual_of(monitor)
        if len(png) > self._max_bytes:
            return {"note": f"screenshot of {len(png):,} bytes not kept (over {self._max_bytes:,})"}
        try:
            width, height = size_of(png)
        except ImageRefused as exc:
            return {"note": f"screenshot not kept: {exc}"}
        kept: Kept = {
            "width": width,
            "height": height,
            "failed": failed,
            "baseline_id": None,
            "changed": False,
        }
        kept["became_baseline"] = False
        kept["diff_percent"] = None
        async with self._pool.acquire() as conn, conn.transaction():
            baseline = await conn.fetchrow(_BASELINE, monitor.id) if visual.compare else None
            if visual.compare and not failed and baseline is not None:
                try:
                    found = await asyncio.to_thread(
                        compare_png, png, bytes(baseline["png"]), masks_of(baseline["masks"])
                    )
                except ImageRefused as exc:  # a baseline this version cannot read: say so, compare nothing
                    kept["note"] = f"baseline {baseline['id']} not compared: {exc}"
                else:
                    is_changed = changed(found, visual.threshold_percent)
                    kept["baseline_id"] = baseline["id"]
                    kept["diff_percent"] = round(found.percent, 3)
                    kept["threshold_percent"] = visual.threshold_percent
                    kept["changed"] = is_changed
                    if is_changed:
                        kept["severity"] = visual.severity
                        kept["verdict"] = verdict(found, visual.threshold_percent)
            down = failed or (kept.get("changed") is True and visual.severity == "down")
            was_down = await conn.fetchval(_LATEST_DOWN, monitor.id)
            await conn.execute(
                "DELETE FROM screenshots WHERE monitor_id = $1 AND role = 'latest'", monitor.id
            )
            args = (at, failed, down, width, height, png, kept.get("diff_percent"), kept.get("baseline_id"))
            kept["id"] = await conn.fetchval(_INSERT, monitor.id, "latest", *args)
            if down and not was_down:
                kept["id"] = await conn.fetchval(_INSERT, monitor.id, "onset", *args)
            if visual.compare and not failed and baseline is None:
                await conn.fetchval(_INSERT, monitor.id, "baseline", *args)
                kept["became_baseline"] = True
        if self._public_url:
            kept["url"] = f"{self._public_url}/monitors/{monitor.id}/screenshots#outages"
        return kept


async def sweep(pool: asyncpg.Pool, days: int, batch: int = 1000) -> int:
    """Delete the onset screenshots older than ``days``, ``batch`` at a time: how many went.
    (A screenshot that is also a baseline is its own row, and stays.)"""
    return await db.delete_older(pool, "screenshots", "taken_at", "role = 'onset'", days, batch)
