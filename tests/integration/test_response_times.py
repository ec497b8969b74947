"""Response time is the successful checks' only, wherever it is shown: a status page (its JSON,
the HTML's figure and sparkline), a badge and ``/stats``. Check results go in through the
scheduler's own writer (``Writer.flush``: the batch statement that keeps the rollups), and come
out through the real api (in-process), so the whole way a figure travels is tested.

Two monitors, over three whole hours h2 < h1 < h0 (h0 the hour before the current one, so all
three are inside every 24-hour figure):
- ``never``: a site that never answered: its checks fail in a few milliseconds each (a refused
  connection), in h1 and h0. It has no response time: null in the JSON and ``/stats``, "none"
  on the page and its badge, no sparkline.
- ``mixed``: up in h2 (100 ms), down in h1 (refused, 2 ms), then up twice (100, 120 ms) and down
  once (3 ms) in h0. Its response time is that of 100, 100 and 120 ms: 106.67 ms (a badge's
  "107 ms"), hourly 100 and 110 ms; h1 has none. Counting the failures made it 65 ms.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import aiohttp
import asyncpg
import pytest
from support import ApiClient, ensure_account, insert_monitor, rfc3339
from support.inprocess import InProcessFactory, inprocess_api_fixture  # noqa: F401
from support.markup import Element, parse
from support.status_data import H, set_state

from monitor import db as monitor_db
from monitor.domain import keys as api_keys
from monitor.models import CheckResult, MonitorSpec
from monitor.scheduler import writer
from monitor.scheduler.judging import Judged
from monitor.scheduler.state import NOTHING, State
from monitor.scheduler.writer import Writer

pytestmark = pytest.mark.timeout(60)

M = timedelta(minutes=1)
SLUG = "figures"
# (minutes into the hour, ok, latency ms) per hour offset from h0 (0, 1 or 2 hours before it).
CHECKS: dict[str, dict[int, list[tuple[int, bool, float]]]] = {
    "never": {1: [(10, False, 0.4), (40, False, 4.0)], 0: [(10, False, 0.5), (40, False, 3.5)]},
    "mixed": {2: [(20, True, 100.0)], 1: [(20, False, 2.0)], 0: [(5, True, 100.0), (25, True, 120.0),
                                                               (45, False, 3.0)]},
}  # fmt: skip


@dataclass
class Figures:
    api: ApiClient
    visitor: aiohttp.ClientSession
    base_url: str
    ids: dict[str, int]
    badges: dict[str, str]
    h0: datetime

    async def public(self, path: str) -> tuple[int, str]:
        async with self.visitor.get(self.base_url + path) as resp:
            return resp.status, await resp.text()

    async def page_json(self) -> dict[str, dict[str, Any]]:
        status, text = await self.public(f"/status/{SLUG}.json")
        assert status == 200, text
        data = json.loads(text)
        return {m["name"]: m for g in data["groups"] for m in g["monitors"]}

    async def page_html(self) -> dict[str, Element]:
        status, text = await self.public(f"/status/{SLUG}")
        assert status == 200, text
        return {li.one("h3", "monitor-name").text(): li for li in parse(text).find_all("li", "monitor")}

    async def badge(self, name: str) -> str:
        async with self.visitor.get(self.badges[name] + "/response/24h.svg") as resp:
            assert resp.status == 200, resp
            svg = parse(await resp.text())
        texts = [t.text() for t in svg.find_all("text") if t.attrs.get("aria-hidden") != "true"]
        return texts[-1]


def _spec(monitor_id: int) -> MonitorSpec:
    return MonitorSpec(monitor_id, "m", "http", "http://x/", 60.0, 5.0, 2, False)


@pytest.fixture
async def figures(
    db: asyncpg.Connection, migrated: str, inprocess_api: InProcessFactory
) -> AsyncIterator[Figures]:
    served = await inprocess_api()
    key = await api_keys.create_key(db, await ensure_account(db), "tests")
    now: datetime = await db.fetchval("SELECT now()")
    h0 = now.replace(minute=0, second=0, microsecond=0) - H
    pool = await monitor_db.create_pool(migrated, max_size=2, init=writer.prepare_connection)
    async with (
        ApiClient(served.base_url, key=key.key) as api,
        aiohttp.ClientSession(trust_env=False) as visitor,
    ):
        try:
            ids, badges = {}, {}
            for name, hours in CHECKS.items():
                made = await insert_monitor(
                    db, name=name, url=f"https://{name}.example/", interval_seconds=60, created_at=h0 - 5 * H
                )
                ids[name], badges[name] = made["id"], f"{served.base_url}/badge/{made['badge_token']}"
                w = Writer(pool)
                for back, checks in hours.items():
                    for minute, ok, ms in checks:
                        at = h0 - back * H + minute * M
                        code, error = (200, None) if ok else (None, "refused")
                        result = CheckResult(ids[name], at, ok, code, ms, error)
                        w.add(
                            _spec(ids[name]),
                            result,
                            Judged(State("up" if ok else "down", 0, None), NOTHING, error),
                        )
                assert await w.flush()
                await set_state(db, ids[name], "down" if name == "never" else "up", h0)
            groups = [{"name": "All", "monitor_ids": list(ids.values())}]
            page = await api.post(
                "/api/v1/status-pages", json={"slug": SLUG, "title": "Figures", "groups": groups}
            )
            assert page.status == 201, page
            yield Figures(api, visitor, served.base_url, ids, badges, h0)
        finally:
            await pool.close()


async def test_a_site_that_never_answered_has_no_response_time(figures: Figures) -> None:
    shown = (await figures.page_json())["never"]
    assert shown["response_time"] == {"avg_ms": None, "hours": []}, shown
    item = (await figures.page_html())["never"]
    assert item.one("div", "latency").one("dd").text().strip() == "none"
    assert not item.find_all("svg", "spark")
    assert await figures.badge("never") == "none"

    stats = await figures.api.get(
        f"/api/v1/monitors/{figures.ids['never']}/stats",
        params={"bucket": "1h", "from": rfc3339(figures.h0 - 2 * H), "to": rfc3339(figures.h0 + H)},
    )
    assert stats.status == 200, stats
    assert [(i["start"], i["checks"], i["up_share"]) for i in stats.json["items"]] == [
        (rfc3339(figures.h0 - H), 2, 0.0),
        (rfc3339(figures.h0), 2, 0.0),
    ]
    for item in stats.json["items"]:
        assert (item["avg_ms"], item["p50_ms"], item["p95_ms"], item["max_ms"]) == (None,) * 4, item


async def test_figures_are_the_successful_checks_only(figures: Figures) -> None:
    h0 = figures.h0
    shown = (await figures.page_json())["mixed"]
    assert shown["response_time"]["avg_ms"] == pytest.approx(320 / 3)
    # The sparkline's points: the hours with a successful check (h1 had none).
    assert [(h["hour"], h["avg_ms"]) for h in shown["response_time"]["hours"]] == [
        (rfc3339(h0 - 2 * H), 100.0),
        (rfc3339(h0), 110.0),
    ]
    item = (await figures.page_html())["mixed"]
    assert item.one("div", "latency").one("dd").text().split()[:2] == ["107", "ms"]
    assert len(item.find_all("svg", "spark")) == 1
    assert await figures.badge("mixed") == "107 ms"

    stats = await figures.api.get(
        f"/api/v1/monitors/{figures.ids['mixed']}/stats",
        params={"bucket": "1h", "from": rfc3339(h0 - 2 * H), "to": rfc3339(h0 + H)},
    )
    assert stats.status == 200, stats
    got = [
        (i["checks"], i["up_share"], i["avg_ms"], i["p50_ms"], i["p95_ms"], i["max_ms"])
        for i in stats.json["items"]
    ]
    assert got == [
        # 100 in (75, 100]. p50: rank 0.5 -> 75 + 25 x 0.5 = 87.5; p95: 75 + 25 x 0.95 = 98.75.
        (1, 1.0, 100.0, 87.5, 98.75, 100.0),
        (1, 0.0, None, None, None, None),
        # 100 in (75, 100], 120 in (100, 150]. p50: rank 1 -> 75 + 25 x 1/1 = 100.
        # p95: rank 1.9 -> 100 + 50 x 0.9 = 145, capped at the maximum 120.
        (3, pytest.approx(2 / 3), 110.0, 100.0, 120.0, 120.0),
    ]
    # A day's figures are the same successful checks' (h2 to h0 may straddle midnight: the sum).
    days = await figures.api.get(
        f"/api/v1/monitors/{figures.ids['mixed']}/stats",
        params={"bucket": "1d", "from": rfc3339(h0 - 2 * H), "to": rfc3339(h0 + H)},
    )
    assert sum(i["checks"] for i in days.json["items"]) == 5
    assert max(i["max_ms"] for i in days.json["items"] if i["max_ms"] is not None) == 120.0
