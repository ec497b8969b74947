"""Status pages managed through the API (``/api/v1/status-pages``), run in-process
(``support.inprocess``) on the real PostgreSQL: create, read, list, change and delete; what is
refused (422 naming the field, as the client wrote it); slugs and domains unique over every
account (409 naming the field); one account's pages and monitors out of another's reach; and
a change seen by visitors at once.
"""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest
from support import ApiClient, ensure_account, insert_monitor
from support.inprocess import (  # noqa: F401
    Clients,
    InProcessFactory,
    inprocess_api_fixture,
    inprocess_clients_fixture,
)

from monitor.domain import keys as api_keys
from monitor.domain import status_pages
from monitor.status.service import PUBLIC

pytestmark = pytest.mark.timeout(60)

URL = "http://127.0.0.1:9/"


@pytest.fixture
def site(inprocess_clients: Clients) -> Clients:
    """The in-process api and its clients: ``site.api`` (the test account), ``site.other``,
    ``site.public`` (a visitor)."""
    return inprocess_clients


def page_body(monitor_ids: list[int], **fields: Any) -> dict[str, Any]:
    return {
        "slug": "acme",
        "title": "Acme",
        "groups": [{"name": "Web", "monitor_ids": monitor_ids}],
        **fields,
    }


async def test_a_page_is_created_read_listed_changed_and_deleted(
    site: Clients, db: asyncpg.Connection
) -> None:
    monitor = await insert_monitor(db, url=URL, name="web")
    made = await site.api.post("/api/v1/status-pages", json=page_body([monitor["id"], monitor["id"]]))
    assert made.status == 201, made
    page = made.json
    assert made.headers["Location"] == f"/api/v1/status-pages/{page['id']}"
    assert {k: v for k, v in page.items() if k not in ("id", "created_at", "updated_at")} == {
        "slug": "acme", "title": "Acme", "description": None, "logo_url": None, "favicon_url": None,
        "domain": None, "show_urls": False, "post_history_days": 90,
        "groups": [{"name": "Web", "monitor_ids": [monitor["id"]], "tags": []}],
        "url": f"{site.served.base_url}/status/acme",
    }  # fmt: skip
    assert (await site.api.get(f"/api/v1/status-pages/{page['id']}")).json == page
    assert (await site.public.get("/status/acme")).status == 200

    second = await site.api.post(
        "/api/v1/status-pages",
        json={"slug": "beta", "title": "Beta", "groups": [{"name": "B", "tags": ["b"]}]},
    )
    assert second.status == 201, second
    first_page = await site.api.get("/api/v1/status-pages", params={"limit": "1"})
    assert [p["slug"] for p in first_page.json["items"]] == ["acme"]
    rest = await site.api.get(
        "/api/v1/status-pages", params={"limit": "1", "cursor": first_page.json["next_cursor"]}
    )
    assert [p["slug"] for p in rest.json["items"]] == ["beta"] and rest.json["next_cursor"] is None
    # Another account lists none of them.
    assert (await site.other.get("/api/v1/status-pages")).json == {"items": [], "next_cursor": None}

    changed = await site.api.patch(
        f"/api/v1/status-pages/{page['id']}",
        json={"title": "Acme status", "description": "Line one\nline two", "logo_url": "https://cdn.example.com/l.png",
              "favicon_url": "https://cdn.example.com/icon.svg", "domain": "Status.Example.COM.",
              "show_urls": True},
    )  # fmt: skip
    assert changed.status == 200, changed
    body = changed.json
    assert (body["title"], body["description"], body["logo_url"], body["favicon_url"], body["domain"],
            body["show_urls"]) == (
        "Acme status", "Line one\nline two", "https://cdn.example.com/l.png", "https://cdn.example.com/icon.svg",
        "status.example.com", True,
    )  # fmt: skip
    assert body["groups"] == page["groups"] and body["updated_at"] > page["updated_at"]
    # null removes what may be absent.
    cleared = await site.api.patch(
        f"/api/v1/status-pages/{page['id']}",
        json={"description": None, "logo_url": None, "favicon_url": None, "domain": None},
    )
    assert [cleared.json[f] for f in ("description", "logo_url", "favicon_url", "domain")] == [None] * 4
    assert cleared.json["title"] == "Acme status"

    assert (await site.api.delete(f"/api/v1/status-pages/{page['id']}")).status == 204
    assert (await site.api.get(f"/api/v1/status-pages/{page['id']}")).status == 404
    assert (await site.api.delete(f"/api/v1/status-pages/{page['id']}")).status == 404
    # Visitors see it gone at once: the api forgets its cached page.
    assert (await site.public.get("/status/acme")).status == 404


