"""The dashboard as a person uses it: headless Chromium (``support.browser``) in front of the
real api, scheduler and alerter, one set of them for the module.

The module starts the three processes, a local target and a fake webhook receiver, an owner
and a viewer of the test account, and three monitors for the pages to show (``Web shop`` up,
``Checkout`` on a path answering 500, ``Database port`` a tcp check of the target's port). Then
each test is one thing a person does: sign in through the form; add an http monitor with a
keyword assertion and a tcp monitor through the forms; watch a monitor go down on the overview
without reloading; acknowledge its incident (its reminders stop, the note reaches the channel);
rename, pause and delete one; as a viewer, find no write control and have a forged write
refused; and a tour of every page at 360 and 1280 px in light and dark (no sideways scroll, no
serious or critical axe-core violation, a screenshot each in ``.state/screenshots/``, listed in
the output; ``-s`` shows it). With ``MONITOR_WRITE_DOCS_SCREENSHOT=1`` the 1280 px light
overview is also written to ``docs/dashboard.png`` for the README.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from support import (
    ApiClient,
    ChannelFake,
    FakeChannels,
    ProcessFactory,
    TargetServer,
    ensure_account,
    leaks,
    process_env,
    reset,
)
from support import dashboard_browser as ui
from support.browser import Browser, chromium
from support.people import COOKIE, make_user
from support.waiting import wait_for

from monitor import db as monitor_db
from monitor.domain import keys as api_keys

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180), pytest.mark.asyncio(loop_scope="module")]

REPO = Path(__file__).resolve().parents[2]
DOCS_SCREENSHOT = REPO / "docs" / "dashboard.png"
DEADLINE = 30.0
OWNER = ("owner@example.test", "owner-password-5d1e7a")
VIEWER = ("viewer@example.test", "viewer-password-91c04b")
EVERY_SECOND = {"interval_seconds": 1, "timeout_seconds": 1, "confirm_after": 1}


@dataclass
class Stack:
    base_url: str
    api: ApiClient  # the owner's API key, for what a test sets up rather than does
    db: Any
    target: TargetServer
    hooks: ChannelFake
    channel_id: int
    monitors: dict[str, int]  # the module's monitors by name
    browser: Browser

    async def page_status(self, path: str) -> int:
        """What the api answers the signed-in browser's session for ``path`` (no redirect followed)."""
        cookie = await asyncio.to_thread(ui.session_cookie, self.browser)
        async with (
            aiohttp.ClientSession(trust_env=False) as http,
            http.get(
                self.base_url + path, headers={"Cookie": f"{COOKIE}={cookie}"}, allow_redirects=False
            ) as r,
        ):
            return r.status

    async def as_owner(self) -> None:
        await asyncio.to_thread(ui.sign_in, self.browser, self.base_url, *OWNER)

    async def as_viewer(self) -> None:
        await asyncio.to_thread(ui.sign_in, self.browser, self.base_url, *VIEWER)


