"""Visual change through the real processes (``monitor scheduler``, ``monitor worker``,
``monitor alerter``): a browser monitor that compares each run's screenshot with its baseline.

Its first run's screenshot becomes the baseline; the same page again is no change (up, no
alert, ``diff_percent`` 0); then a "deploy" drops the page's banner and moves its text up: the
share of changed pixels passes the 5 % threshold, the monitor goes down with the share in the
cause, one DOWN reaches the chat with a link to the screenshots, and the outage's first
screenshot is kept as its onset. ``tests/integration/test_visual_chromium.py`` holds the
store's own cases; this is the path a user sees.
"""

from __future__ import annotations

import html
from collections.abc import AsyncIterator

import asyncpg
import pytest
from aiohttp import web
from support import FakeTelegram, ProcessFactory, wait_for
from support.alerts import delivered_alerts
from support.browser_run import needs_chromium

from monitor.checks import REGISTRY

pytestmark = [
    pytest.mark.e2e,
    needs_chromium,
    pytest.mark.timeout(200),
]
CHAT = "7332"
PUBLIC = "http://monitor.example.test"
PAGE = """<!doctype html><html><head><title>Shop</title><link rel="icon" href="data:,"><style>
body {{ font-family: sans-serif; margin: 40px }}
.hero {{ background: #2a6; color: #fff; padding: 60px; font-size: 32px }}
p {{ font-size: 16px; line-height: 1.5 }}</style></head><body>{banner}
<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt.</p>
<button>Buy now</button></body></html>"""
BANNER = '<div class="hero">Winter sale: everything half price</div>'


class Site:
    def __init__(self) -> None:
        self.deployed = False
        self.url = ""

    async def home(self, request: web.Request) -> web.Response:
        return web.Response(
            text=PAGE.format(banner="" if self.deployed else BANNER), content_type="text/html"
        )


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    site = Site()
    app = web.Application()
    app.router.add_get("/", site.home)
    runner = web.AppRunner(app, shutdown_timeout=0.5)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    site.url = f"http://127.0.0.1:{runner.addresses[0][1]}/"
    try:
        yield site
    finally:
        await runner.cleanup()


async def test_a_changed_layout_goes_down_and_an_unchanged_page_does_not(
    db: asyncpg.Connection, monitor_factory, site: Site, fake_telegram: FakeTelegram, procs: ProcessFactory
) -> None:
    check = REGISTRY.get("browser")
    body = {"url": site.url, "steps": [], "visual": {"compare": True, "threshold_percent": 5}}
    settings, _ = check.to_stored(check.Settings.model_validate(body))
    # Written straight to the tables: the type's 300 s minimum interval would make the test wait
    # (a timeout with room for a first run on a loaded machine: Chromium and Playwright start).
    monitor = await monitor_factory(
        name="shop-look", type="browser", url=site.url, settings=settings,
        interval_seconds=15, timeout_seconds=14, confirm_after=1, telegram_chat_id=CHAT,
    )  # fmt: skip
    mid = monitor["id"]
    public = {"MONITOR_PUBLIC_URL": PUBLIC}
    await procs.start("scheduler")
    await procs.start("alerter", env={**fake_telegram.env(), **public})
    await procs.start("worker", env=public)

    async def shots_of_passing_runs() -> list[asyncpg.Record] | None:
        rows = await db.fetch("SELECT details FROM checks WHERE monitor_id = $1 AND ok ORDER BY time", mid)
        return rows if len(rows) >= 2 else None

    # The first run's screenshot is the baseline; the same page again changes nothing.
    passing = await wait_for(shots_of_passing_runs, timeout=90, message="two passing runs")
    first, second = (r["details"]["screenshot"] for r in passing[:2])
    assert first["became_baseline"], first
    assert second["diff_percent"] == 0 and not second["changed"], second
    assert fake_telegram.messages == [], fake_telegram.describe()

    site.deployed = True
    await fake_telegram.wait_messages(1, timeout=90)
    alerts = [(a.name, a.kind) for a in delivered_alerts(fake_telegram)]
    assert alerts == [("shop-look", "DOWN")], fake_telegram.describe()
    down = await db.fetchrow(
        "SELECT error, details FROM checks WHERE monitor_id = $1 AND NOT ok ORDER BY time LIMIT 1", mid
    )
    shot = down["details"]["screenshot"]
    assert shot["changed"] and shot["diff_percent"] > 5, shot
    assert down["error"].startswith("page changed "), down["error"]
    text = html.unescape(fake_telegram.messages[0].text)
    assert "page changed " in text, text
    assert f"{PUBLIC}/monitors/{mid}/screenshots" in text, text
    onset = await db.fetchval(
        "SELECT count(*) FROM screenshots WHERE monitor_id = $1 AND role = 'onset'", mid
    )
    assert onset == 1
