"""A browser journey that compares its screenshots (``visual.compare``) through the worker's
Chromium and the real screenshot store (``monitor/visual/store.py`` on the test database): the
first run's end becomes the baseline, the same page passes, a page whose layout changed is down
with the visual verdict as its cause (or degraded, as ``visual.severity`` says), and a failed
step's screenshot is kept, never compared."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import asyncpg
import pytest
from aiohttp import web
from support.browser_run import needs_chromium

from monitor import db as monitor_db
from monitor.browser.chromium import Chromium
from monitor.checks import REGISTRY
from monitor.checks.base import CheckContext
from monitor.checks.browser import BrowserDetails
from monitor.models import CheckResult, Failure, MonitorSpec
from monitor.net.policy import AddressPolicy
from monitor.net.resolver import VettedResolver
from monitor.net.session import make_session
from monitor.visual.store import ScreenshotStore

pytestmark = [needs_chromium, pytest.mark.timeout(90)]
MonitorFactory = Callable[..., Awaitable[asyncpg.Record]]

PAGE = """<!doctype html><title>Shop</title><link rel="icon" href="data:,">
<style>body {{ margin: 0; background: #fff; }} #hero {{ height: 400px; background: {hero}; }}</style>
<div id="hero"></div><p id="tagline">Fresh bread every day</p>"""


class Site:
    def __init__(self) -> None:
        self.hero = "#ffffff"
        self.url = ""

    async def home(self, request: web.Request) -> web.Response:
        return web.Response(text=PAGE.format(hero=self.hero), content_type="text/html")


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    site = Site()
    app = web.Application()
    app.router.add_get("/", site.home)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    site.url = f"http://127.0.0.1:{runner.addresses[0][1]}/"
    try:
        yield site
    finally:
        await runner.cleanup()


@pytest.fixture
async def ctx(migrated: str, db: asyncpg.Connection) -> AsyncIterator[CheckContext]:
    pool = await monitor_db.create_pool(migrated, min_size=1, max_size=2)
    policy = AddressPolicy(["127.0.0.0/8"])
    resolver = VettedResolver(policy)
    session = make_session(resolver)
    browser = Chromium(resolver)
    try:
        yield CheckContext(session, policy, browser=browser, screenshots=ScreenshotStore(pool))
    finally:
        await browser.close()
        await session.close()
        await resolver.close()
        await pool.close()


async def run(
    ctx: CheckContext, monitor_factory: MonitorFactory, url: str, settings: dict[str, Any], mid: int | None
) -> tuple[int, CheckResult]:
    check = REGISTRY.get("browser")
    stored, secrets = check.to_stored(check.Settings.model_validate({"url": url, **settings}))
    if mid is None:
        row = await monitor_factory(url=url, name="Bakery", type="browser", settings=stored)
        mid = int(row["id"])
    spec = MonitorSpec(id=mid, name="Bakery", type="browser", url=url, interval_seconds=300,
                       timeout_seconds=20, confirm_after=1, paused=False,
                       options=check.options(stored, secrets))  # fmt: skip
    result = await check.run(spec, ctx, dt.datetime.now(dt.UTC))
    BrowserDetails.model_validate(result.details)
    return mid, result


async def test_a_changed_layout_is_down_with_the_visual_verdict_or_degraded(
    ctx: CheckContext, monitor_factory: MonitorFactory, site: Site, db: asyncpg.Connection
) -> None:
    compare: dict[str, Any] = {
        "steps": [{"action": "expect_text", "text": "Fresh bread"}],
        "visual": {"compare": True, "threshold_percent": 5},
    }
    mid, first = await run(ctx, monitor_factory, site.url, compare, None)
    assert first.ok, first.error
    assert (first.details or {})["screenshot"]["became_baseline"] is True

    mid, same = await run(ctx, monitor_factory, site.url, compare, mid)
    assert same.ok and (same.details or {})["screenshot"]["diff_percent"] == 0.0

    site.hero = "#c0392b"  # the deploy: a red hero over half the window
    mid, changed = await run(ctx, monitor_factory, site.url, compare, mid)
    assert (changed.ok, changed.failure) == (False, Failure.ASSERTION)
    assert changed.error is not None and changed.error.startswith("page changed "), changed.error
    assert changed.error.endswith("(threshold 5 %)") and (changed.details or {})["screenshot"]["changed"]
    assert all(s["ok"] for s in (changed.details or {})["steps"])  # every step passed: the page changed

    degrading = {**compare, "visual": {**compare["visual"], "severity": "degraded"}}
    mid, degraded = await run(ctx, monitor_factory, site.url, degrading, mid)
    assert degraded.ok and (degraded.details or {})["degraded"].startswith("page changed ")

    failing = {**compare, "steps": [{"action": "expect_text", "text": "Stale", "timeout_seconds": 1}]}
    mid, failed = await run(ctx, monitor_factory, site.url, failing, mid)
    assert failed.error == "step 1 expect_text 'Stale': text 'Stale' not found within 1 s"
    shot = (failed.details or {})["screenshot"]
    assert shot["failed"] is True and shot.get("diff_percent") is None  # kept, never compared
    assert await db.fetchval("SELECT count(*) FROM screenshots WHERE monitor_id = $1", mid) >= 2
