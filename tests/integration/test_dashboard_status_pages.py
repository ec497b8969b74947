"""Status pages in the dashboard: made with groups by monitor and by tag, a group added without
saving, the public page linked (and served), a 422 next to its field and a 409 for a slug
taken, values kept; edited, deleted; a viewer reads without write controls and a forged post
is refused.
"""

from __future__ import annotations

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
    assert found, f"no error next to {name}: {[p.text() for p in page.tree.find_all('p', 'error-text')]}"
    return found[0].text()


async def test_create_edit_and_delete_a_status_page(
    db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession
):
    account = await ensure_account(db)
    await make_user(db, "editor@example.com", PASSWORD, account, "editor")
    shop = (await insert_monitor(db, url="http://127.0.0.1:9/", name="Shop"))["id"]
    person = await Person.sign_in(base_url, http, "editor@example.com", PASSWORD)
    form = {"title": "Acme status", "slug": "acme", "group_count": "1", "groups.0.name": "Web",
            "groups.0.monitor_ids": str(shop), "groups.0.tags": "api"}  # fmt: skip

    more = await person.post("/status-pages/new", {**form, "action": "add_group"})
    assert more.status == 200 and 'name="groups.1.name"' in more.text and 'value="Acme status"' in more.text
    assert await db.fetchval("SELECT count(*) FROM status_pages") == 0

    bad = await person.post("/status-pages/new", {**form, "slug": "Not A Slug!", "action": "save"})
    assert bad.status == 422 and error_of(bad, "slug") and 'value="Not A Slug!"' in bad.text
    missing = await person.post(
        "/status-pages/new", {**form, "groups.0.monitor_ids": "999999", "action": "save"}
    )
    assert missing.status == 422 and "999999" in error_of(missing, "groups.0.monitor_ids")

    made = await person.post("/status-pages/new", {**form, "action": "save"})
    assert made.status == 303, made.text[:300]
    page_id = await db.fetchval("SELECT id FROM status_pages WHERE slug = 'acme'")
    assert made.location == f"/status-pages/{page_id}?done=saved"
    listed = await person.get("/status-pages")
    link = next(
        a.attrs["href"] for a in listed.tree.find_all("a") if a.attrs["href"].endswith("/status/acme")
    )
    async with http.get(link) as public:
        assert public.status == 200 and "Acme status" in await public.text()

    taken = await person.post("/status-pages/new", {**form, "title": "Second", "action": "save"})
    assert taken.status == 409 and "slug" in error_of(taken, "slug")

    edit = await person.get(f"/status-pages/{page_id}")
    assert edit.status == 200 and 'value="Web"' in edit.text and 'value="api"' in edit.text
    assert 'name="groups.1.name"' in edit.text  # one empty group to add
    changed = await person.post(
        f"/status-pages/{page_id}",
        {**form, "group_count": "2", "groups.1.name": "Databases", "groups.1.tags": "db",
         "description": "All of it", "action": "save"},
    )  # fmt: skip
    assert changed.status == 303
    row = await db.fetchrow("SELECT description, groups FROM status_pages WHERE id = $1", page_id)
    assert row["description"] == "All of it" and [g["name"] for g in row["groups"]] == ["Web", "Databases"]

    gone = await person.post(f"/status-pages/{page_id}/delete", {})
    assert gone.status == 303 and await db.fetchval("SELECT count(*) FROM status_pages") == 0


async def test_viewer_reads_only(db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession):
    account = await ensure_account(db)
    await make_user(db, "editor@example.com", PASSWORD, account, "editor")
    await make_user(db, "viewer@example.com", PASSWORD, account, "viewer")
    editor = await Person.sign_in(base_url, http, "editor@example.com", PASSWORD)
    made = await editor.post(
        "/status-pages/new",
        {"title": "Acme", "slug": "acme-v", "group_count": "1", "groups.0.name": "All", "groups.0.tags": "x",
         "action": "save"},
    )  # fmt: skip
    assert made.status == 303
    page_id = await db.fetchval("SELECT id FROM status_pages")
    viewer = await Person.sign_in(base_url, http, "viewer@example.com", PASSWORD)
    listed = await viewer.get("/status-pages")
    assert listed.status == 200 and "Acme" in listed.text
    assert not any(a.attrs.get("href") == "/status-pages/new" for a in listed.tree.find_all("a"))
    one = await viewer.get(f"/status-pages/{page_id}")
    assert one.status == 200
    assert not any(f.attrs.get("action", "").startswith("/status-pages") for f in one.tree.find_all("form"))
    assert (await viewer.post(f"/status-pages/{page_id}/delete", {})).status == 403
    assert await db.fetchval("SELECT count(*) FROM status_pages") == 1
