"""The overview, through an in-process api: search (name, URL, any case), each filter (state,
tag, type, location), each sort with keyset pages, the sparkline from the rollups, the list's
part for htmx and its ETag (304 when nothing moved, a new one when a state changes), bulk
pause, resume and delete behind the confirmation page (audited per monitor), a viewer's forged
bulk post refused, and another account's monitors neither shown nor touched.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import aiohttp
import asyncpg
import pytest
from support import ensure_account
from support.dashboard import Page, Person, base_url_fixture, http_fixture  # noqa: F401
from support.db import insert_monitor
from support.inprocess import InProcessFactory, inprocess_api_fixture  # noqa: F401
from support.markup import Element
from support.people import make_user

from monitor.dashboard import pages_overview
from monitor.domain import keys as api_keys

PASSWORD = "Overview-Pass-7c2e91"


def header(page: Page, name: str) -> str:
    return {k.lower(): v for k, v in page.headers.items()}[name.lower()]


def names(page: Page) -> list[str]:
    """The monitors the page names, in its order (the guided start's links aside)."""

    def links(element: Element) -> list[Element]:
        if "first-steps" in element.classes:
            return []
        found = [element] if element.tag == "a" else []
        return found + [a for c in element.children if isinstance(c, Element) for a in links(c)]

    return [
        a.text() for a in links(page.tree) if a.attrs.get("href", "").startswith("/monitors/") and
        a.attrs.get("href", "") not in ("/monitors/new", "/monitors/bulk")
    ]  # fmt: skip


async def fleet(db: asyncpg.Connection) -> tuple[int, int, dict[str, int]]:
    account = await ensure_account(db)
    other = await ensure_account(db, "other")
    ids = {}
    for name, url, kind, tags, locations, status in [
        ("Shop", "https://shop.example.com/", "http", ["prod"], ["eu"], "up"),
        ("Blog", "https://blog.example.org/", "http", ["prod", "web"], [], "down"),
        ("Mail port", "tcp://mail.example.net:25", "tcp", ["infra"], ["us"], "degraded"),
        ("api", "https://API.example.com/health", "http", [], [], None),
    ]:
        row = await insert_monitor(db, url=url, name=name, type=kind, tags=tags, locations=locations)
        ids[name] = row["id"]
        if status:
            await db.execute(
                "UPDATE monitor_state SET status = $2, last_check_at = now() - make_interval(secs => $3), "
                "changed_at = now() WHERE monitor_id = $1",
                row["id"],
                status,
                float(len(ids)),
            )
    ids["Not mine"] = (
        await insert_monitor(db, url="https://shop.other/", name="Not mine", account_id=other)
    )["id"]
    return account, other, ids


async def test_search_filters_and_sorts(db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession):
    account, _, ids = await fleet(db)
    await make_user(db, "owner@example.com", PASSWORD, account, "owner")
    hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    for n, ms in enumerate((120.0, 80.0, 200.0)):
        await db.execute(
            """INSERT INTO checks_hourly
                   (monitor_id, hour, checks, checks_up, latency_n, latency_sum, latency_hist)
               VALUES ($1, $2, 10, 10, 10, $3, '{}')""",
            ids["Shop"],
            hour - timedelta(hours=2 - n),
            ms * 10,
        )
    person = await Person.sign_in(base_url, http, "owner@example.com", PASSWORD)

    page = await person.get("/")
    assert page.status == 200 and set(names(page)) == {"Shop", "Blog", "Mail port", "api"}
    assert "<polyline points=" in page.text and "80 ms to 200 ms" in page.text

    cases = {
        "/?q=SHOP": {"Shop"},  # the name, any case
        "/?q=example.org": {"Blog"},  # the URL
        "/?q=api.EXAMPLE": {"api"},  # the host
        "/?state=down": {"Blog"},
        "/?state=unknown": {"api"},
        "/?tag=prod": {"Shop", "Blog"},
        "/?tag=prod,web": {"Blog"},
        "/?type=tcp": {"Mail port"},
        "/?location=eu": {"Shop"},
        "/?q=example&type=http&tag=prod": {"Shop", "Blog"},
        "/?q=nothing-like-it": set(),
    }
    for path, expected in cases.items():
        got = await person.get(path)
        assert got.status == 200, (path, got.text[:300])
        assert set(names(got)) == expected, path
    assert "No monitor matches." in (await person.get("/?q=nothing-like-it")).text

    bad = await person.get("/?type=carrier-pigeon")
    assert bad.status == 200 and "type: one of" in bad.tree.one("p", "error-text").text()

    assert names(await person.get("/?sort=name")) == ["api", "Blog", "Mail port", "Shop"]
    assert names(await person.get("/?sort=state")) == ["Blog", "Mail port", "api", "Shop"]
    assert names(await person.get("/?sort=last_check")) == ["Shop", "Blog", "Mail port", "api"]


@pytest.mark.parametrize("sort", ["id", "name", "state", "last_check"])
async def test_keyset_pages(
    db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession, sort: str, monkeypatch
):
    account = await ensure_account(db)
    await make_user(db, "owner@example.com", PASSWORD, account, "owner")
    for n in range(7):
        row = await insert_monitor(db, url=f"https://s{n}.example/", name=f"site {n % 3} {n}")
        await db.execute(
            "UPDATE monitor_state SET status = $2, last_check_at = now() - make_interval(secs => $3) "
            "WHERE monitor_id = $1",
            row["id"],
            ("up", "down")[n % 2],
            float(n % 3),
        )
    monkeypatch.setattr(pages_overview, "PAGE_SIZE", 3)
    person = await Person.sign_in(base_url, http, "owner@example.com", PASSWORD)
    everything = names(await person.get(f"/?sort={sort}"))  # the first page only
    seen: list[str] = []
    path = f"/?sort={sort}"
    for _ in range(5):
        page = await person.get(path)
        seen += names(page)
        nexts = [a for a in page.tree.find_all("a") if a.attrs.get("rel") == "next"]
        if not nexts:
            break
        path = nexts[0].attrs["href"].replace("&amp;", "&")
    assert len(seen) == 7 and len(set(seen)) == 7 and seen[:3] == everything


async def test_partial_etag_and_live_state(
    db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession
):
    account, _, ids = await fleet(db)
    await make_user(db, "owner@example.com", PASSWORD, account, "owner")
    person = await Person.sign_in(base_url, http, "owner@example.com", PASSWORD)
    part = await person.get("/?sort=name", headers={"HX-Request": "true"})
    assert part.status == 200 and part.text.lstrip().startswith('<div id="monitor-list"')
    assert "<html" not in part.text and 'data-live="state"' in part.text
    etag = header(part, "ETag")
    same = await person.get("/?sort=name", headers={"HX-Request": "true", "If-None-Match": etag})
    assert same.status == 304 and same.text == ""
    await db.execute(
        "UPDATE monitor_state SET status = 'down', changed_at = now() WHERE monitor_id = $1", ids["Shop"]
    )
    moved = await person.get("/?sort=name", headers={"HX-Request": "true", "If-None-Match": etag})
    assert moved.status == 200 and header(moved, "ETag") != etag
    assert f'<tr id="m-{ids["Shop"]}" class="status-down">' in moved.text


async def test_bulk_pause_resume_delete(db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession):
    account, _, ids = await fleet(db)
    await make_user(db, "editor@example.com", PASSWORD, account, "editor")
    person = await Person.sign_in(base_url, http, "editor@example.com", PASSWORD)
    chosen = [("id", str(ids["Shop"])), ("id", str(ids["Blog"]))]

    confirm = await person.post("/monitors/bulk", [("action", "pause"), ("next", "/?sort=name"), *chosen])
    assert confirm.status == 200 and "Pause 2 monitors?" in confirm.text
    assert {"Shop", "Blog"} <= set(names(confirm))
    assert await db.fetchval("SELECT count(*) FROM monitors WHERE paused") == 0  # not yet
    done = await person.post(
        "/monitors/bulk", [("action", "pause"), ("confirm", "yes"), ("next", "/?sort=name"), *chosen]
    )
    assert done.status == 303 and done.location == "/?sort=name"
    paused = await db.fetch("SELECT id FROM monitors WHERE paused ORDER BY id")
    assert [r["id"] for r in paused] == sorted([ids["Shop"], ids["Blog"]])
    assert await db.fetchval("SELECT count(*) FROM monitor_pauses WHERE ended_at IS NULL") == 2
    assert set(names(await person.get("/?state=paused"))) == {"Shop", "Blog"}

    await person.post("/monitors/bulk", [("action", "resume"), ("confirm", "yes"), *chosen])
    assert await db.fetchval("SELECT count(*) FROM monitors WHERE paused") == 0
    assert await db.fetchval("SELECT count(*) FROM monitor_pauses WHERE ended_at IS NULL") == 0

    # Another account's monitor among the chosen: 404, and nothing changes (one transaction).
    mixed = [*chosen, ("id", str(ids["Not mine"]))]
    refused = await person.post("/monitors/bulk", [("action", "delete"), ("confirm", "yes"), *mixed])
    assert refused.status == 404
    assert await db.fetchval("SELECT count(*) FROM monitors") == 5
    preview = await person.post("/monitors/bulk", [("action", "delete"), *mixed])
    assert preview.status == 404 and "Not mine" not in preview.text

    gone = await person.post("/monitors/bulk", [("action", "delete"), ("confirm", "yes"), *chosen])
    assert gone.status == 303 and gone.location == "/"
    assert (
        await db.fetchval(
            "SELECT count(*) FROM monitors WHERE id = ANY($1::bigint[])", [ids["Shop"], ids["Blog"]]
        )
        == 0
    )
    audited = await db.fetch(
        "SELECT operation, object_id FROM audit_log WHERE resource = 'monitors' ORDER BY id"
    )
    ops = [(r["operation"], str(r["object_id"])) for r in audited]
    for op in ("update", "delete"):
        for name in ("Shop", "Blog"):
            assert (op, str(ids[name])) in ops
    assert sum(1 for op, _ in ops if op == "update") == 4  # pause and resume, each monitor

    bad = await person.post("/monitors/bulk", [("action", "explode"), *chosen])
    assert bad.status == 400 and "action" in bad.text
    none = await person.post("/monitors/bulk", [("action", "pause")])
    assert none.status == 400


async def test_viewer_cannot_bulk(db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession):
    account, _, ids = await fleet(db)
    await make_user(db, "viewer@example.com", PASSWORD, account, "viewer")
    viewer = await Person.sign_in(base_url, http, "viewer@example.com", PASSWORD)
    page = await viewer.get("/")
    assert page.status == 200 and 'type="checkbox"' not in page.text and 'id="bulk"' not in page.text
    forged = await viewer.post(
        "/monitors/bulk", [("action", "delete"), ("confirm", "yes"), ("id", str(ids["Shop"]))]
    )
    assert forged.status == 403
    assert await db.fetchval("SELECT count(*) FROM monitors WHERE id = $1", ids["Shop"]) == 1


async def test_api_listing_params(
    db: asyncpg.Connection, inprocess_api: InProcessFactory, http: aiohttp.ClientSession
):
    account, _, _ = await fleet(db)
    api = await inprocess_api()
    key = (await api_keys.create_key(db, account, "tests")).key
    auth = {"Authorization": f"Bearer {key}"}
    query = "/api/v1/monitors?q=example.com&sort=name&include=response_24h"
    async with http.get(api.base_url + query, headers=auth) as r:
        body = await r.json()
        assert r.status == 200, body
    assert [m["name"] for m in body["items"]] == ["api", "Shop"]
    assert body["items"][0]["response_24h"] == []
    async with http.get(api.base_url + "/api/v1/monitors?sort=sideways", headers=auth) as r:
        assert r.status == 400 and (await r.json())["error"]["field"] == "sort"
