"""Maintenance windows in the dashboard: a one-off window on the form's time zone's clock, a
recurring one (RRULE and cron) with the next occurrences previewed before saving (nothing
stored by a preview), a 422 next to its field with the values kept, editing, deleting, and a
viewer who sees no write controls and whose forged post is refused.
"""

from __future__ import annotations

from datetime import UTC, datetime

import aiohttp
import asyncpg
from support import ensure_account
from support.dashboard import Page, Person, base_url_fixture, http_fixture  # noqa: F401
from support.db import insert_monitor
from support.inprocess import InProcessFactory, inprocess_api_fixture  # noqa: F401
from support.people import make_user

PASSWORD = "Dashboard-Pass-4e1b7c"


def error_of(page: Page, name: str) -> str:
    found = [p for p in page.tree.find_all("p", "error-text") if p.attrs.get("id") == f"f-{name}-error"]
    assert found, f"no error next to {name}: {page.text[:600]}"
    return found[0].text()


async def owner(db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession) -> Person:
    account = await ensure_account(db)
    await make_user(db, "owner@example.com", PASSWORD, account, "owner")
    return await Person.sign_in(base_url, http, "owner@example.com", PASSWORD)


async def test_preview_then_save_a_recurring_window(
    db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession
):
    person = await owner(db, base_url, http)
    monitor_id = (await insert_monitor(db, url="http://127.0.0.1:9/", name="Shop"))["id"]
    form = {
        "name": "Sunday patching",
        "kind": "recurring",
        "recurring.timezone": "Europe/Berlin",
        "recurring.rrule": "FREQ=WEEKLY;BYDAY=SU;BYHOUR=2;BYMINUTE=0",
        "recurring.duration_minutes": "90",
        "monitor_ids": str(monitor_id),
        "tags": "db, web",
    }
    blank = await person.get("/maintenance/new")
    assert blank.status == 200 and "Shop" in blank.text
    previewed = await person.post("/maintenance/new", {**form, "action": "preview"})
    assert previewed.status == 200
    spans = previewed.tree.one("section", "preview").find_all("li")
    assert len(spans) == 5 and all("02:00 to" in s.text() and "03:30" in s.text() for s in spans)
    assert 'value="Sunday patching"' in previewed.text and "checked" in previewed.text
    assert await db.fetchval("SELECT count(*) FROM maintenance_windows") == 0

    bad = await person.post(
        "/maintenance/new", {**form, "recurring.rrule": "FREQ=SOMETIMES", "action": "preview"}
    )
    assert bad.status == 422 and "FREQ" in error_of(bad, "recurring.rrule")
    assert 'value="FREQ=SOMETIMES"' in bad.text

    saved = await person.post("/maintenance/new", {**form, "action": "save"})
    assert saved.status == 303, [p.text() for p in saved.tree.find_all("p", "error-text")]
    row = await db.fetchrow("SELECT * FROM maintenance_windows")
    assert saved.location == f"/maintenance/{row['id']}?done=saved"
    assert row["rrule"].startswith("FREQ=WEEKLY") and row["duration_seconds"] == 5400
    assert list(row["monitor_ids"]) == [monitor_id] and list(row["tags"]) == ["db", "web"]

    edit = await person.get(f"/maintenance/{row['id']}")
    assert edit.status == 200 and "FREQ=WEEKLY" in edit.text and 'value="db, web"' in edit.text
    cron = {**form, "recurring.rrule": "", "recurring.cron": "0 3 * * 6", "action": "save"}
    changed = await person.post(f"/maintenance/{row['id']}", cron)
    assert changed.status == 303
    assert await db.fetchval("SELECT cron FROM maintenance_windows WHERE id = $1", row["id"]) == "0 3 * * 6"
    listed = await person.get("/maintenance")
    assert "Sunday patching" in listed.text and "0 3 * * 6" in listed.text

    gone = await person.post(f"/maintenance/{row['id']}/delete", {})
    assert gone.status == 303 and await db.fetchval("SELECT count(*) FROM maintenance_windows") == 0


