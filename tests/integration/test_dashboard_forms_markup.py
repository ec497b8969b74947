"""Every page of the forms' areas (channels, keys, profile, members, maintenance, status pages)
as an owner sees it, with something in each list: well-formed (``support.markup``), each id
once, a label for every field, headings that do not skip a level, and no inline script or style
(the CSP would refuse them).
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator

import aiohttp
import asyncpg
import pytest
from support import ensure_account
from support.dashboard import Page, Person
from support.db import insert_monitor
from support.inprocess import InProcessFactory, inprocess_api_fixture  # noqa: F401
from support.markup import Element
from support.people import make_user

from monitor.channels import REGISTRY

PASSWORD = "Dashboard-Pass-4e1b7c"
FIELDS = ("input", "select", "textarea")


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


def check(path: str, page: Page) -> None:
    assert page.status == 200, (path, page.status)
    tree: Element = page.tree
    ids = [e.attrs["id"] for e in tree.iter() if "id" in e.attrs]
    assert len(ids) == len(set(ids)), (path, sorted({i for i in ids if ids.count(i) > 1}))
    labelled = {label.attrs.get("for") for label in tree.find_all("label")}
    for element in tree.iter():
        if element.tag in FIELDS and element.attrs.get("type") != "hidden":
            assert element.attrs.get("id") in labelled, (path, element.attrs)
        assert "style" not in element.attrs, (path, element.tag)
        if element.tag == "script":
            assert element.attrs.get("src"), (path, "inline script")
    assert not tree.find_all("style"), path
    levels = [int(e.tag[1]) for e in tree.iter() if e.tag in ("h1", "h2", "h3", "h4")]
    assert levels and levels[0] == 1, (path, levels)
    assert all(b - a <= 1 for a, b in itertools.pairwise(levels)), (path, levels)


async def test_every_page_reads_well(
    db: asyncpg.Connection, inprocess_api: InProcessFactory, http: aiohttp.ClientSession
):
    base_url = (await inprocess_api()).base_url
    account = await ensure_account(db)
    await make_user(db, "owner@example.com", PASSWORD, account, "owner")
    await insert_monitor(db, url="http://127.0.0.1:9/", name="Shop")
    person = await Person.sign_in(base_url, http, "owner@example.com", PASSWORD)
    assert (
        await person.post("/channels/new", {"kind": "telegram", "name": "Chat", "config.chat_id": "1"})
    ).status == 303
    assert (await person.post("/keys", {"name": "ci", "role": "viewer"})).status == 200
    window = {"name": "W", "kind": "once", "recurring.timezone": "UTC", "once.from": "2030-01-01T00:00",
              "once.to": "2030-01-01T01:00", "tags": "x", "action": "save"}  # fmt: skip
    assert (await person.post("/maintenance/new", window)).status == 303
    status_page = {"title": "S", "slug": "s-markup", "group_count": "1", "groups.0.name": "G",
                   "groups.0.tags": "x", "action": "save"}  # fmt: skip
    assert (await person.post("/status-pages/new", status_page)).status == 303
    channel = await db.fetchval("SELECT id FROM channels")
    window_id = await db.fetchval("SELECT id FROM maintenance_windows")
    page_id = await db.fetchval("SELECT id FROM status_pages")
    paths = [
        "/channels", "/channels/new", *(f"/channels/new?kind={k}" for k in REGISTRY), f"/channels/{channel}",
        "/keys", "/profile", "/members", "/maintenance", "/maintenance/new", f"/maintenance/{window_id}",
        "/status-pages", "/status-pages/new", f"/status-pages/{page_id}",
    ]  # fmt: skip
    for path in paths:
        check(path, await person.get(path))
    check("/profile/totp", await person.post("/profile/totp", {}))
    check("/keys (made)", await person.post("/keys", {"name": "again", "role": "viewer"}))
    preview = {**window, "action": "preview", "kind": "recurring", "recurring.cron": "0 2 * * *",
               "recurring.duration_minutes": "30"}  # fmt: skip
    check("/maintenance/new (preview)", await person.post("/maintenance/new", preview))
    more = await person.post("/status-pages/new", {**status_page, "action": "add_group"})
    check("/status-pages/new (add group)", more)
