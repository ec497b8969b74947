"""Every write route of the dashboard refuses a viewer and a notify member: a table over the
POST routes ``monitor.dashboard`` registers (so a route added later is in it without a line
here), each posted by a signed-in viewer with a valid CSRF token at a real object of the
account, answers 403 (or 404), never a success or a redirect; and nothing changed. So does
the owner of another account at this account's objects (404: ids of others are not found).

The routes that are the person's own (signing in and out, the account they work in, the
theme, their profile) and the first visit's setup are left out: they need no role.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import aiohttp
import asyncpg
import pytest
from aiohttp import web
from support import ensure_account, insert_monitor, rfc3339
from support.dashboard import Person
from support.inprocess import InProcessFactory, inprocess_api_fixture  # noqa: F401
from support.people import make_user
from support.status_data import add_incident

from monitor.dashboard import routes
from monitor.domain import channels, keys, maintenance, posts, status_pages
from monitor.domain.context import Actor, Deps
from monitor.models import MonitorSpec
from monitor.visual import VisualSettings
from monitor.visual.store import ScreenshotStore
from monitor.web.keys import DEPS

PASSWORD = "Dashboard-Roles-9c2d5e"
MONITORS = "SELECT md5(string_agg(t::text, ',')) FROM (SELECT * FROM monitors ORDER BY id) t"
# A 1x1 white PNG: a screenshot for the routes that name one.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108020000009077"
    "53de0000000c4944415478da63f8ffff3f0005fe02fea7d6a4c80000000049454e44ae426082"
)
OWN = re.compile(r"^/(signin|signout|account|theme|setup|profile)(/|$)")


def write_routes() -> list[str]:
    """The dashboard's POST routes, as their path templates."""
    app = web.Application()
    for area in routes.AREAS:
        area.add_routes(app.router)
    found = []
    for route in app.router.routes():
        if route.method != "POST":
            continue
        info = route.resource.get_info() if route.resource else {}
        path = info.get("formatter") or info.get("path") or ""
        if not OWN.match(path):
            found.append(path)
    return sorted(set(found))


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


def test_the_table_covers_every_area() -> None:
    paths = write_routes()
    for wanted in ("/monitors/new", "/monitors/bulk", "/channels/new", "/keys", "/maintenance/new",
                   "/members/invite", "/status-pages/new",
                   "/monitors/{id}/incidents/{incident_id}/acknowledge",
                   "/monitors/{id}/screenshots/{sid}/baseline",
                   "/monitors/{id}/screenshots/masks"):  # fmt: skip
        assert wanted in paths, paths


