"""A heavy check through the real processes (``monitor scheduler``, ``monitor worker`` twice,
``monitor alerter``), its worker SIGKILLed mid-run: the job is taken over by the other worker,
the tick gets one result (no missing tick, no second row), and the down it finds is told once.

The check is a browser journey (``type: browser``) of a page served here that holds its answer
until the test lets it go: the first worker's Chromium is loading it when that worker is killed
(its browser goes with it); the second takes the job over once the claim lapsed
(MONITOR_WORKER_CLAIM_IDLE_SECONDS=2) with most of the monitor's 20 s left, and the page then
answers 503: down, confirmed at once, one DOWN in the chat.
"""

from __future__ import annotations

import asyncio
import signal
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
    pytest.mark.timeout(120),
]
CHAT = "7330"
WORKER_ENV = {"MONITOR_WORKER_CLAIM_IDLE_SECONDS": "2", "MONITOR_WORKER_CONCURRENCY": "1"}


class HeldPage:
    """``/``: each request counted, then held until ``release`` is set; then a 503."""

    def __init__(self) -> None:
        self.hits = 0
        self.release = asyncio.Event()
        self.url = ""

    async def home(self, request: web.Request) -> web.Response:
        self.hits += 1
        await self.release.wait()
        return web.Response(status=503, text="<h1>Down for maintenance</h1>", content_type="text/html")


@pytest.fixture
async def page() -> AsyncIterator[HeldPage]:
    held = HeldPage()
    app = web.Application()
    app.router.add_get("/", held.home)
    runner = web.AppRunner(app, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    held.url = f"http://127.0.0.1:{runner.addresses[0][1]}/"
    try:
        yield held
    finally:
        held.release.set()
        await runner.cleanup()


async def test_a_worker_killed_mid_run_has_its_job_taken_over_and_the_down_told_once(
    db: asyncpg.Connection,
    monitor_factory,
    page: HeldPage,
    fake_telegram: FakeTelegram,
    procs: ProcessFactory,
) -> None:
    check = REGISTRY.get("browser")
    settings, _secrets = check.to_stored(
        check.Settings.model_validate({"url": page.url, "steps": [{"action": "expect_text", "text": "Shop"}]})
    )
    # Written straight to the table: the type's 300 s minimum interval would make the test wait.
    monitor = await monitor_factory(
        name="held-shop", type="browser", url=check.target(check.Settings.model_validate(settings)),
        settings=settings, interval_seconds=30, timeout_seconds=20, confirm_after=1, telegram_chat_id=CHAT,
    )  # fmt: skip
    mid = monitor["id"]
    await procs.start("scheduler")
    await procs.start("alerter", env=fake_telegram.env())
    first = await procs.start("worker", env=WORKER_ENV)

    await wait_for(
        lambda: page.hits >= 1, timeout=45, message="the first worker's browser asked for the page"
    )
    first.send_signal(signal.SIGKILL)
    await wait_for(lambda: not first.running, timeout=10, message="the first worker is gone")
    second = await procs.start("worker", env=WORKER_ENV)
    await wait_for(lambda: page.hits >= 2, timeout=20, message="the second worker took the job over")
    page.release.set()

    await fake_telegram.wait_messages(1, timeout=30)
    alerts = [(a.name, a.kind) for a in delivered_alerts(fake_telegram)]
    assert alerts == [("held-shop", "DOWN")], fake_telegram.describe()
    rows = await db.fetch("SELECT time, ok, error FROM checks WHERE monitor_id = $1 ORDER BY time", mid)
    assert len(rows) == 1, rows  # the tick's one result: not missing, not twice
    assert rows[0]["ok"] is False and "answered 503" in rows[0]["error"], rows
    assert not rows[0]["error"].startswith("not run"), rows
    (taken,) = second.events("worker.taken_over")
    (done,) = second.events("worker.job_done")
    assert done["taken_over"] is True and done["result"] == "down", done
    assert taken["kind"] == "browser"
    downs = await db.fetchval("SELECT count(*) FROM outbox WHERE monitor_id = $1 AND kind = 'down'", mid)
    assert downs == 1
    # The failure's screenshot went to the worker's store (monitor/visual/store.py).
    shots = await db.fetch("SELECT role, failed FROM screenshots WHERE monitor_id = $1", mid)
    assert shots and all(s["failed"] for s in shots), shots


async def test_without_a_worker_each_tick_is_written_not_run_and_nothing_is_told(
    db: asyncpg.Connection, monitor_factory, page: HeldPage, procs: ProcessFactory
) -> None:
    check = REGISTRY.get("browser")
    settings, _secrets = check.to_stored(check.Settings.model_validate({"url": page.url, "steps": []}))
    monitor = await monitor_factory(
        name="no-worker", type="browser", url=page.url, settings=settings,
        interval_seconds=20, timeout_seconds=5, confirm_after=1,
    )  # fmt: skip
    mid = monitor["id"]
    await procs.start("scheduler")

    async def written() -> list[asyncpg.Record]:
        return await db.fetch("SELECT time, ok, error FROM checks WHERE monitor_id = $1", mid)

    (row,) = await wait_for(written, timeout=45, message="the tick written")
    assert row["ok"] is False and row["error"].startswith("not run: no worker took it within 8 s"), row
    state = await db.fetchrow(
        "SELECT status, consecutive_failures FROM monitor_state WHERE monitor_id = $1", mid
    )
    assert (state["status"], state["consecutive_failures"]) == ("unknown", 0), state
    assert await db.fetchval("SELECT count(*) FROM outbox WHERE monitor_id = $1", mid) == 0
    assert page.hits == 0