REFUSED: list[tuple[str, dict[str, Any], str]] = [
    # name, fields over a valid body, the field named
    ("upper-case slug", {"slug": "Acme"}, "slug"),
    ("slug ending in a dash", {"slug": "acme-"}, "slug"),
    ("slug with a slash", {"slug": "a/b"}, "slug"),
    ("slug too long", {"slug": "a" * 65}, "slug"),
    ("no groups", {"groups": []}, "groups"),
    ("a post history of 60 days", {"post_history_days": 60}, "post_history_days"),
    ("a post history as text", {"post_history_days": "90"}, "post_history_days"),
    ("group without ids or tags", {"groups": [{"name": "Empty"}]}, "groups.0.monitor_ids"),
    ("logo over http", {"logo_url": "http://cdn.example.com/logo.png"}, "logo_url"),
    ("logo with credentials", {"logo_url": "https://user:secret@cdn.example.com/logo.png"}, "logo_url"),
    ("logo with a user", {"logo_url": "https://user@cdn.example.com/logo.png"}, "logo_url"),
    ("logo with a quote", {"logo_url": 'https://cdn.example.com/l.png" onerror="x'}, "logo_url"),
    ("logo as javascript", {"logo_url": "javascript:alert(1)"}, "logo_url"),
    # The logo's origin goes into the page's CSP: nothing that would add to it.
    ("logo adding a directive", {"logo_url": "https://a.example;sandbox"}, "logo_url"),
    ("logo adding a source", {"logo_url": "https://a.example,img-src"}, "logo_url"),
    ("logo as a wildcard", {"logo_url": "https://*"}, "logo_url"),
    ("logo with a bad port", {"logo_url": "https://a.example:99999/l.png"}, "logo_url"),
    # A favicon is held to the same rules (its origin joins the CSP's img-src too).
    ("favicon over http", {"favicon_url": "http://cdn.example.com/icon.svg"}, "favicon_url"),
    ("favicon adding a source", {"favicon_url": "https://a.example,img-src"}, "favicon_url"),
    ("favicon with credentials", {"favicon_url": "https://u:p@cdn.example.com/i.png"}, "favicon_url"),
    ("domain with a scheme", {"domain": "https://status.example.com"}, "domain"),
    ("domain with a port", {"domain": "status.example.com:8080"}, "domain"),
    ("domain with a path", {"domain": "status.example.com/x"}, "domain"),
    ("domain of one label", {"domain": "localhost"}, "domain"),
    ("domain with an underscore", {"domain": "st_atus.example.com"}, "domain"),
    ("title with a newline", {"title": "Acme\nStatus"}, "title"),
    ("empty title", {"title": ""}, "title"),
    ("unknown field", {"theme": "dark"}, "theme"),
    ("show_urls as text", {"show_urls": "yes"}, "show_urls"),
]


