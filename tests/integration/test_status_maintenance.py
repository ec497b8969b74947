"""Outages inside maintenance windows as the public sees them: on the status page, in its JSON,
its Atom feed and the badges, maintenance and not downtime, agreeing with the API's /uptime
(which leaves maintenance out and reports it apart as ``maintenance_seconds``).

Rows written straight to the database (``support.status_data``), windows made through the API,
the api run in-process (``support.inprocess``). ``T0`` is the database's ``now()``.

    monitor  window (through the API)  incident            what it is
    -------  ------------------------  ------------------  --------------------------------------
    batch    T0-3h .. T0-2h            T0-170m .. T0-150m  maintenance (wholly inside the window)
    batch    (the same)                T0-130m .. T0-110m  an outage of 10 min (half of it after)
    shop     T0-10m .. T0+1h (open)    T0-5m .. ongoing    maintenance, ongoing: "Maintenance"
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import pytest
from support import insert_monitor, rfc3339
from support.inprocess import (  # noqa: F401
    Clients,
    inprocess_api_fixture,
    inprocess_clients_fixture,
)
from support.markup import parse
from support.status_data import D, H, add_incident, hours_of_checks, set_state

from monitor.status.badges import uptime_badge

pytestmark = pytest.mark.timeout(60)

M = timedelta(minutes=1)
ATOM = "{http://www.w3.org/2005/Atom}"
SVG = "{http://www.w3.org/2000/svg}"


async def window(site: Clients, name: str, monitor_id: int, start: datetime, end: datetime) -> None:
    body = {"name": name, "monitor_ids": [monitor_id], "once": {"from": rfc3339(start), "to": rfc3339(end)}}
    made = await site.api.post("/api/v1/maintenance", json=body)
    assert made.status == 201, made


async def badge_message(site: Clients, monitor_id: int, path: str) -> str:
    badge_url = (await site.api.get(f"/api/v1/monitors/{monitor_id}")).json["badge_url"]
    answer = await site.public.get(f"{urlsplit(badge_url).path}/{path}")
    assert answer.status == 200, answer
    texts = [
        t.text or "" for t in ET.fromstring(answer.text).iter(f"{SVG}text") if t.get("aria-hidden") != "true"
    ]
    return texts[-1]


@pytest.fixture
async def shown(site: Clients, db: asyncpg.Connection) -> dict[str, Any]:
    """The data set of the module docstring, its page ``ops`` read as HTML, JSON and Atom."""
    t0: datetime = await db.fetchval("SELECT now()")
    ids = {}
    for name in ("batch", "shop"):
        ids[name] = (
            await insert_monitor(db, url=f"http://{name}.example/", name=name, created_at=t0 - 2 * D)
        )["id"]
        hour = t0.replace(minute=0, second=0, microsecond=0)
        await hours_of_checks(db, ids[name], [hour - i * H for i in range(0, 30)])
    await window(site, "Nightly", ids["batch"], t0 - 3 * H, t0 - 2 * H)
    await add_incident(db, ids["batch"], t0 - 170 * M, t0 - 150 * M)
    await add_incident(db, ids["batch"], t0 - 130 * M, t0 - 110 * M)
    await set_state(db, ids["batch"], "up", t0 - 110 * M)
    await window(site, "Upgrade", ids["shop"], t0 - 10 * M, t0 + H)
    await add_incident(db, ids["shop"], t0 - 5 * M, None)
    await set_state(db, ids["shop"], "down", t0 - 5 * M)
    groups = [{"name": "All", "monitor_ids": [ids["batch"], ids["shop"]]}]
    page = await site.api.post("/api/v1/status-pages", json={"slug": "ops", "title": "Ops", "groups": groups})
    assert page.status == 201, page
    html, data, atom = [await site.public.get(f"/status/ops{tail}") for tail in ("", ".json", "/feed.atom")]
    assert (html.status, data.status, atom.status) == (200, 200, 200)
    return {"t0": t0, "ids": ids, "html": html.text, "data": data.json, "atom": atom.text}


@pytest.fixture
def site(inprocess_clients: Clients) -> Clients:
    return inprocess_clients


async def test_an_outage_inside_a_window_is_maintenance_on_the_page_feed_and_json(
    shown: dict[str, Any],
) -> None:
    kinds = sorted((i["monitor"], i["kind"], i["downtime_seconds"]) for i in shown["data"]["incidents"])
    assert kinds == [("batch", "maintenance", 0), ("batch", "outage", 600), ("shop", "maintenance", 0)]

    items = parse(shown["html"]).one("section", "incidents").find_all("li")
    texts = [li.text() for li in items]
    assert texts[0].startswith("shop is in maintenance: since "), texts
    assert texts[1].startswith("batch was down: since ") and texts[1].endswith(
        "(10 min of it during maintenance)"
    )
    assert texts[2].startswith("batch was unavailable during maintenance: since "), texts
    assert not any("shop is down" in t or "batch was down for 20 min" in t for t in texts)
    assert [li.classes for li in items] == [
        {"ongoing", "incident-maintenance"}, {"resolved", "incident-outage"},
        {"resolved", "incident-maintenance"},
    ]  # fmt: skip

    titles = [e.findtext(f"{ATOM}title") for e in ET.fromstring(shown["atom"]).iter(f"{ATOM}entry")]
    assert titles == ["shop is in maintenance", "batch was down for 20 min",
                      "batch was unavailable during maintenance for 20 min"]  # fmt: skip
    monitors = {m["name"]: m for g in shown["data"]["groups"] for m in g["monitors"]}
    assert (monitors["shop"]["status"], monitors["batch"]["status"]) == ("maintenance", "up")
    assert shown["data"]["status"] == "maintenance"
    # A day's bar counts the outage (by its part outside the window), not the maintenance.
    t0 = shown["t0"].astimezone(UTC)
    touched = {(t0 - 120 * M).date().isoformat(), (t0 - 111 * M).date().isoformat()}
    counted = {d["date"]: d["incidents"] for d in monitors["batch"]["days"] if d["incidents"]}
    assert counted == dict.fromkeys(touched, 1), counted
    assert not [d for d in monitors["shop"]["days"] if d["incidents"]]


async def test_badges_and_the_api_agree_with_the_page(site: Clients, shown: dict[str, Any]) -> None:
    ids = shown["ids"]
    assert await badge_message(site, ids["shop"], "status.svg") == "maintenance"
    assert await badge_message(site, ids["batch"], "status.svg") == "up"
    monitors = {m["name"]: m for g in shown["data"]["groups"] for m in g["monitors"]}
    for name in ("batch", "shop"):
        api = (await site.api.get(f"/api/v1/monitors/{ids[name]}/uptime", params={"window": "24h"})).json
        assert monitors[name]["uptime"]["24h"] == api["uptime_percent"], (name, api)
        assert (
            await badge_message(site, ids[name], "uptime/24h.svg") == uptime_badge(api["uptime_percent"])[0]
        )
        # Maintenance is not downtime: left out of the figure, and reported apart.
        assert api["downtime_seconds"] == pytest.approx(600 if name == "batch" else 0, abs=0.01), api
    batch = (await site.api.get(f"/api/v1/monitors/{ids['batch']}/uptime", params={"window": "24h"})).json
    assert batch["maintenance_seconds"] == pytest.approx(3600, abs=0.01), batch
    shop = (await site.api.get(f"/api/v1/monitors/{ids['shop']}/uptime", params={"window": "24h"})).json
    observed_now = datetime.fromisoformat(shop["observed_to"].replace("Z", "+00:00"))
    in_window = (observed_now - (shown["t0"] - 10 * M)).total_seconds()
    assert shop["maintenance_seconds"] == pytest.approx(in_window, abs=1), shop
    assert shop["uptime_percent"] == 100.0, shop
