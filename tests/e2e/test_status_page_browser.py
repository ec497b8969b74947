"""A status page as a visitor sees it: headless Chromium (``support.browser``) loads
``/status/<slug>`` from the real api, with states the real scheduler found, at 360 px (a phone)
and 1280 px, in light and dark mode.

Three monitors check local targets every second: ``Web shop`` answers 200, ``Checkout <i>v2</i>``
answers 500, ``Search`` is a closed port. The page (title ``<b>Shop & "API"</b>``) has two
groups: the first names its monitors by id, the second takes them by tag. Once the API and the
page's JSON say up/down/down, each of the four looks asserts what is on the screen: the title
as literal text (angle brackets shown, no bold), each monitor's name and state, 90 daily bars
per monitor, the overall sentence, the incidents of the failing two, the feed links, no
horizontal scroll, a dark background in dark mode, and no target URL anywhere in the page.

The screenshots go to ``.state/screenshots/status-<width>-<scheme>.png`` (paths printed; ``-s``
shows them); with ``MONITOR_WRITE_DOCS_SCREENSHOT=1`` the 1280 px light one is also written to
``docs/status-page.png`` for the README. The test takes about 10 s, most of it starting the
processes and waiting for the first checks.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg
import pytest
from support import ApiClient, ProcessFactory, TargetServer, free_port, wait_for
from support.browser import Browser, Scheme, browser_fixture  # noqa: F401
from support.status_data import D, H, add_incident, day_hours, hours_of_checks

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

REPO = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPO / ".state" / "screenshots"
DOCS_SCREENSHOT = REPO / "docs" / "status-page.png"
DEADLINE = 30.0
TITLE = '<b>Shop & "API"</b>'
SLUG = "shop"
DAYS = 90
# (width, colour scheme): a phone and a wide screen, each in both schemes.
LOOKS: list[tuple[int, Scheme]] = [(360, "light"), (360, "dark"), (1280, "light"), (1280, "dark")]


@dataclass(frozen=True)
class Shown:
    """One monitor as the page shows it."""

    name: str
    state: str
    status_class: str
    bars: int
    troubled: int  # bars of days with downtime (neither all up nor without data)


@dataclass(frozen=True)
class Look:
    """What one look at the page saw."""

    width: int
    scheme: Scheme
    inner_width: int
    scroll_width: int
    document_title: str
    title: str
    title_has_markup: bool
    overall: str
    groups: list[str]
    monitors: list[Shown]
    incidents: str
    feed_links: list[str]
    background: str
    text_colour: str
    text: str
    source: str
    screenshot: Path


# The colour behind the page's text: the body's, or the root element's when the body has none.
PAGE_BACKGROUND = """
for (const el of [document.body, document.documentElement]) {
  const colour = getComputedStyle(el).backgroundColor;
  if (colour !== "rgba(0, 0, 0, 0)" && colour !== "transparent") return colour;
}
return "transparent";
"""


def look(browser: Browser, url: str, width: int, scheme: Scheme) -> Look:
    """Open the page at ``width`` in ``scheme`` (360 px as a phone), read it, screenshot it."""
    browser.open(url, width=width, scheme=scheme, mobile=width < 600)  # also: innerWidth == width
    title = browser.wait_for_element("h1.title")
    monitors = [
        Shown(
            name=item.find_element("css selector", ".monitor-name").text,
            state=item.find_element("css selector", ".state").text,
            status_class=next(
                c for c in (item.get_attribute("class") or "").split() if c.startswith("status-")
            ),
            bars=len(item.find_elements("css selector", "ol.bars > li.bar")),
            troubled=len(
                item.find_elements("css selector", "ol.bars > li.bar:not(.bar-up):not(.bar-nodata)")
            ),
        )
        for item in browser.find_all("li.monitor")
    ]
    return Look(
        width=width,
        scheme=scheme,
        inner_width=browser.script("return window.innerWidth"),
        scroll_width=browser.script("return document.documentElement.scrollWidth"),
        document_title=browser.driver.title,
        title=title.text,
        title_has_markup=bool(title.find_elements("css selector", "*")),
        overall=browser.wait_for_element("section.overall").text,
        groups=[h.text for h in browser.find_all("section.group > h2")],
        monitors=monitors,
        incidents=browser.wait_for_element("section.incidents").text,
        feed_links=[a.get_attribute("href") or "" for a in browser.find_all("footer a")],
        background=browser.script(PAGE_BACKGROUND),
        text_colour=browser.css("main", "color"),
        text=browser.text(),
        source=browser.driver.page_source,
        screenshot=browser.screenshot(SCREENSHOTS, f"status-{width}-{scheme}.png"),
    )


def luminance(css_colour: str) -> float:
    """0 (black) to 255 (white), from ``rgb(r, g, b)`` or ``rgba(r, g, b, a)``."""
    r, g, b = (float(v) for v in css_colour[css_colour.index("(") + 1 : -1].split(",")[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


async def add_history(db: asyncpg.Connection, ids: list[int]) -> None:
    """89 days before today for each monitor: all up but for two incidents (a two-hour one of
    the second monitor 10 days ago, a 20-minute one of the first 40 days ago), so the bars show
    what a page with a past looks like."""
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    days = [today - i * D for i in range(DAYS - 1, 0, -1)]
    for i, mid in enumerate(ids):
        await db.execute("UPDATE monitors SET created_at = $2 WHERE id = $1", mid, days[0])
        await hours_of_checks(db, mid, [h for day in days for h in day_hours(day)], latency_ms=80.0 + 40 * i)
    bad_day, short_day = today - 10 * D, today - 40 * D
    await add_incident(db, ids[1], bad_day + 9 * H, bad_day + 11 * H)
    await add_incident(db, ids[0], short_day + 14 * H, short_day + 14 * H + timedelta(minutes=20))


async def test_a_visitor_sees_titles_states_and_bars(
    db: asyncpg.Connection,
    procs: ProcessFactory,
    api_client: Callable[[str], ApiClient],
    target: TargetServer,
    browser: Browser,
) -> None:
    api_proc = await procs.start("api", env={"MONITOR_STATUS_CACHE_SECONDS": "1"})
    await procs.start("scheduler")
    api = api_client(api_proc.base_url)

    closed = f"http://127.0.0.1:{free_port()}/search"
    target.set(500, path="/checkout")
    every_second = {"interval_seconds": 1, "timeout_seconds": 1, "confirm_after": 1}
    shop = await api.create_monitor(name="Web shop", url=target.url("/shop"), **every_second)
    checkout = await api.create_monitor(
        name="Checkout <i>v2</i>", url=target.url("/checkout"), **every_second
    )
    search = await api.create_monitor(name="Search", url=closed, tags=["backoffice"], **every_second)
    expected = {shop["id"]: "up", checkout["id"]: "down", search["id"]: "down"}

    async def api_says() -> bool:
        return [(await api.monitor(mid))["status"] for mid in expected] == list(expected.values())

    await wait_for(api_says, timeout=DEADLINE, message="the API reports up, down, down")
    await add_history(db, [shop["id"], checkout["id"], search["id"]])

    page = await api.post(
        "/api/v1/status-pages",
        json={
            "slug": SLUG,
            "title": TITLE,
            "description": "Our shop's services, checked every second.",
            "groups": [
                {"name": "Storefront", "monitor_ids": [shop["id"], checkout["id"]]},
                {"name": "Back office", "tags": ["backoffice"]},
            ],
        },
    )
    assert page.status == 201, page
    url = f"{api_proc.base_url}/status/{SLUG}"

    async def page_says() -> bool:
        async with aiohttp.ClientSession(trust_env=False) as session, session.get(url + ".json") as resp:
            data: dict[str, Any] = await resp.json()
        statuses = [m["status"] for g in data["groups"] for m in g["monitors"]]
        return statuses == ["up", "down", "down"] and len(data["incidents"]) == 4

    await wait_for(
        page_says, timeout=DEADLINE, message="the page's JSON shows up, down, down and two incidents"
    )

    started = asyncio.get_running_loop().time()
    looks = [await asyncio.to_thread(look, browser, url, width, scheme) for width, scheme in LOOKS]
    took = asyncio.get_running_loop().time() - started
    for seen in looks:
        print(f"screenshot {seen.width} px {seen.scheme}: {seen.screenshot}")
    print(f"four looks in {took:.1f}s")

    hidden = [target.url("/shop"), f"127.0.0.1:{target.port}", closed, f"127.0.0.1:{closed.split(':')[2]}"]
    for seen in looks:
        where = f"{seen.width} px {seen.scheme}"
        assert seen.inner_width == seen.width, where
        assert seen.scroll_width <= seen.width, f"{where}: scrolls sideways ({seen.scroll_width} px wide)"
        assert seen.document_title == f"{TITLE} status", where
        assert (seen.title, seen.title_has_markup) == (TITLE, False), where
        assert seen.overall.startswith("Partial outage"), (where, seen.overall)
        assert seen.groups == ["Storefront", "Back office"], where
        assert seen.monitors == [
            Shown("Web shop", "Up", "status-up", DAYS, 1),  # 40 days ago
            Shown("Checkout <i>v2</i>", "Down", "status-down", DAYS, 2),  # 10 days ago, today
            Shown("Search", "Down", "status-down", DAYS, 1),  # today
        ], where
        assert "Checkout <i>v2</i> is down" in seen.incidents and "Search is down" in seen.incidents, (
            seen.incidents
        )
        assert "Web shop is down" not in seen.incidents and "Web shop was down" in seen.incidents, (
            seen.incidents
        )
        assert any(h.endswith(f"/status/{SLUG}.json") for h in seen.feed_links), seen.feed_links
        assert any(h.endswith(f"/status/{SLUG}/feed.atom") for h in seen.feed_links), seen.feed_links
        for secret in hidden:
            assert secret not in seen.text and secret not in seen.source, f"{where}: {secret} shown"

    by_look = {(s.width, s.scheme): s for s in looks}
    for width in (360, 1280):
        light, dark = by_look[width, "light"], by_look[width, "dark"]
        assert luminance(light.background) > 128 > luminance(dark.background), (width, light, dark)
        assert luminance(light.text_colour) < 128 < luminance(dark.text_colour), (width, light, dark)

    if os.environ.get("MONITOR_WRITE_DOCS_SCREENSHOT") == "1":
        shutil.copyfile(by_look[1280, "light"].screenshot, DOCS_SCREENSHOT)
        print(f"README screenshot: {DOCS_SCREENSHOT}")
