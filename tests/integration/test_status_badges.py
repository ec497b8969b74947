"""Badges through the real api (in-process: ``support.inprocess``) and PostgreSQL: a monitor's
status, uptime over a window and average response time, read through the unguessable token of
its ``badge_url`` (never its id), as SVG with the message and colour the data set fixes.

The data set (``badged``) is rows written straight to the database: a monitor created 40 days
ago with checks in each of the last 5 hours (123 ms each) and one hour 10 days ago (1500 ms),
and one incident of 12,960 s ten days ago: 30-day uptime 100 x (1 - 12960 / 2592000) = 99.5 %,
which a badge shows as "99.5%" in green (99 to 99.9).
"""

from __future__ import annotations

import asyncio
import time
import xml.etree.ElementTree as ET
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta

import aiohttp
import asyncpg
import pytest
from multidict import CIMultiDictProxy
from support import ApiClient, ensure_account, insert_monitor
from support.inprocess import InProcessFactory, inprocess_api_fixture  # noqa: F401
from support.status_data import D, H, add_incident, hours_of_checks, set_state

from monitor.domain import keys as api_keys
from monitor.status.badges import COLORS
from monitor.status.service import PUBLIC, StatusDesk

pytestmark = pytest.mark.timeout(60)

SVG = "{http://www.w3.org/2000/svg}"
SVG_TYPE = "image/svg+xml; charset=utf-8"


@dataclass(frozen=True)
class Badge:
    status: int
    content_type: str
    headers: CIMultiDictProxy[str]
    svg: bytes
    root: ET.Element

    @property
    def texts(self) -> list[str]:
        """The visible texts: label, then message (shadows are hidden from screen readers)."""
        return [t.text or "" for t in self.root.iter(f"{SVG}text") if t.get("aria-hidden") != "true"]

    @property
    def message_fill(self) -> str:
        """The colour behind the message: the last of the coloured rectangles."""
        rects = [r.get("fill", "") for r in self.root.iter(f"{SVG}rect") if r.get("fill", "").startswith("#")]
        return rects[-1]


@dataclass
class Badged:
    desk: StatusDesk
    base_url: str
    api: ApiClient
    session: aiohttp.ClientSession
    monitor_id: int
    badge_url: str  # as GET /api/v1/monitors/{id} gives it
    paused_badge_url: str

    async def get(self, url: str, **params: str) -> Badge:
        async with self.session.get(url, params=params) as resp:
            body = await resp.read()
            headers = resp.headers
        root = ET.fromstring(body)  # well-formed XML, or the test fails here
        assert root.tag == f"{SVG}svg", root.tag
        return Badge(resp.status, headers.get("Content-Type", ""), headers, body, root)


@pytest.fixture
async def badged(db: asyncpg.Connection, inprocess_api: InProcessFactory) -> AsyncIterator[Badged]:
    served = await inprocess_api()
    key = await api_keys.create_key(db, await ensure_account(db), "tests")
    t0 = await db.fetchval("SELECT now()")
    monitor = await insert_monitor(db, url="http://shop.example/", name="Shop", created_at=t0 - 40 * D)
    hour = t0.replace(minute=0, second=0, microsecond=0)
    await hours_of_checks(db, monitor["id"], [hour - i * H for i in range(1, 6)], checks=10, latency_ms=123)
    await hours_of_checks(db, monitor["id"], [hour - 10 * D], checks=10, latency_ms=1500)
    await add_incident(db, monitor["id"], t0 - 10 * D, t0 - 10 * D + timedelta(seconds=12960))
    await set_state(db, monitor["id"], "up", t0 - 10 * D + timedelta(seconds=12960))
    paused = await insert_monitor(db, url="http://old.example/", name="Old", paused=True)
    await set_state(db, paused["id"], "down", t0 - D)
    async with (
        ApiClient(served.base_url, key=key.key) as api,
        aiohttp.ClientSession(trust_env=False, timeout=aiohttp.ClientTimeout(15)) as session,
    ):
        urls = [(await api.monitor(m["id"]))["badge_url"] for m in (monitor, paused)]
        yield Badged(served.app[PUBLIC], served.base_url, api, session, monitor["id"], *urls)


def token_of(badge_url: str) -> str:
    return badge_url.rsplit("/", 1)[1]


async def test_the_badge_url_holds_an_unguessable_token(badged: Badged, db: asyncpg.Connection) -> None:
    assert badged.badge_url.startswith(f"{badged.base_url}/badge/"), badged.badge_url
    token = token_of(badged.badge_url)
    # 43 characters of URL-safe base64: 32 random bytes (244 bits of two UUIDs), stored as given.
    assert len(token) == 43 and token.replace("-", "").replace("_", "").isalnum(), token
    assert token == await db.fetchval("SELECT badge_token FROM monitors WHERE id = $1", badged.monitor_id)
    assert token != token_of(badged.paused_badge_url)
    # The monitor's id is not a token.
    by_id = await badged.get(f"{badged.base_url}/badge/{badged.monitor_id}/status.svg")
    assert (by_id.status, by_id.texts) == (404, ["status", "not found"])


