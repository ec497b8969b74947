"""A page-speed monitor in the dashboard, through an in-process api: its form renders the type
(profile, categories, the assertions' list), a bad assertion is an error next to its field, and
the monitor's page shows its latest Lighthouse run: scores, metrics with the bounds asserted on
them, the top failed audits and what the vetting proxy refused."""

from __future__ import annotations

from datetime import timedelta

import aiohttp
import asyncpg
from support.check_rows import add_check
from support.dashboard import base_url_fixture, http_fixture  # noqa: F401
from support.db import insert_monitor
from support.inprocess import InProcessFactory, inprocess_api_fixture  # noqa: F401
from test_dashboard_monitor_forms import field_error, fields_of, filled, owner, the_form

MONITOR = {
    "name": "Home page speed",
    "url": "http://127.0.0.1:9/",
    "assertions.0.metric": "lcp_ms",
    "assertions.0.op": "<=",
    "assertions.0.value": "2500",
    "assertions.0.severity": "degraded",
}


async def test_a_pagespeed_monitor_is_made_in_its_form(
    db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession
) -> None:
    person = await owner(db, base_url, http)
    page = await person.get("/monitors/new?type=pagespeed")
    assert page.status == 200, page.text[:2000]
    fields = fields_of(the_form(page, "/monitors/new"))
    names = dict(fields)
    assert {"url", "profile", "assertions.0.metric", "assertions.0.op", "assertions.0.value"} <= set(names)
    assert names["interval_seconds"] == "300" and names["timeout_seconds"] == "90"
    score_80 = {**MONITOR, "assertions.0.metric": "performance", "assertions.0.value": "80"}
    wrong = await person.post("/monitors/new", filled(fields, score_80))
    assert wrong.status == 422, wrong.text[:2000]
    assert "from 0 to 1" in field_error(wrong, "assertions.0.value")
    made = await person.post("/monitors/new", filled(fields, MONITOR))
    assert made.status == 303, made.text[:2000]
    row = await db.fetchrow(
        "SELECT type, settings FROM monitors WHERE id = $1", int(made.location.rsplit("/", 1)[1])
    )
    assert row["type"] == "pagespeed"


DETAILS = {
    "profile": "mobile",
    "lighthouse_version": "12.2.3",
    "final_url": "https://shop.example/",
    "metrics": {"lcp_ms": 4782.4, "cls": 0.0, "tbt_ms": 1.0, "fcp_ms": 2638.2, "speed_index_ms": 6551.0,
                "ttfb_ms": 7.3},
    "scores": {"performance": 0.73, "accessibility": 0.84, "best_practices": 0.96, "seo": 0.82},
    "assertions": [
        {"assertion": "lcp_ms <= 2500", "ok": False, "severity": "degraded", "value": 4782.4,
         "message": "lcp_ms 4782 > 2500"},
        {"assertion": "performance >= 0.5", "ok": True, "severity": "down", "value": 0.73},
    ],
    "failed_audits": [
        {"id": "largest-contentful-paint", "title": "Largest Contentful Paint", "category": "performance",
         "score": 0.31, "display_value": "4.8 s"},
        {"id": "meta-description", "title": "Document does not have a meta description", "category": "seo",
         "score": 0.0},
    ],
    "refusals": ["blocked: 10.0.0.7 (private-use 10.0.0.0/8) for tracker.internal"],
    "degraded": "lcp_ms 4782 > 2500",
}  # fmt: skip


async def test_the_monitor_page_shows_the_latest_lighthouse_run(
    db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession
) -> None:
    person = await owner(db, base_url, http)
    row = await insert_monitor(db, url="https://shop.example/", name="Shop speed", type="pagespeed",
                               settings={"url": "https://shop.example/"}, interval_seconds=300)  # fmt: skip
    now = await db.fetchval("SELECT now()")
    await add_check(db, row["id"], now - timedelta(minutes=5), ok=True, latency_ms=4782.4, details=DETAILS)
    page = await person.get(f"/monitors/{row['id']}")
    assert page.status == 200, page.text[:2000]
    section = next(e for e in page.tree.find_all("section") if e.attrs.get("id") == "pagespeed")
    text = " ".join(section.text().split())
    assert "Lighthouse 12.2.3 (mobile): degraded: lcp_ms 4782 > 2500" in text
    rows = {
        tr.one("th").text().strip(): [td.text().strip() for td in tr.find_all("td")]
        for tr in section.find_all("tr") if tr.find_all("td")
    }  # fmt: skip
    assert rows["Performance"][0] == "0.73" and "performance >= 0.5: held" in rows["Performance"][1]
    lcp = rows["Largest Contentful Paint lcp_ms"]
    assert lcp[0] == "4.78 s" and "lcp_ms <= 2500: failed (degraded)" in lcp[1]
    assert "Document does not have a meta description" in text and "4.8 s" in text
    assert "blocked: 10.0.0.7" in text
