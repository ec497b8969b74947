"""A site that never answered has no response time, as the real scheduler and api show it.

A monitor of a closed local port (each check a refused connection: failed, yet it took a
millisecond or so, and that duration is stored with the check) is checked every second. Once
a few checks are in, its status page (JSON and HTML), its response-time badge and ``/stats``
all say it has none: null, "none", no sparkline; before, they showed the refusals' few
milliseconds as its response time.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import aiohttp
import pytest
from support import ApiClient, ProcessFactory, free_port, wait_for
from support.markup import parse

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]

DEADLINE = 30.0
SLUG = "never"


async def test_a_site_that_never_answered_shows_no_response_time(
    procs: ProcessFactory, api_client: Callable[[str], ApiClient]
) -> None:
    api_proc = await procs.start("api", env={"MONITOR_STATUS_CACHE_SECONDS": "1"})
    await procs.start("scheduler")
    api = api_client(api_proc.base_url)
    monitor = await api.create_monitor(
        name="Closed", url=f"http://127.0.0.1:{free_port()}/", interval_seconds=1, timeout_seconds=1,
        confirm_after=1,
    )  # fmt: skip
    mid = monitor["id"]

    async def refused_three_times() -> bool:
        checks = (await api.get(f"/api/v1/monitors/{mid}/checks")).json["items"]
        failed = [c for c in checks if not c["ok"] and c["latency_ms"] is not None]
        return len(failed) >= 3

    await wait_for(
        refused_three_times, timeout=DEADLINE, message="three refused checks, with their durations"
    )
    groups = [{"name": "g", "monitor_ids": [mid]}]
    page = await api.post("/api/v1/status-pages", json={"slug": SLUG, "title": "Never", "groups": groups})
    assert page.status == 201, page

    async with aiohttp.ClientSession(trust_env=False) as visitor:

        async def public(path: str) -> str:
            url = path if path.startswith("http") else api_proc.base_url + path
            async with visitor.get(url) as resp:
                assert resp.status == 200, (url, resp.status)
                return await resp.text()

        shown: dict[str, Any] = {}

        async def page_says_down() -> bool:
            shown.update(json.loads(await public(f"/status/{SLUG}.json"))["groups"][0]["monitors"][0])
            return shown["status"] == "down" and shown["uptime"]["24h"] is not None

        await wait_for(page_says_down, timeout=DEADLINE, message="the page shows the monitor down")
        assert shown["response_time"] == {"avg_ms": None, "hours": []}, shown
        item = parse(await public(f"/status/{SLUG}")).one("li", "monitor")
        assert item.one("div", "latency").one("dd").text().strip() == "none"
        assert not item.find_all("svg", "spark")
        badge = parse(await public(monitor["badge_url"] + "/response/24h.svg"))
        assert [t.text() for t in badge.find_all("text") if t.attrs.get("aria-hidden") != "true"][
            -1
        ] == "none"

    stats = await api.get(f"/api/v1/monitors/{mid}/stats", params={"bucket": "1h"})
    assert stats.status == 200, stats
    items = stats.json["items"]
    assert sum(i["checks"] for i in items) >= 3 and all(i["up_share"] == 0.0 for i in items), items
    for i in items:
        assert (i["avg_ms"], i["p50_ms"], i["p95_ms"], i["max_ms"]) == (None,) * 4, i
