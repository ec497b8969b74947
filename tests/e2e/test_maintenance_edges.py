"""A maintenance window at its edges, through the real api, scheduler and alerter (issue 26,
point 3): the start notice and the held DOWN go at the window's own instants, not with the
monitor's next check; while the outage is inside the window the status page, its JSON and feed,
and the status badge say maintenance, and once the window is over, down.

The monitor is checked every 60 s, so its next check is far from either edge. Its first check
falls at a tick ``t`` fixed by its id (``stable_offset``); to wait for one a few seconds away
rather than up to a minute, the test makes CANDIDATES paused monitors, keeps the one whose tick
comes first after LEAD seconds, deletes the others, and plans the window around that tick:

    t - BEFORE   the window opens        maintenance.started          (within 1 s)
    t            the first check: HTTP 500, down; the DOWN is held     page, JSON, feed, badge:
                                                                       maintenance
    t + AFTER    the window closes       maintenance.ended, then      (within 1 s, no check
                                         monitor.down with its note    since t)
    after        page, JSON, feed, badge: down

On today's main the notice came with the first check (BEFORE seconds late) and the held DOWN
with the check after the window (up to 60 s late); the page listed the outage as one and the
badge said down inside the window.
"""

from __future__ import annotations

import math
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import pytest
from support import ApiClient, ChannelRequest, FakeChannels, ProcessFactory, TargetServer, wait_for
from support.markup import parse

from monitor.scheduler.ticker import first_tick, stable_offset

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

INTERVAL = 60.0
SLOT = 0.1  # MONITOR_TICK_SLOT_MS's default, in seconds
CANDIDATES = 12
LEAD = 12.0  # from choosing the monitor to its first tick: time to set the rest up
BEFORE, AFTER = 3.0, 8.0  # the window around that tick
EDGE = 1.0  # how late a notice may arrive after its edge
WINDOW_NAME = "Deploy"
ATOM = "{http://www.w3.org/2005/Atom}"
SVG = "{http://www.w3.org/2000/svg}"


def next_tick(monitor_id: int, after: float) -> float:
    offset = stable_offset(monitor_id, INTERVAL, SLOT)
    return offset + first_tick(after, offset, INTERVAL) * INTERVAL


