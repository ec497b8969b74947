"""Browser journeys in a real Chromium against a small shop served by the test (aiohttp on
loopback): a journey that passes (a click, a form filled with a secret password, a text on the
next page, the URL), the same journey after a "deploy" that removes the button (down, naming
the step, a screenshot handed to the store), a start page that answers 503, a wrong password
caught by the text on the next page, and a start page the vetting proxy refuses.

``execute`` runs as a worker calls it: a ``CheckContext`` whose ``browser`` is the worker's
``Chromium`` (``monitor/browser/chromium.py``: the run's vetting proxy in front, here with
loopback allowed as MONITOR_ALLOW_CIDRS would). A second or two per run; the monitor's secret
never appears in what they return.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from support.browser_run import needs_chromium

from monitor.browser.chromium import Chromium
from monitor.checks import REGISTRY
from monitor.checks.base import CheckContext
from monitor.checks.browser import BrowserDetails
from monitor.models import CheckResult, Failure, MonitorSpec
from monitor.net.policy import AddressPolicy
from monitor.net.resolver import VettedResolver
from monitor.net.session import make_session
from monitor.secrets import MASK

pytestmark = [needs_chromium, pytest.mark.timeout(90)]

PASSWORD = "s3cret pass"

HOME = """<!doctype html><html><head><title>Shop</title><link rel="icon" href="data:,"></head>
<body><h1>Shop</h1>{button}</body></html>"""
BUTTON = '<form action="/checkout"><button id="buy">Buy</button></form>'
CHECKOUT = """<!doctype html><html><head><title>Checkout</title><link rel="icon" href="data:,"></head>
<body><form action="/done" method="{method}"><input id="email" name="email">
<input id="password" name="password" type="password"><button id="pay">Pay</button></form></body></html>"""
DONE = """<!doctype html><html><head><title>Done</title><link rel="icon" href="data:,"></head>
<body><p id="message">{message}</p></body></html>"""


class Shop:
    def __init__(self) -> None:
        self.deployed = False  # the deploy that lost the button
        self.method = "post"  # the checkout form's
        self.status = 200
        self.url = ""

    async def home(self, request: web.Request) -> web.Response:
        page = HOME.format(button="" if self.deployed else BUTTON)
        return web.Response(text=page, content_type="text/html", status=self.status)

    async def checkout(self, request: web.Request) -> web.Response:
        return web.Response(text=CHECKOUT.format(method=self.method), content_type="text/html")

    async def done(self, request: web.Request) -> web.Response:
        form = await request.post() if request.method == "POST" else request.query
        paid = form.get("password") == PASSWORD
        message = f"Thank you, {form.get('email')}" if paid else "Wrong password"
        return web.Response(text=DONE.format(message=message), content_type="text/html")


@pytest.fixture
async def shop() -> AsyncIterator[Shop]:
    shop = Shop()
    app = web.Application()
    app.router.add_get("/", shop.home)
    app.router.add_get("/checkout", shop.checkout)
    app.router.add_route("*", "/done", shop.done)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    shop.url = f"http://127.0.0.1:{runner.addresses[0][1]}/"
    try:
        yield shop
    finally:
        await runner.cleanup()


class Screenshots:
    """The screenshot store as a check sees it: what it was handed."""

    def __init__(self) -> None:
        self.kept: list[tuple[int, bytes, bool]] = []

    def keeps(self, monitor: MonitorSpec) -> bool:
        return False

    async def keep(
        self, monitor: MonitorSpec, png: bytes, *, at: dt.datetime, failed: bool
    ) -> dict[str, Any]:
        self.kept.append((monitor.id, png, failed))
        return {"id": len(self.kept), "failed": failed}


async def context(allowed: list[str]) -> AsyncIterator[CheckContext]:
    policy = AddressPolicy(allowed)
    resolver = VettedResolver(policy)
    session = make_session(resolver)
    browser = Chromium(resolver, memory_mb=1024)
    try:
        yield CheckContext(session, policy, browser=browser, screenshots=Screenshots())
    finally:
        await browser.close()
        await session.close()
        await resolver.close()


@pytest.fixture
async def ctx() -> AsyncIterator[CheckContext]:
    """A worker's context whose policy allows loopback (the shop's address)."""
    async for made in context(["127.0.0.0/8"]):
        yield made


@pytest.fixture
async def guarded() -> AsyncIterator[CheckContext]:
    """A worker's context with the default policy: loopback denied."""
    async for made in context([]):
        yield made


JOURNEY = [
    {"action": "click", "selector": "#buy", "timeout_seconds": 3},
    {"action": "expect_url", "contains": "/checkout"},
    {"action": "fill", "selector": "#email", "value": "ann@example.com"},
    {"action": "fill", "selector": "#password", "value": PASSWORD},
    {"action": "click", "selector": "text=Pay"},
    {"action": "expect_text", "text": "Thank you, ann@example.com", "selector": "#message"},
    {"action": "expect_url", "matches": r"/done$"},
]


