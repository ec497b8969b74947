"""A browser journey through the real processes (``monitor scheduler``, ``monitor worker``,
``monitor alerter``): a shop served here passes its journey (a click, a form with a sealed
password, the text and URL of the next page), then a "deploy" removes its button, and the
monitor goes down naming the step: the check's error, the incident's cause and the DOWN in the
chat say "step 1 click '#buy': no element matches within 3 s". The password reaches the
worker only sealed in the job's row and appears in no row, log line or message.
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
from support.procs import TEST_SECRET_KEY

from monitor.checks import REGISTRY
from monitor.secrets import SecretBox, seal_monitor_secrets

pytestmark = [
    pytest.mark.e2e,
    needs_chromium,
    pytest.mark.timeout(200),
]
CHAT = "7331"
PASSWORD = "e2e-journey-pw-7a4c"
CAUSE = "step 1 click '#buy': no element matches within 3 s"

HOME = '<!doctype html><title>Shop</title><link rel="icon" href="data:,"><h1>Shop</h1>{button}'
BUTTON = '<form action="/checkout"><button id="buy">Buy</button></form>'
CHECKOUT = """<!doctype html><title>Checkout</title><link rel="icon" href="data:,">
<form action="/done" method="post"><input id="email" name="email">
<input id="password" name="password" type="password"><button id="pay">Pay</button></form>"""
DONE = '<!doctype html><title>Done</title><link rel="icon" href="data:,"><p id="message">{message}</p>'
STEPS = [
    {"action": "click", "selector": "#buy", "timeout_seconds": 3},
    {"action": "expect_url", "contains": "/checkout"},
    {"action": "fill", "selector": "#email", "value": "ann@example.com"},
    {"action": "fill", "selector": "#password", "value": PASSWORD},
    {"action": "click", "selector": "text=Pay"},
    {"action": "expect_text", "text": "Thank you", "selector": "#message"},
    {"action": "expect_url", "contains": "/done"},
]


class Shop:
    def __init__(self) -> None:
        self.deployed = False
        self.paid = 0
        self.url = ""

    async def home(self, request: web.Request) -> web.Response:
        page = HOME.format(button="" if self.deployed else BUTTON)
        return web.Response(text=page, content_type="text/html")

    async def checkout(self, request: web.Request) -> web.Response:
        return web.Response(text=CHECKOUT, content_type="text/html")

    async def done(self, request: web.Request) -> web.Response:
        form = await request.post()
        ok = form.get("password") == PASSWORD
        self.paid += ok
        text = DONE.format(message="Thank you" if ok else "Wrong password")
        return web.Response(text=text, content_type="text/html")


@pytest.fixture
async def shop() -> AsyncIterator[Shop]:
    shop = Shop()
    app = web.Application()
    app.router.add_get("/", shop.home)
    app.router.add_get("/checkout", shop.checkout)
    app.router.add_post("/done", shop.done)
    runner = web.AppRunner(app, shutdown_timeout=0.5)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    shop.url = f"http://127.0.0.1:{runner.addresses[0][1]}/"
    try:
        yield shop
    finally:
        await runner.cleanup()


async def test_a_journey_whose_button_disappears_goes_down_naming_the_step(
    db: asyncpg.Connection,
    monitor_factory,
    shop: Shop,
    fake_telegram: FakeTelegram,
    procs: ProcessFactory,
) -> None:
    check = REGISTRY.get("browser")
    settings, secrets = check.to_stored(check.Settings.model_validate({"url": shop.url, "steps": STEPS}))
    # Written straight to the tables: the type's 300 s minimum interval would make the test wait
    # (a timeout with room for a first run on a loaded machine: Chromium and Playwright start).
    monitor = await monitor_factory(
        name="shop-journey", type="browser", url=shop.url, settings=settings,
        interval_seconds=15, timeout_seconds=14, confirm_after=1, telegram_chat_id=CHAT,
    )  # fmt: skip
    mid = monitor["id"]
    await db.execute(
        "INSERT INTO monitor_secrets (monitor_id, secrets) VALUES ($1, $2)",
        mid,
        seal_monitor_secrets(SecretBox.from_setting(TEST_SECRET_KEY), secrets),
    )
    await procs.start("scheduler")
    await procs.start("alerter", env=fake_telegram.env())
    worker = await procs.start("worker")

    passed = await wait_for(
        lambda: db.fetchrow("SELECT ok, error, details FROM checks WHERE monitor_id = $1 AND ok", mid),
        timeout=90,
        message="a passing run of the journey",
    )
    assert shop.paid >= 1 and passed["error"] is None
    assert [s["ok"] for s in passed["details"]["steps"]] == [True] * 8

    shop.deployed = True
    await fake_telegram.wait_messages(1, timeout=90)
    alerts = [(a.name, a.kind) for a in delivered_alerts(fake_telegram)]
    assert alerts == [("shop-journey", "DOWN")], fake_telegram.describe()
    assert CAUSE in html.unescape(fake_telegram.messages[0].text), fake_telegram.describe()
    down = await db.fetchrow(
        "SELECT error, details FROM checks WHERE monitor_id = $1 AND NOT ok ORDER BY time LIMIT 1", mid
    )
    assert down["error"] == CAUSE
    assert down["details"]["failed_step"] == 1
    cause = await db.fetchval("SELECT error FROM incidents WHERE monitor_id = $1", mid)
    assert cause == CAUSE

    rows = await db.fetch("SELECT error, details::text FROM checks WHERE monitor_id = $1", mid)
    assert not any(PASSWORD in str(tuple(r)) for r in rows)
    assert PASSWORD not in worker.log_text() and PASSWORD not in fake_telegram.describe()