@pytest.mark.parametrize(
    ("path", "label", "message", "color"),
    [
        ("status.svg", "status", "up", "brightgreen"),
        ("uptime/24h.svg", "uptime 24h", "100%", "brightgreen"),
        ("uptime/7d.svg", "uptime 7d", "100%", "brightgreen"),
        ("uptime/30d.svg", "uptime 30d", "99.5%", "green"),  # 12960 s down of 30 days
        # Of the monitor's 40 days: 100 x (1 - 12960 / 3456000) = 99.625, cut (not rounded).
        ("uptime/90d.svg", "uptime 90d", "99.62%", "green"),
        ("response/24h.svg", "response time 24h", "123 ms", "brightgreen"),
        ("response/30d.svg", "response time 30d", "353 ms", "green"),  # (50 x 123 + 10 x 1500) / 60
    ],
)
async def test_a_badge_says_what_the_data_set_fixes(
    badged: Badged, path: str, label: str, message: str, color: str
) -> None:
    badge = await badged.get(f"{badged.badge_url}/{path}")
    assert (badge.status, badge.content_type) == (200, SVG_TYPE), badge
    assert badge.texts == [label, message], badge.texts
    assert badge.message_fill == COLORS[color], badge.message_fill
    assert badge.root.get("aria-label") == f"{label}: {message}"
    assert badge.headers["Cache-Control"].startswith("public, max-age=")
    assert "ETag" in badge.headers and badge.headers["X-Content-Type-Options"] == "nosniff"
    assert "script" not in badge.headers["Content-Security-Policy"]


async def test_a_paused_monitor_says_paused(badged: Badged) -> None:
    badge = await badged.get(f"{badged.paused_badge_url}/status.svg")
    assert (badge.texts, badge.message_fill) == (["status", "paused"], COLORS["lightgrey"])
    badge = await badged.get(f"{badged.paused_badge_url}/uptime/30d.svg")
    assert (badge.texts, badge.message_fill) == (["uptime 30d", "no data"], COLORS["lightgrey"])


async def test_label_and_style(badged: Badged) -> None:
    hostile = '<b>&"x"</b>'
    badge = await badged.get(f"{badged.badge_url}/status.svg", label=hostile)
    assert badge.texts == [hostile, "up"] and b"<b>" not in badge.svg
    # Invisible or control characters only: the default label.
    badge = await badged.get(f"{badged.badge_url}/status.svg", label="\u202e\x07 ")
    assert badge.texts == ["status", "up"]
    badge = await badged.get(f"{badged.badge_url}/uptime/30d.svg", label="x" * 60)
    assert badge.texts[0] == "x" * 39 + "\u2026"

    flat = await badged.get(f"{badged.badge_url}/status.svg")
    square = await badged.get(f"{badged.badge_url}/status.svg", style="flat-square")
    assert square.status == 200 and square.texts == flat.texts
    assert (
        flat.root.find(f"{SVG}linearGradient") is not None
        and square.root.find(f"{SVG}linearGradient") is None
    )
    assert [g.get("shape-rendering") for g in square.root.iter(f"{SVG}g")].count("crispEdges") == 1
    assert square.headers["ETag"] != flat.headers["ETag"]


async def test_what_is_refused_is_still_an_svg(badged: Badged) -> None:
    bad_style = await badged.get(f"{badged.badge_url}/status.svg", style="plastic")
    assert (bad_style.status, bad_style.content_type) == (400, SVG_TYPE)
    assert bad_style.texts == ["status", "style must be one of flat, flat-square"]
    unknown = "A" * 43
    for url in (
        f"{badged.base_url}/badge/{unknown}/status.svg",
        f"{badged.base_url}/badge/{unknown}/uptime/30d.svg",
        f"{badged.base_url}/badge/{unknown}/response/24h.svg",
    ):
        badge = await badged.get(url)
        assert (badge.status, badge.content_type, badge.texts[-1]) == (404, SVG_TYPE, "not found"), url
        assert badge.headers["Cache-Control"] == "no-cache"
    for window in ("1y", "365d", "24"):
        badge = await badged.get(f"{badged.badge_url}/uptime/{window}.svg")
        assert (badge.status, badge.content_type) == (404, SVG_TYPE), window
        assert badge.texts[-1] == "window must be one of 24h, 7d, 30d, 90d", badge.texts


async def test_a_burst_of_badges_costs_one_build(badged: Badged) -> None:
    before = badged.desk.badges.builds
    started = time.monotonic()
    url = f"{badged.badge_url}/uptime/30d.svg"
    answers = await asyncio.gather(*(badged.get(url) for _ in range(200)))
    assert {a.status for a in answers} == {200} and len({a.svg for a in answers}) == 1
    # A made-up token is remembered as unknown too: one build, whatever the traffic.
    unknown = f"{badged.base_url}/badge/{'B' * 43}/status.svg"
    missing = await asyncio.gather(*(badged.get(unknown) for _ in range(50)))
    assert {m.status for m in missing} == {404}
    elapsed = time.monotonic() - started
    assert elapsed < badged.desk.ttl, f"the burst took {elapsed:.1f}s, more than one period"
    assert badged.desk.badges.builds - before == 2
    # The style and the label change the drawing, not the figures: no build of their own.
    await badged.get(url, style="flat-square", label="ours")
    assert badged.desk.badges.builds - before == 2