@pytest.fixture(scope="module")
def browser_module(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    with chromium(log_dir=tmp_path_factory.mktemp("chromium")) as browser:
        yield browser


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def stack(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    migrated: str,
    redis_url: str,
    browser_module: Browser,
) -> AsyncIterator[Stack]:
    db = await monitor_db.connect(migrated)
    await reset(db, redis_url)
    account = await ensure_account(db)
    await make_user(db, OWNER[0], OWNER[1], account, "owner")
    await make_user(db, VIEWER[0], VIEWER[1], account, "viewer")
    key = (await api_keys.create_key(db, account, "tests")).key
    leaks.secret("API key", key)
    target = await TargetServer().start()
    fakes = await FakeChannels().start()
    factory = ProcessFactory(tmp_path_factory.mktemp("dashboard-logs"), process_env(migrated, redis_url))
    failures_before = request.session.testsfailed
    try:
        api_proc = await factory.start("api")
        await factory.start("scheduler")
        await factory.start("alerter")
        api = ApiClient(api_proc.base_url, key=key)
        made = await api.post(
            "/api/v1/channels",
            json={"kind": "webhook", "name": "Ops hook", "config": {"url": fakes.webhooks.url_for("ops")}},
        )
        assert made.status == 201, made
        channel = made.json
        fakes.webhooks.url_for("ops", secret=channel["config"]["secret"])
        target.set(500, path="/checkout")
        monitors = {}
        for fields in (
            {"name": "Web shop", "url": target.url("/shop"), "tags": ["shop"]},
            {"name": "Checkout", "url": target.url("/checkout"), "tags": ["shop"]},
            {"type": "tcp", "name": "Database port", "host": "127.0.0.1", "port": target.port},
        ):
            monitors[fields["name"]] = (await api.create_monitor(**fields, **EVERY_SECOND))["id"]
        yield Stack(
            api_proc.base_url, api, db, target, fakes.webhooks, channel["id"], monitors, browser_module
        )
        await api.close()
    finally:
        await factory.stop_all()
        await fakes.close()
        await target.close()
        await db.close()
        failed = request.session.testsfailed > failures_before
        if failed or factory.problems():
            print(factory.report())
    if not failed:
        factory.check()


async def test_a_person_signs_in_through_the_form(stack: Stack) -> None:
    await stack.as_owner()
    text = await asyncio.to_thread(ui.Browser.text, stack.browser)
    for name in stack.monitors:
        assert name in text, text


# -- a viewer ------------------------------------------------------------------------------


async def test_a_viewer_sees_no_write_control_and_a_forged_write_is_refused(stack: Stack) -> None:
    await stack.as_viewer()
    shop = stack.monitors["Web shop"]
    pages = ["/"] + [p for p in (f"/monitors/{shop}",) if await stack.page_status(p) != 404]

    def look_and_forge() -> tuple[dict[str, list[str]], int]:
        b = stack.browser
        controls = {}
        for path in pages:
            b.driver.get(stack.base_url + path)
            b.wait_for_element("main h1")
            controls[path] = [e.text for e in b.find_all("main a.button, main button") if e.text]
        return controls, ui.forged_api_call(b, "DELETE", f"/api/v1/monitors/{shop}")

    controls, deleted = await asyncio.to_thread(look_and_forge)
    writes = ("Add", "Edit", "Delete", "Pause", "Resume", "Acknowledge", "Test now")
    assert not {p: c for p, c in controls.items() if any(t.startswith(writes) for t in c)}, controls
    assert deleted == 403, "a viewer's DELETE of a monitor through the JSON API, from the page"
    if f"/monitors/{shop}" in pages:
        paused = await asyncio.to_thread(ui.forged_post, stack.browser, f"/monitors/{shop}/pause", {})
        assert paused == 403, "a viewer's forged pause form"
    assert (await stack.api.get(f"/api/v1/monitors/{shop}")).status == 200, "the monitor is still there"


# -- every page ----------------------------------------------------------------------------

# (name in the screenshot's file, path): every page a person can open; {id} is a monitor's.
PAGES = [
    ("overview", "/"),
    ("monitor", "/monitors/{id}"),
    ("monitor-new", "/monitors/new"),
    ("monitor-edit", "/monitors/{id}/edit"),
    ("channels", "/channels"),
    ("maintenance", "/maintenance"),
    ("status-pages", "/status-pages"),
    ("keys", "/keys"),
    ("members", "/members"),
    ("profile", "/profile"),
]
# Seen signed out.
SIGNED_OUT_PAGES = [("signin", "/signin"), ("setup", "/setup")]


async def test_every_page_at_a_phone_and_a_wide_screen_in_light_and_dark(stack: Stack) -> None:
    await stack.as_owner()
    checkout = stack.monitors["Checkout"]
    await wait_for(lambda: _status(stack, checkout, "down"), timeout=DEADLINE, message="Checkout is down")
    tour = ui.Tour()
    missing = []
    for name, template in PAGES:
        path = template.format(id=checkout)
        if await stack.page_status(path) == 404:
            missing.append(f"{name} ({path})")
            continue
        await asyncio.to_thread(ui.look, stack.browser, stack.base_url, name, path, tour)
    await asyncio.to_thread(ui.sign_out, stack.browser)
    for name, path in SIGNED_OUT_PAGES:
        if await _signed_out_status(stack, path) != 200:
            missing.append(f"{name} ({path})")
            continue
        await asyncio.to_thread(ui.look, stack.browser, stack.base_url, name, path, tour)

    print(f"\n{len(tour.shots)} screenshots:")
    for shot in tour.shots:
        print(
            f"  {shot.path.relative_to(REPO)}"
            + (f"  (axe, minor: {', '.join(shot.minor)})" if shot.minor else "")
        )
    if missing:
        print(f"pages not on this branch yet (no screenshot): {', '.join(missing)}")
    assert not tour.problems, "\n".join(tour.problems)
    if os.environ.get("MONITOR_WRITE_DOCS_SCREENSHOT") == "1":
        overview = next(s for s in tour.shots if (s.page, s.width, s.scheme) == ("overview", 1280, "light"))
        shutil.copyfile(overview.path, DOCS_SCREENSHOT)
        print(f"README screenshot: {DOCS_SCREENSHOT.relative_to(REPO)}")


async def _status(stack: Stack, monitor_id: int, status: str) -> bool:
    return bool((await stack.api.monitor(monitor_id))["status"] == status)


async def _signed_out_status(stack: Stack, path: str) -> int:
    async with (
        aiohttp.ClientSession(trust_env=False) as http,
        http.get(stack.base_url + path, allow_redirects=False) as r,
    ):
        return r.status