async def test_a_public_notice_in_the_form(
    db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession
):
    person = await owner(db, base_url, http)
    form = {"name": "Swap", "kind": "once", "recurring.timezone": "UTC", "once.from": "2031-05-01T22:00",
            "once.to": "2031-05-01T23:00", "tags": "db", "action": "save"}  # fmt: skip
    blank = await person.get("/maintenance/new")
    assert 'name="public_text"' in blank.text and 'name="announce_hours"' in blank.text
    too_far = await person.post(
        "/maintenance/new", {**form, "public_text": "Disks.", "announce_hours": "999"}
    )
    assert too_far.status == 422 and "720" in error_of(too_far, "announce_hours")
    assert "Disks." in too_far.text  # the values kept
    saved = await person.post(
        "/maintenance/new", {**form, "public_text": "Disks <b>.", "announce_hours": "48"}
    )
    assert saved.status == 303
    row = await db.fetchrow("SELECT id, public_text, announce_hours FROM maintenance_windows")
    assert (row["public_text"], row["announce_hours"]) == ("Disks <b>.", 48)
    edit = await person.get(f"/maintenance/{row['id']}")
    assert "Disks &lt;b&gt;." in edit.text and 'value="48"' in edit.text and "<b>." not in edit.text
    cleared = await person.post(
        f"/maintenance/{row['id']}", {**form, "public_text": " ", "announce_hours": ""}
    )
    assert cleared.status == 303
    after = await db.fetchrow("SELECT public_text, announce_hours FROM maintenance_windows")
    assert (after["public_text"], after["announce_hours"]) == (None, 24)


async def test_a_one_off_window_on_the_zones_clock(
    db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession
):
    person = await owner(db, base_url, http)
    form = {"name": "Move", "kind": "once", "recurring.timezone": "Europe/Berlin",
            "once.from": "2030-06-01T22:00", "once.to": "2030-06-01T23:30", "tags": "db"}  # fmt: skip
    backwards = await person.post(
        "/maintenance/new", {**form, "once.to": "2030-06-01T21:00", "action": "save"}
    )
    assert backwards.status == 422 and "after" in error_of(backwards, "once.to")
    nothing = await person.post("/maintenance/new", {**form, "tags": "", "action": "save"})
    assert nothing.status == 422 and error_of(nothing, "monitor_ids")
    previewed = await person.post("/maintenance/new", {**form, "action": "preview"})
    first = previewed.tree.one("section", "preview").find_all("li")[0]
    assert first.text().startswith("2030-06-01 22:00 to 2030-06-01 23:30 (Europe/Berlin)")
    saved = await person.post("/maintenance/new", {**form, "action": "save"})
    assert saved.status == 303
    row = await db.fetchrow("SELECT starts_at, ends_at FROM maintenance_windows")
    assert row["starts_at"] == datetime(2030, 6, 1, 20, 0, tzinfo=UTC)  # CEST is UTC+2
    assert row["ends_at"] == datetime(2030, 6, 1, 21, 30, tzinfo=UTC)


async def test_viewer_reads_only(db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession):
    person = await owner(db, base_url, http)
    made = await person.post(
        "/maintenance/new",
        {"name": "Move", "kind": "once", "recurring.timezone": "UTC", "once.from": "2030-06-01T22:00",
         "once.to": "2030-06-01T23:00", "tags": "db", "action": "save"},
    )  # fmt: skip
    assert made.status == 303
    window_id = await db.fetchval("SELECT id FROM maintenance_windows")
    account = await ensure_account(db)
    await make_user(db, "viewer@example.com", PASSWORD, account, "viewer")
    viewer = await Person.sign_in(base_url, http, "viewer@example.com", PASSWORD)
    listed = await viewer.get("/maintenance")
    assert listed.status == 200 and "Move" in listed.text
    assert not any(a.attrs.get("href") == "/maintenance/new" for a in listed.tree.find_all("a"))
    one = await viewer.get(f"/maintenance/{window_id}")
    assert one.status == 200
    assert not any(f.attrs.get("action", "").startswith("/maintenance") for f in one.tree.find_all("form"))
    assert (await viewer.post(f"/maintenance/{window_id}/delete", {})).status == 403
    assert await db.fetchval("SELECT count(*) FROM maintenance_windows") == 1
