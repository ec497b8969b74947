"""A monitor's page through an in-process api: each range of response times (raw checks with
the timing breakdown for the short ones, the rollups for the long ones) as a page and as
``chart.json``, another account's monitor a 404, the 90 days' bars, incidents with their cause
and the **Acknowledge** form for editors only (a viewer's forged post a 403), the latest checks
with their assertions, certificate and DNS answers, paged, and a location's own checks.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import aiohttp
import asyncpg
import pytest
from support import ensure_account
from support.check_rows import add_check
from support.dashboard import Person, base_url_fixture, http_fixture  # noqa: F401
from support.db import insert_monitor
from support.inprocess import InProcessFactory, inprocess_api_fixture  # noqa: F401
from support.people import make_user
from support.status_data import add_incident, hours_of_checks

from monitor.dashboard import render

PASSWORD = "Dashboard-Pass-9c2d71"
H = timedelta(hours=1)
ASSERTIONS = [
    {"assertion": "status is 200", "ok": True},
    {"assertion": 'body contains "Welcome"', "ok": False, "message": 'keyword "Welcome" not found'},
]
CERT = {"not_after": "2027-01-30T09:30:00Z", "days_left": 59.1, "subject": "shop.example", "issuer": "R11"}


async def now_of(db: asyncpg.Connection) -> datetime:
    return await db.fetchval("SELECT now()")


async def shop(db: asyncpg.Connection, **fields: object) -> int:
    """A monitor with an hour of raw checks (one a minute, with timings, the latest failing an
    assertion) and 90 days of hourly rollups."""
    now = await now_of(db)
    created = now - timedelta(days=91)
    row = await insert_monitor(db, url="https://shop.example/", name="Shop", created_at=created, **fields)
    mid = row["id"]
    for i in range(1, 61):
        failing = i == 1
        await add_check(
            db, mid, now - i * timedelta(minutes=1), ok=not failing, latency_ms=150.0 + i,
            error='keyword "Welcome" not found' if failing else None,
            details={"assertions": ASSERTIONS if failing else ASSERTIONS[:1], "certificate": CERT},
        )  # fmt: skip
    start = (now - timedelta(days=90)).replace(minute=0, second=0, microsecond=0)
    await hours_of_checks(db, mid, [start + i * H for i in range(90 * 24)], latency_ms=120.0)
    return mid


async def person(db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession, role: str) -> Person:
    account = await ensure_account(db)
    email = f"{role}@example.com"
    await make_user(db, email, PASSWORD, account, role)
    return await Person.sign_in(base_url, http, email, PASSWORD)


@pytest.mark.parametrize("chosen", ["1h", "24h", "7d", "30d", "90d"])
async def test_the_page_for_each_range(
    db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession, chosen: str
):
    mid = await shop(db, tags=["web"])
    editor = await person(db, base_url, http, "editor")
    page = await editor.get(f"/monitors/{mid}?range={chosen}")
    assert page.status == 200, page.text[:500]
    tree = page.tree
    assert tree.one("h1").text() == "Shop"
    current = [a.text() for a in tree.one("nav", "ranges").find_all("a") if a.attrs.get("aria-current")]
    assert current == [chosen]
    chart = tree.one("div", "chart")
    assert chart.attrs["data-src"] == f"/monitors/{mid}/chart.json?range={chosen}"
    rows = tree.one("details", "figures").one("tbody").find_all("tr")
    assert rows, "the figures of the range, without JavaScript"
    heads = [th.text() for th in tree.one("details", "figures").one("thead").find_all("th")]
    if chosen in ("1h", "24h"):
        assert "DNS" in heads and "TLS" in heads
        assert chart.attrs["data-breakdown"] == "true"
    else:
        assert "DNS" not in heads and "not the timing breakdown" in page.text
    assert tree.one("svg", "spark") is not None
    scripts = [s.attrs.get("src", "") for s in tree.find_all("script")]
    if render.has_asset("vendor/uPlot.iife.min.js"):  # the chart's script only with its library
        assert any(src.startswith("/static/dashboard/chart.js?v=") for src in scripts)
    else:
        assert not any("chart.js" in src for src in scripts)
    assert len(tree.one("ol", "bars").find_all("li")) == 90
    assert any(a.attrs.get("href") == f"/monitors/{mid}/edit" for a in tree.find_all("a"))
    assert "https://shop.example/" in page.text and ">web<" in page.text


async def test_a_range_that_does_not_exist_is_a_400(
    db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession
):
    mid = await shop(db)
    viewer = await person(db, base_url, http, "viewer")
    assert (await viewer.get(f"/monitors/{mid}?range=2y")).status == 400
    answer = await viewer.get(f"/monitors/{mid}/chart.json?range=2y")
    assert answer.status == 400
    assert json.loads(answer.text)["error"]["field"] == "range"


async def test_chart_json_shape_and_another_accounts_monitor(
    db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession
):
    mid = await shop(db)
    other = await insert_monitor(
        db, url="http://127.0.0.1:9/", name="Theirs", account_id=await ensure_account(db, "other")
    )
    viewer = await person(db, base_url, http, "viewer")

    short = await viewer.get(f"/monitors/{mid}/chart.json?range=1h")
    assert short.status == 200 and short.headers["Content-Type"].startswith("application/json")
    got = json.loads(short.text)
    assert got["source"] == "checks" and got["breakdown"] is True and got["bucket_seconds"] == 60
    n = len(got["time"])
    assert 55 <= n <= 61 and all(len(got[k]) == n for k in ("avg_ms", "p95_ms", "min_ms", "checks"))
    assert set(got["phases"]) == {"dns_ms", "connect_ms", "tls_ms", "wait_ms", "transfer_ms"}
    full = [i for i, c in enumerate(got["checks"]) if c and got["avg_ms"][i] is not None]
    i = full[-1]
    assert got["phases"]["dns_ms"][i] == 5.0 and got["phases"]["tls_ms"][i] == 20.0
    assert got["phases"]["wait_ms"][i] == pytest.approx(80.0 - 35.0)
    parts = sum(got["phases"][p][i] for p in got["phases"])
    assert parts == pytest.approx(got["avg_ms"][i])
    assert got["time"] == sorted(got["time"])

    long = json.loads((await viewer.get(f"/monitors/{mid}/chart.json?range=90d")).text)
    assert long["source"] == "rollups" and long["breakdown"] is False and long["phases"] is None
    assert 89 <= len(long["time"]) <= 91 and long["avg_ms"][-2] == pytest.approx(120.0)

    assert (await viewer.get(f"/monitors/{other['id']}")).status == 404
    theirs = await viewer.get(f"/monitors/{other['id']}/chart.json")
    assert theirs.status == 404 and json.loads(theirs.text)["error"]["code"] == "not_found"
    assert (await Person(base_url, http).get(f"/monitors/{mid}/chart.json")).status == 303
    async with http.get(base_url + "/static/dashboard/chart.js") as script:
        assert script.status == 200 and script.headers["Content-Type"].startswith("text/javascript")


async def test_incidents_with_cause_and_the_acknowledge_form_for_editors_only(
    db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession
):
    mid = await shop(db)
    now = await now_of(db)
    await add_incident(db, mid, now - timedelta(days=3), now - timedelta(days=3) + timedelta(minutes=42))
    await add_incident(db, mid, now - timedelta(minutes=10), None)
    editor = await person(db, base_url, http, "editor")
    page = await editor.get(f"/monitors/{mid}")
    incidents = page.tree.one("ul", "incidents").find_all("li")
    assert len(incidents) == 2
    ongoing, ended = incidents
    assert "ongoing" in ongoing.classes and "HTTP 500: HTTP 500 from 10.0.0.7" in ongoing.text()
    assert "42 min" in ended.text()
    forms = [f for f in page.tree.find_all("form") if "ack-form" in f.classes]
    assert len(forms) == 1 and forms[0].attrs["action"].endswith("/acknowledge")
    assert forms[0].one("label").text().startswith("Note")
    bars = page.tree.one("ol", "bars").find_all("li")
    assert "1 incident" in bars[-1].text() and "bar-up" not in bars[-1].classes  # today's, open
    assert sum("incident" in b.text() for b in bars) >= 2 and "bar-up" in bars[-10].classes


async def test_acknowledging_and_a_viewers_forged_post(
    db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession
):
    mid = await shop(db)
    now = await now_of(db)
    await add_incident(db, mid, now - timedelta(minutes=10), None)
    incident = await db.fetchval("SELECT id FROM incidents WHERE monitor_id = $1", mid)
    action = f"/monitors/{mid}/incidents/{incident}/acknowledge"

    viewer = await person(db, base_url, http, "viewer")
    page = await viewer.get(f"/monitors/{mid}")
    assert not [f for f in page.tree.find_all("form") if "ack-form" in f.classes]
    assert "an editor can acknowledge it" in page.text
    assert (await viewer.post(action, {"note": "mine now"})).status == 403

    editor = await person(db, base_url, http, "editor")
    await editor.get(f"/monitors/{mid}")
    refused = await editor.post(action, {"note": "x" * 281})
    assert refused.status == 422 and 'aria-invalid="true"' in refused.text
    done = await editor.post(action, {"note": "on it"})
    assert done.status == 303 and done.location == f"/monitors/{mid}#incidents"
    page = await editor.get(f"/monitors/{mid}")
    acked = page.tree.one("dd", "acked").text()
    assert "editor@example.com" in acked and "on it" in acked
    assert not [f for f in page.tree.find_all("form") if "ack-form" in f.classes]
    again = await editor.post(action, {"note": ""})
    assert again.status == 409 and "already acknowledged" in again.tree.one("p", "error-text").text()


async def test_latest_checks_with_their_details_paged(
    db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession
):
    mid = await shop(db)
    now = await now_of(db)
    await add_check(
        db, mid, now - timedelta(seconds=5), ok=True, latency_ms=12.0, status_code=None,
        timings={"dns_ms": 3.0}, details={"answers": ["192.0.2.10", "192.0.2.11"], "answers_total": 2},
    )  # fmt: skip
    viewer = await person(db, base_url, http, "viewer")
    page = await viewer.get(f"/monitors/{mid}")
    checks = page.tree.one("ol", "checks").find_all("li")
    checks = [c for c in checks if "check" in c.classes]
    assert len(checks) == 20
    dns, failing = checks[0], checks[1]
    assert "192.0.2.10" in dns.text() and "DNS answers" in dns.text()
    outcomes = failing.one("table", "assertions").one("tbody").find_all("tr")
    assert [("held" in r.text(), "failed" in r.text()) for r in outcomes] == [(True, False), (False, True)]
    assert 'keyword "Welcome" not found' in failing.text()
    assert "R11" in failing.text() and "shop.example" in failing.text()
    assert not any(a.attrs.get("href") == f"/monitors/{mid}/edit" for a in page.tree.find_all("a"))
    older = next(a.attrs["href"] for a in page.tree.find_all("a") if a.text() == "Older checks")
    second = await viewer.get(older.replace("&amp;", "&"))
    assert second.status == 200
    later = [c for c in second.tree.one("ol", "checks").find_all("li") if "check" in c.classes]
    assert len(later) == 20 and "Newest checks" in second.text
    first_times = {c.one("time").attrs["datetime"] for c in checks}
    assert not first_times & {c.one("time").attrs["datetime"] for c in later}


async def test_badges_and_a_locations_checks(
    db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession
):
    row = await insert_monitor(db, url="https://shop.example/", name="Shop", locations=["eu", "us"], quorum=1)
    mid = row["id"]
    now = await now_of(db)
    await add_check(db, mid, now - timedelta(seconds=30), checked_from="eu")
    await add_check(db, mid, now - timedelta(seconds=20), checked_from="us", ok=False, error="timed out")
    viewer = await person(db, base_url, http, "viewer")
    page = await viewer.get(f"/monitors/{mid}")
    assert page.status == 200
    section = next(
        s for s in page.tree.find_all("section") if s.attrs.get("aria-labelledby") == "locations-heading"
    )
    assert [th.text().split()[0] for th in section.one("tbody").find_all("th")] == ["eu", "us"]
    eu = await viewer.get(f"/monitors/{mid}?location=eu")
    checks = [c for c in eu.tree.one("ol", "checks").find_all("li") if "check" in c.classes]
    assert len(checks) == 1 and "from eu" in checks[0].text()
    inputs = [i for i in page.tree.find_all("input") if i.attrs.get("id", "").startswith("badge-")]
    assert inputs and all(i.attrs.get("readonly") is not None for i in inputs)
    token = row["badge_token"]
    assert any(f"{base_url}/badge/{token}/status.svg" in i.attrs["value"] for i in inputs)
    buttons = [b for b in page.tree.find_all("button") if b.attrs.get("data-copy")]
    assert {b.attrs["data-copy"] for b in buttons} == {i.attrs["id"] for i in inputs}
