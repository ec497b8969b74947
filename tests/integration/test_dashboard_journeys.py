"""A browser monitor (a journey) in the dashboard, through an in-process api: its form renders
the steps as rows of the list editor (an action each, with the fields of every action), a
journey typed there is created with its password sealed, a bad step is an error next to its
field with what was typed kept, the edit form shows the password masked and an untouched edit
keeps it; the monitor's page shows the last run's steps with their times and the failing one.
"""

from __future__ import annotations

from datetime import timedelta

import aiohttp
import asyncpg
from support.check_rows import add_check
from support.dashboard import base_url_fixture, http_fixture  # noqa: F401
from support.db import insert_monitor
from support.inprocess import InProcessFactory, inprocess_api_fixture  # noqa: F401
from test_dashboard_monitor_forms import field_error, fields_of, filled, owner, the_form

from monitor.secrets import MASK

PASSWORD = "journey-form-pw-1d9e"
JOURNEY = {
    "name": "Sign in",
    "url": "http://127.0.0.1:9/",
    "steps.0.action": "fill",
    "steps.0.selector": "#password",
    "steps.0.value": PASSWORD,
    "steps.1.action": "click",
    "steps.1.selector": "#login",
}


async def test_a_journey_is_made_and_edited_in_its_form(
    db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession
) -> None:
    person = await owner(db, base_url, http)
    chooser = await person.get("/monitors/new")
    assert "/monitors/new?type=browser" in {a.attrs.get("href") for a in chooser.tree.find_all("a")}
    page = await person.get("/monitors/new?type=browser")
    assert page.status == 200
    fields = fields_of(the_form(page, "/monitors/new"))
    names = dict(fields)
    assert {"url", "steps.0.action", "steps.0.selector", "steps.0.value", "steps.0.text", "steps.0.state",
            "steps.0.contains", "steps.1.action", "viewport.width"} <= set(names)  # fmt: skip
    assert names["interval_seconds"] == "300" and names["timeout_seconds"] == "60"
    form = the_form(page, "/monitors/new")
    actions = next(e for e in form.find_all("select") if e.attrs.get("name") == "steps.0.action")
    assert [o.attrs.get("value") for o in actions.find_all("option")][1:] == [
        "goto", "click", "fill", "wait_for", "expect_text", "expect_selector", "expect_url",
    ]  # fmt: skip

    wrong = await person.post("/monitors/new", filled(fields, {**JOURNEY, "steps.1.selector": ""}))
    assert wrong.status == 422, wrong.text[:2000]
    assert "steps.1.selector" in field_error(wrong, "steps.1.selector")
    kept = dict(fields_of(the_form(wrong, "/monitors/new")))
    assert (kept["steps.0.selector"], kept["steps.1.action"]) == ("#password", "click")
    assert await db.fetchval("SELECT count(*) FROM monitors") == 0

    made = await person.post("/monitors/new", filled(fields, JOURNEY))
    assert made.status == 303, made.text[:2000]
    monitor_id = int(made.location.rsplit("/", 1)[1])
    row = await db.fetchrow("SELECT type, settings::text AS settings FROM monitors WHERE id = $1", monitor_id)
    assert row["type"] == "browser" and PASSWORD not in row["settings"]
    sealed = await db.fetchval("SELECT secrets::text FROM monitor_secrets WHERE monitor_id = $1", monitor_id)
    assert sealed is not None and PASSWORD not in sealed

    action = f"/monitors/{monitor_id}/edit"
    edit = await person.get(action)
    assert PASSWORD not in edit.text
    assert dict(fields_of(the_form(edit, action)))["steps.0.value"] == MASK
    before = await db.fetchval("SELECT secrets::text FROM monitor_secrets WHERE monitor_id = $1", monitor_id)
    untouched = await person.post(action, filled(fields_of(the_form(edit, action))))
    assert untouched.status == 303, untouched.text[:2000]
    after = await db.fetchval("SELECT secrets::text FROM monitor_secrets WHERE monitor_id = $1", monitor_id)
    assert after == before


STEPS = [
    {"name": "open 'https://shop.example/'", "ok": True, "duration_ms": 412.5},
    {"name": "click '#buy'", "ok": False, "duration_ms": 5003.1, "error": "no element matches within 5 s"},
    {"name": "expect_text 'Thank you'", "ok": None},
]


async def test_the_monitor_page_shows_the_last_runs_steps_and_the_failing_one(
    db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession
) -> None:
    person = await owner(db, base_url, http)
    row = await insert_monitor(db, url="https://shop.example/", name="Shop journey", type="browser",
                               settings={"url": "https://shop.example/", "steps": []})  # fmt: skip
    now = await db.fetchval("SELECT now()")
    passed = [{**s, "ok": True, "duration_ms": 300.0} for s in STEPS]
    passed = [{k: v for k, v in s.items() if k != "error"} for s in passed]
    await add_check(db, row["id"], now - timedelta(minutes=10), ok=True, latency_ms=900.0,
                    details={"steps": passed, "final_url": "https://shop.example/thanks"})  # fmt: skip
    failed = {"steps": STEPS, "failed_step": 1, "final_url": "https://shop.example/"}
    await add_check(db, row["id"], now - timedelta(minutes=5), ok=False, latency_ms=5500.0,
                    error="step 1 click '#buy': no element matches within 5 s", details=failed)  # fmt: skip
    page = await person.get(f"/monitors/{row['id']}")
    assert page.status == 200, page.text[:2000]
    section = next(e for e in page.tree.find_all("section") if e.attrs.get("id") == "journey")
    assert "failed at step 1" in section.text()
    rows = [
        [cell.text().strip() for cell in tr.iter() if cell.tag in ("th", "td")]
        for tr in section.one("tbody").find_all("tr")
    ]
    assert rows == [
        ["start", "open 'https://shop.example/'", "passed", "412 ms", ""],
        ["1", "click '#buy'", "failed", "5.00 s", "no element matches within 5 s"],
        ["2", "expect_text 'Thank you'", "not run", "", ""],
    ], rows
    failing = [tr for tr in section.find_all("tr") if tr.attrs.get("id") == "failing-step"]
    assert len(failing) == 1 and "#buy" in failing[0].text()