@pytest.mark.parametrize("role", ["viewer", "notify", "stranger"])
async def test_every_write_route_refuses_a_reader(
    role: str, db: asyncpg.Connection, inprocess_api: InProcessFactory, http: aiohttp.ClientSession
) -> None:
    served = await inprocess_api()
    deps: Deps = served.app[DEPS]
    account = await ensure_account(db)
    owner_id = await make_user(db, "owner@example.com", PASSWORD, account, "owner")
    # a stranger: the owner of another account, at this account's objects (the routes with ids)
    theirs = await ensure_account(db, "theirs") if role == "stranger" else account
    await make_user(db, "reader@example.com", PASSWORD, theirs, "owner" if role == "stranger" else role)
    owner = Actor(account, "owner", user_id=owner_id)
    monitor = await insert_monitor(db, url="http://127.0.0.1:9/", name="Shop")
    now = datetime.now(UTC)
    await add_incident(db, monitor["id"], now - timedelta(minutes=5), None)
    incident = await db.fetchval("SELECT id FROM incidents WHERE monitor_id = $1", monitor["id"])
    channel = await channels.create(
        deps, owner, {"kind": "webhook", "name": "hook", "config": {"url": "https://hooks.example.test/x"}}
    )
    key = await keys.create(deps, owner, {"name": "ci"})
    window = await maintenance.create(deps, owner, {
        "name": "w", "monitor_ids": [monitor["id"]],
        "once": {"from": rfc3339(now + timedelta(hours=1)), "to": rfc3339(now + timedelta(hours=2))},
    })  # fmt: skip
    groups = [{"name": "Web", "monitor_ids": [monitor["id"]]}]
    page = await status_pages.create(
        deps, owner, {"slug": "ops", "title": "Ops", "groups": groups}, base="http://127.0.0.1"
    )
    post = await posts.create(
        deps,
        owner,
        page["id"],
        {"title": "p", "update": {"state": "investigating", "text": "t"}},
        base="http://127.0.0.1",
    )
    shot = await ScreenshotStore(deps.pool).keep(
        MonitorSpec.from_row(monitor), PNG, at=now, failed=False, visual=VisualSettings(compare=True)
    )
    ids = {
        "id": monitor["id"], "incident_id": incident, "channel_id": channel["id"], "key_id": key["id"],
        "window_id": window["id"], "page_id": page["id"], "user_id": owner_id, "sid": shot["id"],
        "post_id": post["id"],
    }  # fmt: skip
    before = await db.fetchval(MONITORS)

    reader = await Person.sign_in(served.base_url, http, "reader@example.com", PASSWORD)
    assert reader.csrf
    form = {"name": "Taken", "kind": "webhook", "type": "http", "url": "http://127.0.0.1:9/",
            "email": "x@example.com", "role": "owner", "note": "mine now", "slug": "taken",
            "title": "Taken", "config.url": "https://hooks.example.test/y",
            "monitor_id": str(monitor["id"]), "id": str(monitor["id"]), "action": "delete",
            "confirm": "yes"}  # fmt: skip
    answers = {}
    for template in write_routes():
        if role == "stranger" and "{" not in template and template != "/monitors/bulk":
            continue
        path = re.sub(r"\{(\w+)\}", lambda m: str(ids[m.group(1)]), template)
        answer = await reader.post(path, form)
        answers[template] = answer.status
    wrong = {path: status for path, status in answers.items() if status not in (403, 404)}
    assert not wrong, wrong

    after = await db.fetchval(MONITORS)
    assert after == before
    assert await db.fetchval("SELECT count(*) FROM channels WHERE account_id = $1", account) == 1
    assert await db.fetchval("SELECT count(*) FROM status_pages WHERE account_id = $1", account) == 1
    assert await db.fetchval("SELECT role FROM memberships WHERE user_id = $1", owner_id) == "owner"
    assert await db.fetchval("SELECT count(*) FROM screenshots WHERE accepted_at IS NOT NULL") == 0
    assert await db.fetchval("SELECT masks FROM screenshots WHERE role = 'baseline'") == []


def all_routes() -> list[tuple[str, str]]:
    """(method, path template) of every dashboard route with an id in its path."""
    app = web.Application()
    for area in routes.AREAS:
        area.add_routes(app.router)
    found = set()
    for route in app.router.routes():
        info = route.resource.get_info() if route.resource else {}
        path = info.get("formatter") or ""
        if "{" in path and route.method in ("GET", "POST"):
            found.add((route.method, path))
    return sorted(found)


async def test_an_id_out_of_range_or_not_a_number_is_not_found(
    db: asyncpg.Connection, inprocess_api: InProcessFactory, http: aiohttp.ClientSession
) -> None:
    """An id no row can have (past a bigint, not digits) is a 404 page on every route, never a
    500 from the database."""
    served = await inprocess_api()
    account = await ensure_account(db)
    await make_user(db, "owner@example.com", PASSWORD, account, "owner")
    person = await Person.sign_in(served.base_url, http, "owner@example.com", PASSWORD)
    answers = {}
    for method, template in all_routes():
        for wrong in ("99999999999999999999", "9223372036854775808", "0", "12x", "9" * 3000):
            path = re.sub(r"\{(\w+)\}", wrong, template)
            answer = await (person.get(path) if method == "GET" else person.post(path, {"name": "x"}))
            answers[(method, path)] = answer.status
    bad = {k: v for k, v in answers.items() if v != 404}
    assert not bad, bad
