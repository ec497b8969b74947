"""Incident posts in the dashboard: a post made on a status page with its first update (a 422
next to its field, values kept), updated until resolved (then no update form, and a forged
update refused), its title and what it affects changed, its public page showing each step,
deleted; a viewer reads without write controls; the status page's post_history_days set from
its form.
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


async def test_a_post_through_the_dashboard(
    db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession
):
    account = await ensure_account(db)
    await make_user(db, "editor@example.com", PASSWORD, account, "editor")
    await make_user(db, "viewer@example.com", PASSWORD, account, "viewer")
    shop = (await insert_monitor(db, url="http://127.0.0.1:9/", name="Shop"))["id"]
    hidden = (await insert_monitor(db, url="http://127.0.0.1:9/", name="Hidden"))["id"]
    editor = await Person.sign_in(base_url, http, "editor@example.com", PASSWORD)
    made = await editor.post(
        "/status-pages/new",
        {"title": "Acme", "slug": "acme", "group_count": "1", "groups.0.name": "Web",
         "groups.0.monitor_ids": str(shop), "post_history_days": "365", "action": "save"},
    )  # fmt: skip
    assert made.status == 303, made.text[:300]
    page_id = await db.fetchval("SELECT id FROM status_pages WHERE slug = 'acme'")
    assert await db.fetchval("SELECT post_history_days FROM status_pages") == 365
    assert f'href="/status-pages/{page_id}/posts"' in (await editor.get(f"/status-pages/{page_id}")).text

    form = {"title": "Checkout down", "impact": "major", "groups": "Web", "monitor_ids": str(hidden),
            "update.state": "investigating", "update.text": "Looking *now*"}  # fmt: skip
    bad = await editor.post(f"/status-pages/{page_id}/posts", form)
    assert bad.status == 422 and str(hidden) in error_of(bad, "monitor_ids")
    assert 'value="Checkout down"' in bad.text and "Looking *now*" in bad.text
    created = await editor.post(f"/status-pages/{page_id}/posts", {**form, "monitor_ids": str(shop)})
    assert created.status == 303, created.text[:300]
    post_id = await db.fetchval("SELECT id FROM incident_posts")
    assert created.location == f"/posts/{post_id}?done=saved"
    shown = await editor.get(f"/posts/{post_id}")
    assert shown.status == 200 and "<em>now</em>" in shown.text
    listed = await editor.get(f"/status-pages/{page_id}/posts")
    assert any(a.attrs.get("href") == f"/posts/{post_id}" for a in listed.tree.find_all("a"))

    empty = await editor.post(f"/posts/{post_id}/updates", {"state": "identified", "text": ""})
    assert empty.status == 422 and error_of(empty, "text")
    assert (
        await editor.post(f"/posts/{post_id}/updates", {"state": "identified", "text": "Found"})
    ).status == 303
    renamed = await editor.post(
        f"/posts/{post_id}", {"title": "Checkout slow", "impact": "minor", "groups": "Web"}
    )
    assert renamed.status == 303
    async with http.get(f"{base_url}/status/acme") as public:
        text = await public.text()
        assert "Checkout slow" in text and "Found" in text and "Ongoing incidents" in text

    viewer = await Person.sign_in(base_url, http, "viewer@example.com", PASSWORD)
    seen = await viewer.get(f"/posts/{post_id}")
    assert seen.status == 200 and "Checkout slow" in seen.text
    assert not any(f.attrs.get("action", "").startswith("/posts") for f in seen.tree.find_all("form"))
    assert (await viewer.post(f"/posts/{post_id}/updates", {"state": "resolved", "text": "x"})).status == 403

    assert (
        await editor.post(f"/posts/{post_id}/updates", {"state": "resolved", "text": "Fixed"})
    ).status == 303
    closed = await editor.get(f"/posts/{post_id}")
    assert not any(f.attrs.get("action") == f"/posts/{post_id}/updates" for f in closed.tree.find_all("form"))
    late = await editor.post(f"/posts/{post_id}/updates", {"state": "monitoring", "text": "again"})
    assert late.status == 409
    gone = await editor.post(f"/posts/{post_id}/delete", {})
    assert gone.status == 303 and gone.location == f"/status-pages/{page_id}/posts?done=deleted"
    assert await db.fetchval("SELECT count(*) FROM incident_posts") == 0