@pytest.mark.parametrize(("fields", "field"), [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
async def test_a_bad_page_is_refused_naming_the_field(
    site: Clients, db: asyncpg.Connection, fields: dict[str, Any], field: str
) -> None:
    monitor = await insert_monitor(db, url=URL)
    made = await site.api.post("/api/v1/status-pages", json=page_body([monitor["id"]], **fields))
    assert made.status == 422, made
    assert made.json["error"]["code"] == "invalid" and made.json["error"]["field"] == field, made
    # The same change to an existing page is refused alike, and changes nothing.
    page = await site.api.post("/api/v1/status-pages", json=page_body([monitor["id"]]))
    changed = await site.api.patch(f"/api/v1/status-pages/{page.json['id']}", json=fields)
    assert changed.status == 422 and changed.json["error"]["field"] == field, changed
    assert (await site.api.get(f"/api/v1/status-pages/{page.json['id']}")).json == page.json


@pytest.mark.parametrize("field", ["slug", "title", "groups", "show_urls"])
async def test_null_is_refused_for_what_a_page_must_have(
    site: Clients, db: asyncpg.Connection, field: str
) -> None:
    monitor = await insert_monitor(db, url=URL)
    page = await site.api.post("/api/v1/status-pages", json=page_body([monitor["id"]]))
    changed = await site.api.patch(f"/api/v1/status-pages/{page.json['id']}", json={field: None})
    assert changed.status == 422 and changed.json["error"]["field"] == field, changed


async def test_a_group_names_only_the_accounts_own_monitors(site: Clients, db: asyncpg.Connection) -> None:
    mine = await insert_monitor(db, url=URL)
    theirs = await insert_monitor(db, url=URL, account_id=await ensure_account(db, "other"))
    for ids in ([theirs["id"]], [mine["id"], theirs["id"]], [mine["id"] + theirs["id"] + 1000]):
        body = page_body([mine["id"]])
        body["groups"] = [
            {"name": "Mine", "monitor_ids": [mine["id"]]},
            {"name": "Theirs", "monitor_ids": ids},
        ]
        made = await site.api.post("/api/v1/status-pages", json=body)
        assert made.status == 422 and made.json["error"]["field"] == "groups.1.monitor_ids", made
    assert (await site.api.get("/api/v1/status-pages")).json["items"] == []


async def test_slug_and_domain_are_unique_over_every_account(site: Clients, db: asyncpg.Connection) -> None:
    mine = await insert_monitor(db, url=URL)
    theirs = await insert_monitor(db, url=URL, account_id=await ensure_account(db, "other"))
    made = await site.api.post("/api/v1/status-pages", json=page_body([mine["id"]], domain="status.acme.com"))
    assert made.status == 201, made
    for client, ids in ((site.api, [mine["id"]]), (site.other, [theirs["id"]])):
        taken = await client.post("/api/v1/status-pages", json=page_body(ids))
        assert taken.status == 409 and taken.json["error"] == {
            "code": "conflict", "message": "slug: another status page has this slug", "field": "slug",
        }, taken  # fmt: skip
        taken = await client.post(
            "/api/v1/status-pages", json=page_body(ids, slug="other", domain="STATUS.acme.com")
        )
        assert (taken.status, taken.json["error"]["code"], taken.json["error"]["field"]) == (
            409,
            "conflict",
            "domain",
        )
    second = await site.other.post("/api/v1/status-pages", json=page_body([theirs["id"]], slug="theirs"))
    assert second.status == 201, second
    renamed = await site.other.patch(f"/api/v1/status-pages/{second.json['id']}", json={"slug": "acme"})
    assert (renamed.status, renamed.json["error"]["field"]) == (409, "slug")

    # One account's page is not found by another, whatever it tries.
    path = f"/api/v1/status-pages/{made.json['id']}"
    assert (await site.other.get(path)).status == 404
    assert (await site.other.patch(path, json={"title": "Mine now"})).status == 404
    assert (await site.other.delete(path)).status == 404
    assert (await site.api.get(path)).json == made.json


async def test_a_deleted_monitor_leaves_its_groups_and_they_can_be_sent_back(
    site: Clients, db: asyncpg.Connection
) -> None:
    kept, gone = await insert_monitor(db, url=URL), await insert_monitor(db, url=URL)
    made = await site.api.post("/api/v1/status-pages", json=page_body([kept["id"], gone["id"]]))
    assert made.status == 201, made
    await db.execute("DELETE FROM monitors WHERE id = $1", gone["id"])
    groups = (await site.api.get(f"/api/v1/status-pages/{made.json['id']}")).json["groups"]
    # What a GET answered goes back as it is; the deleted monitor's id is dropped.
    sent = await site.api.patch(f"/api/v1/status-pages/{made.json['id']}", json={"groups": groups})
    assert sent.status == 200 and sent.json["groups"][0]["monitor_ids"] == [kept["id"]], sent
    # A new id that is no monitor is still refused.
    bad = [{"name": "Web", "monitor_ids": [kept["id"], gone["id"]]}]
    refused = await site.api.patch(f"/api/v1/status-pages/{made.json['id']}", json={"groups": bad})
    assert (refused.status, refused.json["error"]["field"]) == (422, "groups.0.monitor_ids"), refused


async def test_an_account_has_at_most_its_quota_of_pages(site: Clients, db: asyncpg.Connection) -> None:
    monitor = await insert_monitor(db, url=URL)
    account = await db.fetchval("SELECT account_id FROM monitors WHERE id = $1", monitor["id"])
    await db.executemany(
        "INSERT INTO status_pages (account_id, slug, title, groups) VALUES ($1, $2, 'x', '[]')",
        [(account, f"page-{i}") for i in range(status_pages.MAX_PAGES)],
    )
    over = await site.api.post("/api/v1/status-pages", json=page_body([monitor["id"]]))
    assert (over.status, over.json["error"]["code"]) == (409, "quota_exceeded"), over
    # Another account is not held by this one's pages.
    theirs = await insert_monitor(db, url=URL, account_id=await ensure_account(db, "other"))
    assert (await site.other.post("/api/v1/status-pages", json=page_body([theirs["id"]]))).status == 201


async def test_the_apis_own_address_is_no_pages_domain(
    inprocess_api: InProcessFactory, db: asyncpg.Connection
) -> None:
    served = await inprocess_api(MONITOR_PUBLIC_URL="https://monitor.example.com")
    key = await api_keys.create_key(db, await ensure_account(db), "tests")
    monitor = await insert_monitor(db, url=URL)
    async with ApiClient(served.base_url, key=key.key) as api:
        made = await api.post(
            "/api/v1/status-pages", json=page_body([monitor["id"]], domain="monitor.example.com")
        )
        assert (made.status, made.json["error"]["field"]) == (422, "domain"), made


async def test_a_new_badge_token_retires_only_the_old_one(site: Clients, db: asyncpg.Connection) -> None:
    mine, other = await insert_monitor(db, url=URL), await insert_monitor(db, url=URL)
    old = (await site.api.get(f"/api/v1/monitors/{mine['id']}")).json["badge_url"]
    kept = (await site.api.get(f"/api/v1/monitors/{other['id']}")).json["badge_url"]
    for url in (old, kept):
        assert (await site.public.get(url.removeprefix(site.served.base_url) + "/status.svg")).status == 200
    builds = site.served.app[PUBLIC].badges.builds
    new = await site.api.post(f"/api/v1/monitors/{mine['id']}/badge-token")
    assert new.status == 200 and new.json["badge_url"] != old, new
    assert (await site.api.get(f"/api/v1/monitors/{mine['id']}")).json["badge_url"] == new.json["badge_url"]
    path = new.json["badge_url"].removeprefix(site.served.base_url)
    assert (await site.public.get(old.removeprefix(site.served.base_url) + "/status.svg")).status == 404
    assert (await site.public.get(path + "/status.svg")).status == 200
    # The other monitor's badge was not forgotten: answered from the cache, no build.
    assert (await site.public.get(kept.removeprefix(site.served.base_url) + "/status.svg")).status == 200
    assert site.served.app[PUBLIC].badges.builds == builds + 2  # the old token's 404, the new one
    assert (await site.other.post(f"/api/v1/monitors/{mine['id']}/badge-token")).status == 404