def rfc3339(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat().replace("+00:00", "Z")


class Public:
    """What a visitor reads: the page (HTML, JSON, feed) and the monitor's status badge."""

    def __init__(self, api: ApiClient, visitor: ApiClient, slug: str, badge_path: str) -> None:
        self.api, self.visitor, self.slug, self.badge_path = api, visitor, slug, badge_path

    async def read(self) -> dict[str, Any]:
        html = await self.visitor.get(f"/status/{self.slug}")
        data = await self.visitor.get(f"/status/{self.slug}.json")
        feed = await self.visitor.get(f"/status/{self.slug}/feed.atom")
        badge = await self.visitor.get(f"{self.badge_path}/status.svg")
        assert {r.status for r in (html, data, feed, badge)} == {200}, (html, data, feed, badge)
        svg = ET.fromstring(badge.text)
        texts = [t.text or "" for t in svg.iter(f"{SVG}text") if t.get("aria-hidden") != "true"]
        items = parse(html.text).one("section", "incidents").find_all("li")
        return {
            "state": parse(html.text).one("li", "monitor").one("span", "state").text(),
            "status": data.json["groups"][0]["monitors"][0]["status"],
            "incidents": [(i["kind"], i["ongoing"]) for i in data.json["incidents"]],
            "listed": [li.text() for li in items],
            "feed": [e.findtext(f"{ATOM}title") for e in ET.fromstring(feed.text).iter(f"{ATOM}entry")],
            "badge": texts[-1],
        }


async def test_notices_go_at_the_windows_edges_and_the_outage_inside_is_maintenance(
    db: asyncpg.Connection,
    procs: ProcessFactory,
    api_client: Callable[..., ApiClient],
    target: TargetServer,
    fake_channels: FakeChannels,
) -> None:
    api_proc = await procs.start("api", env={"MONITOR_STATUS_CACHE_SECONDS": "1"})
    scheduler = await procs.start("scheduler")
    await procs.start("alerter")
    api = api_client(api_proc.base_url)
    hooks = fake_channels.webhooks
    made = await api.post("/api/v1/channels", json={"kind": "webhook", "name": "ops",
                                                     "config": {"url": hooks.url_for("ops")}})  # fmt: skip
    assert made.status == 201, made
    hooks.url_for("ops", secret=made.json["config"]["secret"])
    target.set(500, path="/web")

    # The candidate whose first tick comes soonest after LEAD; the others go.
    body = {"url": target.url("/web"), "interval_seconds": INTERVAL, "timeout_seconds": 2, "confirm_after": 1,
            "channel_ids": [made.json["id"]], "paused": True}  # fmt: skip
    ids = []
    for n in range(CANDIDATES):
        created = await api.post("/api/v1/monitors", json={**body, "name": f"web-{n}"})
        assert created.status == 201, created
        ids.append(created.json["id"])
    chosen_at = time.time() + LEAD
    ticks = {monitor_id: next_tick(monitor_id, chosen_at) for monitor_id in ids}
    monitor_id = min(ticks, key=lambda m: ticks[m])
    tick = ticks[monitor_id]
    for other in ids:
        if other != monitor_id:
            assert (await api.delete(f"/api/v1/monitors/{other}")).status == 204
    opens, closes = math.floor(tick - BEFORE), math.ceil(tick + AFTER)

    window = await api.post("/api/v1/maintenance", json={
        "name": WINDOW_NAME, "monitor_ids": [monitor_id], "notify": True,
        "once": {"from": rfc3339(opens), "to": rfc3339(closes)}})  # fmt: skip
    assert window.status == 201, window
    groups = [{"name": "Web", "monitor_ids": [monitor_id]}]
    page = await api.post("/api/v1/status-pages", json={"slug": "edges", "title": "Edges", "groups": groups})
    assert page.status == 201, page
    await scheduler.wait_log("maintenance.loaded", windows=1, timeout=10)
    assert (await api.patch(f"/api/v1/monitors/{monitor_id}", json={"paused": False})).status == 200
    await scheduler.wait_log("monitor.scheduled", monitor_id=monitor_id, timeout=10)
    badge_url = (await api.get(f"/api/v1/monitors/{monitor_id}")).json["badge_url"]
    assert time.time() < opens - EDGE, "the set-up took longer than LEAD allows"

    async def checks() -> int:
        return int(await db.fetchval("SELECT count(*) FROM checks WHERE monitor_id = $1", monitor_id))

    def of_type(kind: str) -> list[ChannelRequest]:
        return [m for m in hooks.messages_to("ops") if m.json["type"] == kind]

    # The window opens: its notice at once, long before the monitor's first check.
    await wait_for(lambda: of_type("maintenance.started"), timeout=closes - time.time(), interval=0.05)
    (started,) = of_type("maintenance.started")
    assert opens <= started.received_at < opens + EDGE, (started.received_at - opens, hooks.describe())
    assert started.json["details"] == {"window": WINDOW_NAME, "until": rfc3339(closes)}, started.json
    assert await checks() == 0

    # The first check fails inside the window: down, held; visitors read maintenance.
    async with ApiClient(api_proc.base_url) as visitor:
        public = Public(api, visitor, "edges", urlsplit(badge_url).path)
        seen: dict[str, Any] = {}

        async def shows_maintenance() -> bool:
            seen.update(await public.read())
            return seen["incidents"] == [("maintenance", True)]

        await wait_for(shows_maintenance, timeout=closes - time.time(), interval=0.2,
                       message=lambda: f"the outage shown as maintenance: {seen}")  # fmt: skip
        assert time.time() < closes, seen
        assert (seen["state"], seen["status"], seen["badge"]) == ("Maintenance", "maintenance", "maintenance")
        assert seen["listed"][0].startswith(f"web-{ids.index(monitor_id)} is in maintenance: since"), seen
        assert seen["feed"] == [f"web-{ids.index(monitor_id)} is in maintenance"], seen
        state = await db.fetchrow(
            "SELECT status, told, held FROM monitor_state WHERE monitor_id = $1", monitor_id
        )
        assert (state["status"], state["told"]) == ("down", "up") and state["held"] is not None, state
        assert not of_type("monitor.down")

        # The window closes: its end and the held DOWN at once, with no check since the first.
        await wait_for(lambda: of_type("monitor.down"), timeout=closes - time.time() + 10, interval=0.05,
                       message=lambda: hooks.describe())  # fmt: skip
        (ended,) = of_type("maintenance.ended")
        (down,) = of_type("monitor.down")
        for notice in (ended, down):
            assert closes <= notice.received_at < closes + EDGE, (
                notice.received_at - closes,
                hooks.describe(),
            )
        assert ended.json["seq"] < down.json["seq"]
        assert down.json["details"]["note"] == f"Alert held while maintenance window '{WINDOW_NAME}' was open"
        assert down.json["cause"]["status_code"] == 500, down.json
        assert await checks() == 1
        assert time.time() < tick + INTERVAL

        # Visitors read down now: the outage runs past the window.
        async def shows_down() -> bool:
            seen.update(await public.read())
            return seen["incidents"] == [("outage", True)]

        await wait_for(shows_down, timeout=10, interval=0.2, message=lambda: f"the outage shown: {seen}")
        assert (seen["state"], seen["status"], seen["badge"]) == ("Down", "down", "down"), seen
        assert seen["feed"] == [f"web-{ids.index(monitor_id)} is down"], seen
    assert [m.json["type"] for m in hooks.messages_to("ops")] == [
        "maintenance.started", "maintenance.ended", "monitor.down"
    ], hooks.describe()  # fmt: skip
    assert not procs.tracebacks()
