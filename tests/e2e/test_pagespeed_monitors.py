"""Page speed through the real processes (``monitor scheduler``, ``monitor worker`` with its
Chromium and Lighthouse 12.2.3, ``monitor alerter``), against the local site of
``support/lighthouse_pages.py``: a fast page and a slow one (its largest element, an image,
answered 4 s late), each monitor bounding ``lcp_ms <= 2500``:

* the fast page is up, no alert;
* the slow page with the bound's severity ``down`` goes down, its DOWN naming the metric and
  the bound ("lcp_ms 4830 > 2500");
* the slow page with severity ``degraded`` stays up and is degraded with the same words, as
  the monitor's state (``monitor_state``) and the chat say.

``tests/integration/test_pagespeed_lighthouse.py`` holds the type's own cases (the report's
figures, a refused page); this is the path a user sees. Three Lighthouse runs, one per
monitor: about 15 s each here, two at a time (``MONITOR_WORKER_CONCURRENCY``).
"""

from __future__ import annotations

import html
from collections.abc import AsyncIterator

import asyncpg
import pytest
from support import FakeTelegram, ProcessFactory, wait_for
from support.alerts import said_to
from support.browser_run import needs_chromium
from support.lighthouse_pages import serve

from monitor.browser.lighthouse import find_cli
from monitor.checks import REGISTRY

pytestmark = [
    pytest.mark.e2e,
    needs_chromium,
    pytest.mark.skipif(
        find_cli() is None, reason="the Lighthouse CLI is not installed (`make browser-tools`)"
    ),
    pytest.mark.timeout(240),
]
CHAT = "7333"


@pytest.fixture
async def site() -> AsyncIterator[str]:
    async with serve() as base:
        yield base


async def test_a_slow_page_is_down_or_degraded_by_its_lcp_and_a_fast_one_up(
    db: asyncpg.Connection, monitor_factory, site: str, fake_telegram: FakeTelegram, procs: ProcessFactory
) -> None:
    check = REGISTRY.get("pagespeed")
    ids = {}
    for name, path, severity in (
        ("fast", "", "down"),
        ("slow", "slow", "down"),
        ("sluggish", "slow", "degraded"),
    ):
        bound = {"metric": "lcp_ms", "op": "<=", "value": 2500, "severity": severity}
        body = {"url": site + path, "profile": "desktop", "assertions": [bound]}
        settings, _ = check.to_stored(check.Settings.model_validate(body))
        # Written straight to the tables: the type's 300 s minimum interval would make the test
        # wait (a first tick is due within one interval of the start); one run per monitor is all
        # the test needs.
        monitor = await monitor_factory(
            name=name, type="pagespeed", url=site + path, settings=settings,
            interval_seconds=60, timeout_seconds=58, confirm_after=1, telegram_chat_id=CHAT,
        )  # fmt: skip
        ids[name] = monitor["id"]
    await procs.start("scheduler")
    await procs.start("alerter", env=fake_telegram.env())
    await procs.start("worker")

    async def checked() -> list[asyncpg.Record] | None:
        rows = await db.fetch(
            "SELECT DISTINCT ON (monitor_id) monitor_id, ok, error, details FROM checks"
            " ORDER BY monitor_id, time"
        )
        return rows if len(rows) == 3 else None

    rows = {r["monitor_id"]: r for r in await wait_for(checked, timeout=200, message="a run of each monitor")}
    fast, slow, sluggish = (rows[ids[n]] for n in ("fast", "slow", "sluggish"))
    assert fast["ok"] and fast["details"]["metrics"]["lcp_ms"] < 2500, fast["error"]
    lcp = slow["details"]["metrics"]["lcp_ms"]
    assert not slow["ok"] and slow["error"] == f"lcp_ms {lcp:.0f} > 2500", slow["error"]
    assert sluggish["ok"] and sluggish["details"]["degraded"].startswith("lcp_ms "), sluggish["details"]

    await fake_telegram.wait_messages(2, timeout=60)
    alerts = sorted(said_to(fake_telegram, CHAT))
    assert alerts == [("slow", "DOWN"), ("sluggish", "DEGRADED")], fake_telegram.describe()
    texts = [html.unescape(m.text) for m in fake_telegram.messages]
    assert all("lcp_ms " in t and "> 2500" in t for t in texts), texts
    states = dict(await db.fetch("SELECT monitor_id, status FROM monitor_state"))
    assert (states[ids["fast"]], states[ids["slow"]], states[ids["sluggish"]]) == ("up", "down", "degraded")
