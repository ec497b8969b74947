"""What a visitor reads at ``/status/<slug>`` and in its JSON, from a known data set, through
the real api (run in-process: ``support.inprocess``) and PostgreSQL.

The data set (``shop``) is rows written straight to the database: hourly and daily rollups and
incidents on whole days in the past, so every figure on a bar is fixed; the test then asks the
API's own ``/uptime`` for the same day and window and expects the page to show exactly that,
formatted as the page formats it (``badges.uptime_badge``: cut to two decimals). The HTML is
read as a tree (``support.markup``), not matched with regular expressions.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest
from support import ensure_account, insert_monitor, rfc3339
from support.inprocess import (  # noqa: F401
    Clients,
    inprocess_api_fixture,
    inprocess_clients_fixture,
)
from support.markup import Element, parse
from support.status_data import D, H, add_incident, day_hours, hours_of_checks, set_state

from monitor.status.badges import uptime_badge
from monitor.status.view import duration_text

pytestmark = pytest.mark.timeout(60)

URL = "http://127.0.0.1:9/"
HOSTILE = '<script>alert(1)</script> & "x"'
TITLE = 'Acme <b>"Status"</b> & Co'
WINDOWS = ("24h", "7d", "30d", "90d")
M = timedelta(minutes=1)


@pytest.fixture
def site(inprocess_clients: Clients) -> Clients:
    """The in-process api and its clients: ``site.api`` (the test account), ``site.other``,
    ``site.public`` (a visitor)."""
    return inprocess_clients


@dataclass(frozen=True)
class Shop:
    """The known data set: see ``shop``."""

    t0: datetime
    midnight: datetime  # today's start (UTC)
    ids: dict[str, int]
    slug: str
    page_id: int
    days: dict[datetime, int]  # the days of ``web`` with checks -> its incidents that day


@pytest.fixture
async def shop(site: Clients, db: asyncpg.Connection) -> Shop:
    """The test account's monitors, all created 100 days ago:

    ``web``  named HOSTILE, up; 24 hours of checks on each of four days in the past: 3 days ago
             (an incident 10:00-10:30), 10 days ago (00:00-01:00 and 12:00-12:07), 40 days ago
             (none), 80 days ago (23:00 to 01:00 the next day, which has its checks too); checks
             in each of the last 20 whole hours and an incident T0-5h..T0-4h.
    ``api``  tag backend, down since T0-10m (an ongoing incident).
    ``db``   tag backend, up, inside a maintenance window (T0-1h..T0+1h) made through the API.
    ``old``  tag backend, paused (its stale state says down).
    ``foreign``, of another account, has the tag backend too: never on the page.
    The page: title TITLE; group "Website" names ``web``, group "Backend" takes the tag.
    """
    t0: datetime = await db.fetchval("SELECT now()")
    midnight = t0.replace(hour=0, minute=0, second=0, microsecond=0)
    created = t0 - 100 * D
    ids = {}
    for key, name, tags, paused in [
        ("web", HOSTILE, ["frontend"], False), ("api", "API", ["backend"], False),
        ("db", "Database", ["backend"], False), ("old", "Old batch", ["backend"], True),
    ]:  # fmt: skip
        row = await insert_monitor(
            db,
            url=f"http://{key}.example/secret-path",
            name=name,
            tags=tags,
            paused=paused,
            created_at=created,
        )
        ids[key] = row["id"]
    await insert_monitor(
        db, url=URL, name="Foreign", tags=["backend"], account_id=await ensure_account(db, "other")
    )

    a, b, c, d = (midnight - n * D for n in (3, 10, 40, 80))
    days = {a: 1, b: 2, c: 0, d: 1, d + D: 1}
    await hours_of_checks(db, ids["web"], [h for day in days for h in day_hours(day)])
    hour = t0.replace(minute=0, second=0, microsecond=0)
    await hours_of_checks(db, ids["web"], [hour - i * H for i in range(1, 21)])
    for began, ended in [
        (a + 10 * H, a + 10.5 * H), (b, b + H), (b + 12 * H, b + 12 * H + 7 * M),
        (d + 23 * H, d + 25 * H), (t0 - 5 * H, t0 - 4 * H),
    ]:  # fmt: skip
        await add_incident(db, ids["web"], began, ended)
    await set_state(db, ids["web"], "up", t0 - 4 * H)
    await add_incident(db, ids["api"], t0 - 10 * M, None)
    await set_state(db, ids["api"], "down", t0 - 10 * M)
    await set_state(db, ids["db"], "up", t0 - D)
    await set_state(db, ids["old"], "down", t0 - 2 * D)
    window = {"name": "Database upgrade", "monitor_ids": [ids["db"]],
              "once": {"from": rfc3339(t0 - H), "to": rfc3339(t0 + H)}}  # fmt: skip
    assert (await site.api.post("/api/v1/maintenance", json=window)).status == 201
    page = await site.api.post(
        "/api/v1/status-pages",
        json={"slug": "shop", "title": TITLE, "groups": [
            {"name": "Website", "monitor_ids": [ids["web"]]}, {"name": "Backend", "tags": ["backend"]}]},
    )  # fmt: skip
    assert page.status == 201, page
    return Shop(t0, midnight, ids, "shop", page.json["id"], days)


@dataclass(frozen=True)
class Shown:
    """A page as read: its tree, its text and its JSON."""

    html: str
    tree: Element
    data: dict[str, Any]

    def monitors(self) -> dict[str, Element]:
        return {m.one("h3", "monitor-name").text(): m for m in self.tree.find_all("li", "monitor")}


async def read_page(site: Clients, slug: str) -> Shown:
    html, data = await site.public.get(f"/status/{slug}"), await site.public.get(f"/status/{slug}.json")
    assert html.status == 200 and data.status == 200, (html, data)
    assert html.headers["Content-Type"] == "text/html; charset=utf-8"
    return Shown(html.text, parse(html.text), data.json)


def keys(value: Any) -> set[str]:
    """Every key of every object in a JSON value."""
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in keys(v)}
    return set()


async def test_names_are_escaped_and_urls_hidden_until_shown(site: Clients, shop: Shop) -> None:
    shown = await read_page(site, shop.slug)
    assert shown.tree.one("h1", "title").text() == TITLE
    assert shown.tree.one("title").text() == f"{TITLE} status"
    assert "<b>" not in shown.html and "<script" not in shown.html
    assert HOSTILE in shown.monitors()
    assert shown.data["title"] == TITLE and shown.data["groups"][0]["monitors"][0]["name"] == HOSTILE
    assert not shown.tree.find_all("p", "target")
    assert "example/secret-path" not in shown.html and "example/secret-path" not in str(shown.data)
    assert all(m["target"] is None for g in shown.data["groups"] for m in g["monitors"])
    # Nothing private: no ids, no check errors.
    assert not {"id", "monitor_id", "account_id", "error", "url"} & keys(shown.data), keys(shown.data)
    assert "10.0.0.7" not in shown.html and "10.0.0.7" not in str(shown.data)

    changed = await site.api.patch(f"/api/v1/status-pages/{shop.page_id}", json={"show_urls": True})
    assert changed.status == 200, changed
    shown = await read_page(site, shop.slug)  # at once: the change dropped the cached page
    targets = {name: m.one("p", "target").text() for name, m in shown.monitors().items()}
    assert (
        targets[HOSTILE] == "http://web.example/secret-path"
        and targets["API"] == "http://api.example/secret-path"
    )
    assert shown.data["groups"][0]["monitors"][0]["target"] == "http://web.example/secret-path"


async def uptime(site: Clients, monitor_id: int, **params: str) -> dict[str, Any]:
    response = await site.api.get(f"/api/v1/monitors/{monitor_id}/uptime", params=params)
    assert response.status == 200, response
    return response.json


async def test_each_days_bar_says_the_apis_uptime_for_that_day(site: Clients, shop: Shop) -> None:
    shown = await read_page(site, shop.slug)
    for monitor in shown.tree.find_all("li", "monitor"):
        assert len(monitor.one("ol", "bars").children_named("li")) == 90
        assert len(monitor.find_all("li", "bar")) == 90
    bars = shown.monitors()[HOSTILE].find_all("li", "bar")
    days = shown.data["groups"][0]["monitors"][0]["days"]
    today = shop.t0.astimezone(UTC).date()
    assert [d["date"] for d in days][-1] == today.isoformat() and len(days) == 90
    tips = {d["date"]: bar.one("span", "tip").text() for d, bar in zip(days, bars, strict=True)}
    classes = {d["date"]: bar.classes for d, bar in zip(days, bars, strict=True)}
    by_date = {d["date"]: d for d in days}

    no_data = shop.midnight - 20 * D
    for day, incidents in [*shop.days.items(), (no_data, 0)]:
        date = day.date().isoformat()
        api = await uptime(site, shop.ids["web"], **{"from": rfc3339(day), "to": rfc3339(day + D)})
        assert by_date[date]["uptime_percent"] == api["uptime_percent"], (date, by_date[date], api)
        assert by_date[date]["downtime_seconds"] == api["downtime_seconds"], (date, by_date[date], api)
        assert by_date[date]["incidents"] == incidents, (date, by_date[date])
        text, _ = uptime_badge(api["uptime_percent"])
        want = f"{date}: {text}"
        if api["uptime_percent"] is not None:
            want += " up"
        if incidents:
            plural = "s" if incidents > 1 else ""
            want += f", {incidents} incident{plural}, {duration_text(api['downtime_seconds'])} down"
        assert tips[date] == want, (date, tips[date], want)
        level = {100.0: "bar-up", None: "bar-nodata"}.get(api["uptime_percent"])
        assert level is None or level in classes[date], (date, classes[date])
    # The figures of the fixture, as a reader would check them by hand.
    a, b = (day.date().isoformat() for day in list(shop.days)[:2])
    assert tips[a] == f"{a}: 97.91% up, 1 incident, 30 min down"  # 1800 s of 86400
    assert tips[b] == f"{b}: 95.34% up, 2 incidents, 1 h 7 min down"  # 4020 s of 86400
    assert "bar-partial" in classes[a] and "tabindex" in bars[[d["date"] for d in days].index(a)].attrs


async def test_the_windows_say_the_apis_uptime(site: Clients, shop: Shop) -> None:
    shown = await read_page(site, shop.slug)
    api = (await uptime(site, shop.ids["web"], window=",".join(WINDOWS)))["windows"]
    data = shown.data["groups"][0]["monitors"][0]["uptime"]
    assert data == {w: api[w]["uptime_percent"] for w in WINDOWS}, (data, api)
    listed = shown.monitors()[HOSTILE].one("dl", "uptime")
    figures = [(dt.text(), dd.text()) for div in listed.children_named("div") for dt, dd in
               [(div.one("dt"), div.one("dd"))]][: len(WINDOWS)]  # fmt: skip
    assert figures == [
        (label, uptime_badge(api[w]["uptime_percent"])[0])
        for label, w in zip(("24 h", "7 days", "30 days", "90 days"), WINDOWS, strict=True)
    ]
    # By hand: 24 h: 3600 s down of 86400; 7 days: 1800 + 3600 s; 30 days: 1800 + 4020 + 3600 s;
    # 90 days: 1800 + 4020 + 7200 + 3600 s.
    assert [f for _, f in figures] == ["95.83%", "99.1%", "99.63%", "99.78%"], figures


async def test_incidents_are_listed_with_their_durations(site: Clients, shop: Shop) -> None:
    shown = await read_page(site, shop.slug)
    listed = shown.data["incidents"]
    assert [(i["monitor"], i["ongoing"]) for i in listed] == [("API", True)] + [(HOSTILE, False)] * 5
    assert [i["duration_seconds"] for i in listed[1:]] == [3600, 1800, 420, 3600, 7200]
    ongoing = listed[0]
    assert 600 <= ongoing["duration_seconds"] < 660, ongoing

    def when(value: str) -> str:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).strftime("%Y-%m-%d %H:%M UTC")

    items = shown.tree.one("section", "incidents").find_all("li")
    assert [li.text() for li in items] == [
        f"API is down: since {when(ongoing['started_at'])}, "
        f"for {duration_text(ongoing['duration_seconds'])} so far",
        *(
            f"{HOSTILE} was down: since {when(i['started_at'])} for {duration_text(i['duration_seconds'])}, "
            f"resolved {when(i['ended_at'])}"
            for i in listed[1:]
        ),
    ]
    outage = {"incident-outage"}
    assert [li.classes for li in items] == [{"ongoing", *outage}] + [{"resolved", *outage}] * 5
    assert {(i["kind"], i["downtime_seconds"] == i["duration_seconds"]) for i in listed} == {("outage", True)}


async def test_groups_by_tag_paused_and_maintenance(site: Clients, shop: Shop) -> None:
    shown = await read_page(site, shop.slug)
    groups = shown.tree.find_all("section", "group")
    assert [g.one("h2").text() for g in groups] == ["Website", "Backend"]
    states = [
        [
            (m.one("h3", "monitor-name").text(), m.one("span", "state").text())
            for m in g.find_all("li", "monitor")
        ]
        for g in groups
    ]
    # The tag's monitors by name; the other account's monitor with the same tag is not one of them.
    assert states == [
        [(HOSTILE, "Up")],
        [("API", "Down"), ("Database", "Maintenance"), ("Old batch", "Paused")],
    ]
    assert [[m["status"] for m in g["monitors"]] for g in shown.data["groups"]] == [
        ["up"],
        ["down", "maintenance", "paused"],
    ]
    assert "Foreign" not in shown.html
    notice = shown.tree.one("section", "maintenance-now").text()
    assert "Maintenance in progress: Database upgrade" in notice and "(Database)" in notice, notice
    assert [w["name"] for w in shown.data["maintenance"] if w["active"]] == ["Database upgrade"]
    # One of three watched monitors down (the paused one says nothing): a partial outage.
    assert shown.data["status"] == "partial"
    assert shown.tree.one("section", "overall").find_all("p")[0].text() == "Partial outage"