async def journey(ctx: CheckContext, url: str, steps: list[dict[str, Any]]) -> CheckResult:
    """The journey as the api stores it and a worker runs it (settings and sealed-apart secrets)."""
    check = REGISTRY.get("browser")
    stored, secrets = check.to_stored(check.Settings.model_validate({"url": url, "steps": steps}))
    assert PASSWORD not in str(stored)
    spec = MonitorSpec(id=7, name="Shop", type="browser", url=url, interval_seconds=300,
                       timeout_seconds=20, confirm_after=1, paused=False,
                       options=check.options(stored, secrets))  # fmt: skip
    result = await check.run(spec, ctx, dt.datetime.now(dt.UTC))
    BrowserDetails.model_validate(result.details)
    assert PASSWORD not in repr(result) and PASSWORD.replace(" ", "+") not in repr(result)
    return result


async def test_a_journey_passes_then_a_deploy_removes_the_button(ctx: CheckContext, shop: Shop) -> None:
    passed = await journey(ctx, shop.url, JOURNEY)
    assert passed.ok, passed.error
    assert (passed.status_code, passed.failure) == (200, None)
    details = passed.details or {}
    assert [s["name"] for s in details["steps"]] == [
        f"open '{shop.url}'", "click '#buy'", "expect_url contains '/checkout'", "fill '#email'",
        "fill '#password'", "click 'text=Pay'", "expect_text 'Thank you, ann@example.com' in '#message'",
        "expect_url matches '/done$'",
    ]  # fmt: skip
    assert all(s["ok"] and s["duration_ms"] >= 0 for s in details["steps"])
    assert details["final_url"] == f"{shop.url}done"
    assert "failed_step" not in details
    assert ctx.screenshots.kept == []  # a pass is kept only where the monitor keeps screenshots

    shop.deployed = True
    down = await journey(ctx, shop.url, JOURNEY)
    assert not down.ok and down.failure is Failure.ASSERTION
    assert down.error == "step 1 click '#buy': no element matches within 3 s"
    details = down.details or {}
    assert details["failed_step"] == 1
    assert details["steps"][1] == {"name": "click '#buy'", "ok": False,
                                   "duration_ms": details["steps"][1]["duration_ms"],
                                   "error": "no element matches within 3 s"}  # fmt: skip
    assert 2900 <= details["steps"][1]["duration_ms"] < 6000
    assert [s["ok"] for s in details["steps"][2:]] == [None] * 6
    [(monitor_id, png, failed)] = ctx.screenshots.kept
    assert (monitor_id, failed, png[:8]) == (7, True, b"\x89PNG\r\n\x1a\n")
    assert details["screenshot"] == {"id": 1, "failed": True}


async def test_a_start_page_that_answers_503_is_down_naming_it(ctx: CheckContext, shop: Shop) -> None:
    shop.status = 503
    down = await journey(ctx, shop.url, JOURNEY[:1])
    assert (down.ok, down.status_code, down.failure) == (False, 503, Failure.ASSERTION)
    assert down.error == f"open '{shop.url}': answered 503"
    assert [s["ok"] for s in (down.details or {})["steps"]] == [False, None]
    assert "final_url" in (down.details or {})


async def test_a_wrong_password_fails_at_the_text_without_showing_the_password(
    ctx: CheckContext, shop: Shop
) -> None:
    shop.method = "get"  # so the password is in the URL the journey ends on: masked there
    wrong = [dict(s) for s in JOURNEY]
    wrong[3] = {**wrong[3], "value": PASSWORD + "!"}
    wrong[5] = {**wrong[5], "timeout_seconds": 1}
    down = await journey(ctx, shop.url, wrong)
    assert (down.details or {})["final_url"] == f"{shop.url}done?email=ann%40example.com&password={MASK}"
    assert down.error == "step 6 expect_text 'Thank you, ann@example.com' in '#message': text 'Thank you, " \
        "ann@example.com' not found within 1 s"  # fmt: skip
    assert PASSWORD not in repr(down) and MASK not in (down.error or "")


async def test_a_start_page_the_proxy_refuses_is_refused_naming_the_refusal(
    guarded: CheckContext, shop: Shop
) -> None:
    refused = await journey(guarded, shop.url, JOURNEY[:1])
    assert (refused.ok, refused.failure) == (False, Failure.REFUSED), refused.error
    assert refused.error is not None and refused.error.startswith(f"open '{shop.url}': blocked: 127.0.0.1")
    assert (refused.details or {})["refusals"][0].startswith("blocked: 127.0.0.1")
