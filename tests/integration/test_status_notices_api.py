"""Maintenance notices through the API to the public page: a window's ``public_text`` and
``announce_hours`` made, read, changed and refused; and the page (HTML, JSON, Atom) announcing
the windows over its monitors (by id or tag) within their lead and while they run, none of a
monitor it does not show, none without a text beyond the name-only AHEAD, seen at once after a
change (the page's cache is cleared by the api that made it).

The api runs in-process (``support.inprocess``); ``T0`` is the database's ``now()``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import datetime, timedelta
from typing import Any

import asyncpg
import pytest
from support import insert_monitor, rfc3339
from support.inprocess import (  # noqa: F401
    Clients,
    inprocess_api_fixture,
    inprocess_clients_fixture,
)

pytestmark = pytest.mark.timeout(60)

H = timedelta(hours=1)
ATOM = "{http://www.w3.org/2005/Atom}"
HOSTILE = "<script>alert(1)</script> [x](javascript:alert(2)) <img src=x onerror=alert(3)> **disk swap**"


@pytest.fixture
def site(inprocess_clients: Clients) -> Clients:
    return inprocess_clients


async def make(site: Clients, name: str, start: datetime, end: datetime, **fields: Any) -> dict[str, Any]:
    body = {"name": name, "once": {"from": rfc3339(start), "to": rfc3339(end)}, **fields}
    made = await site.api.post("/api/v1/maintenance", json=body)
    assert made.status == 201, made
    window: dict[str, Any] = made.json
    return window


async def read(site: Clients) -> tuple[str, dict[str, Any], ET.Element]:
    answers = [await site.public.get(f"/status/notices{tail}") for tail in ("", ".json", "/feed.atom")]
    assert [a.status for a in answers] == [200, 200, 200]
    return answers[0].text, answers[1].json, ET.fromstring(answers[2].text)


@pytest.fixture
async def page(site: Clients, db: asyncpg.Connection) -> dict[str, Any]:
    """A page showing ``web`` by id and ``db`` by its tag; ``other`` is not on it."""
    t0: datetime = await db.fetchval("SELECT now()")
    ids = {}
    for name, tags in (("web", []), ("db", ["storage"]), ("other", ["elsewhere"])):
        ids[name] = (await insert_monitor(db, url=f"http://{name}.example/", name=name, tags=tags))["id"]
    groups = [{"name": "All", "monitor_ids": [ids["web"]], "tags": ["storage"]}]
    made = await site.api.post(
        "/api/v1/status-pages", json={"slug": "notices", "title": "N", "groups": groups}
    )
    assert made.status == 201, made
    await read(site)  # built and cached before any window: what follows must clear it
    return {"t0": t0, "ids": ids}


async def test_a_window_with_a_notice_through_the_api(site: Clients, page: dict[str, Any]) -> None:
    t0, ids = page["t0"], page["ids"]
    made = await make(site, "Swap", t0 + 2 * H, t0 + 3 * H, monitor_ids=[ids["web"]], public_text="Disks.")
    assert (made["public_text"], made["announce_hours"]) == ("Disks.", 24)
    path = f"/api/v1/maintenance/{made['id']}"
    changed = await site.api.patch(path, json={"announce_hours": 1, "public_text": "  "})
    assert changed.status == 200, changed
    assert (changed.json["public_text"], changed.json["announce_hours"]) == (None, 1)
    for body, field in [
        ({"announce_hours": 721}, "announce_hours"),
        ({"announce_hours": -1}, "announce_hours"),
        ({"announce_hours": None}, "announce_hours"),
        ({"announce_hours": "24"}, "announce_hours"),
        ({"public_text": "x" * 2001}, "public_text"),
        ({"public_text": 5}, "public_text"),
    ]:
        refused = await site.api.patch(path, json=body)
        assert refused.status == 422, (body, refused)
        assert refused.json["error"]["field"] == field, body


async def test_the_page_announces_what_covers_its_monitors(site: Clients, page: dict[str, Any]) -> None:
    t0, ids = page["t0"], page["ids"]
    await make(site, "Swap", t0 + 2 * H, t0 + 3 * H, monitor_ids=[ids["web"]], public_text=HOSTILE)
    await make(site, "Storage", t0 - H, t0 + H, tags=["storage"], public_text="Replicas *rebuild*.")
    await make(site, "Later", t0 + 30 * H, t0 + 31 * H, monitor_ids=[ids["web"]], public_text="Too far.")
    await make(
        site,
        "Far",
        t0 + 100 * H,
        t0 + 101 * H,
        monitor_ids=[ids["web"]],
        public_text="Far.",
        announce_hours=120,
    )
    await make(site, "Elsewhere", t0 + H, t0 + 2 * H, monitor_ids=[ids["other"]], public_text="Not here.")
    await make(site, "Ended", t0 - 3 * H, t0 - 2 * H, monitor_ids=[ids["web"]], public_text="Gone.")
    html, data, feed = await read(site)

    listed = [(m["name"], m["active"], m["monitors"]) for m in data["maintenance"]]
    assert listed == [("Storage", True, ["db"]), ("Swap", False, ["web"]), ("Far", False, ["web"])]
    swap = data["maintenance"][1]
    assert (swap["text"], swap["from"]) == (HOSTILE, rfc3339(t0 + 2 * H))
    assert "<script" not in swap["html"] and "<strong>disk swap</strong>" in swap["html"]
    assert not {"id", "monitor_ids"} & set(swap)

    assert "Maintenance in progress: Storage" in html and "<em>rebuild</em>" in html
    assert "Scheduled maintenance" in html and ("(in 1 h)" in html or "(in 2 h)" in html)
    for absent in ("<script", "<img", 'href="javascript:', "Too far", "Not here", "Gone."):
        assert absent not in html
    titles = [e.findtext(f"{ATOM}title") for e in feed.iter(f"{ATOM}entry")]
    assert titles == [
        "Maintenance in progress: Storage",
        "Scheduled maintenance: Swap",
        "Scheduled maintenance: Far",
    ]
    content = next(iter(feed.iter(f"{ATOM}entry"))).findtext(f"{ATOM}content") or ""
    assert "<em>rebuild</em>" in content  # the HTML, once the XML is read


async def test_a_change_is_on_the_page_at_once(site: Clients, page: dict[str, Any]) -> None:
    t0, ids = page["t0"], page["ids"]
    made = await make(site, "Swap", t0 + 30 * H, t0 + 31 * H, monitor_ids=[ids["web"]], public_text="Disks.")
    assert (await read(site))[1]["maintenance"] == []
    path = f"/api/v1/maintenance/{made['id']}"
    assert (await site.api.patch(path, json={"announce_hours": 48})).status == 200
    assert [m["text"] for m in (await read(site))[1]["maintenance"]] == ["Disks."]
    assert (await site.api.delete(path)).status == 204
    assert (await read(site))[1]["maintenance"] == []


async def test_a_window_without_text_is_named_only(site: Clients, page: dict[str, Any]) -> None:
    t0, ids = page["t0"], page["ids"]
    await make(site, "Quiet", t0 + 30 * H, t0 + 31 * H, monitor_ids=[ids["web"]])
    _, data, feed = await read(site)
    assert [(m["name"], m["text"], m["html"]) for m in data["maintenance"]] == [("Quiet", None, None)]
    assert list(feed.iter(f"{ATOM}entry")) == []


async def test_a_recurring_window_shows_its_next_occurrence(site: Clients, page: dict[str, Any]) -> None:
    body = {"name": "Hourly", "tags": ["storage"], "public_text": "Rotating logs.", "announce_hours": 2,
            "recurring": {"cron": "0 * * * *", "duration_minutes": 1}}  # fmt: skip
    made = await site.api.post("/api/v1/maintenance", json=body)
    assert made.status == 201, made
    window = made.json
    _, data, feed = await read(site)
    (shown,) = data["maintenance"]
    # The page's occurrence is the API's, the one open now or else the next (a minute an hour,
    # so it may have opened or closed between the two reads: then it is the one after).
    occurrence = window["current"] if window["active_now"] else window["next"]
    if shown["active"] == window["active_now"]:
        assert (shown["from"], shown["to"]) == (occurrence["from"], occurrence["to"])
    assert (shown["text"], shown["monitors"]) == ("Rotating logs.", ["db"])
    assert len(list(feed.iter(f"{ATOM}entry"))) == 1
