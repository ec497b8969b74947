"""Visual change of a real page: Debian's Chromium takes screenshots of a page served here
(``chromium --headless --screenshot``, no Playwright), and the store compares them with the
baseline as a browser check's run would. The same page again: no change, nothing to alert;
its layout changed (the banner gone, the text moved up): a change over the threshold, judged
down, kept as the start of an outage.

What the worker adds on top (the browser check taking the screenshot in its own run, the
scheduler judging and alerting) is the browser type's and the worker's end-to-end test.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import pytest
from aiohttp import web
from support import insert_monitor

from monitor import db as monitor_db
from monitor.models import MonitorSpec
from monitor.visual import VisualSettings, verdict_of
from monitor.visual.store import ScreenshotStore

CHROMIUM = "/usr/bin/chromium"
FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--no-pings", "--hide-scrollbars", "--window-size=1280,800",
         "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1")  # fmt: skip
PAGE = """<!doctype html><html><head><title>Shop</title><style>
body {{ font-family: sans-serif; margin: 40px }}
.hero {{ background: #2a6; color: #fff; padding: 40px; font-size: 32px }}
p {{ font-size: 16px; line-height: 1.5 }}</style></head><body>{banner}
<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt.</p>
<button>Buy now</button></body></html>"""
BANNER = '<div class="hero">Welcome to the shop</div>'
SHOP = VisualSettings(compare=True, threshold_percent=5, severity="down")
T0 = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


@pytest.fixture
async def site() -> AsyncIterator[tuple[str, dict[str, str]]]:
    """A page on loopback whose HTML the test changes (``content["html"]``)."""
    content = {"html": PAGE.format(banner=BANNER)}

    async def index(_: web.Request) -> web.Response:
        return web.Response(text=content["html"], content_type="text/html")

    app = web.Application()
    app.router.add_get("/", index)
    runner = web.AppRunner(app)
    await runner.setup()
    server = web.TCPSite(runner, "127.0.0.1", 0)
    await server.start()
    port = server._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}/", content
    finally:
        await runner.cleanup()


async def screenshot(url: str) -> bytes:
    if shutil.which(CHROMIUM) is None:
        pytest.skip("Debian's chromium is not installed (make test-tools installs it)")
    with tempfile.TemporaryDirectory(prefix="monitor-visual-") as home:
        out = Path(home) / "shot.png"
        proc = await asyncio.create_subprocess_exec(
            CHROMIUM, *FLAGS, f"--user-data-dir={home}/profile", f"--screenshot={out}", url,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL, env={"HOME": home},
        )  # fmt: skip
        try:
            await asyncio.wait_for(proc.wait(), 60)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        return out.read_bytes()


async def test_an_unchanged_page_passes_and_a_changed_layout_is_a_visual_change(
    db: asyncpg.Connection, migrated: str, site: tuple[str, dict[str, str]]
) -> None:
    url, content = site
    monitor = MonitorSpec.from_row(await insert_monitor(db, url=url, name="Shop"))
    pool = await monitor_db.create_pool(migrated, min_size=1, max_size=2)
    try:
        store = ScreenshotStore(pool)
        first = await store.keep(monitor, await screenshot(url), at=T0, failed=False, visual=SHOP)
        assert first["became_baseline"] is True and (first["width"], first["height"]) == (1280, 800)
        same = await store.keep(
            monitor, await screenshot(url), at=T0 + timedelta(minutes=5), failed=False, visual=SHOP
        )
        assert (same["changed"], same["diff_percent"]) == (False, 0.0)
        assert verdict_of(same) == (None, None)  # no alert
        content["html"] = PAGE.format(banner="")  # a deploy drops the banner: the text moves up
        moved = await store.keep(
            monitor, await screenshot(url), at=T0 + timedelta(minutes=10), failed=False, visual=SHOP
        )
        assert moved["changed"] is True and moved["diff_percent"] > 5, moved
        error, degraded = verdict_of(moved)
        assert error is not None and error.startswith("page changed ") and error.endswith("(threshold 5 %)")
        assert degraded is None
        assert await db.fetchval("SELECT role FROM screenshots WHERE id = $1", moved["id"]) == "onset"
    finally:
        await pool.close()
