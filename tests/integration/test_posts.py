"""Incident posts through the API and on the public page, run in-process
(``support.inprocess``) on the real PostgreSQL: a post's lifecycle (made with its first update,
updated, resolved, an update after that refused, changed, deleted); what is refused (422 naming
the field: a monitor or group the page does not show); roles (a viewer reads, cannot write;
another account sees nothing); and what visitors see: the page's HTML (open posts on top, the
history below, within ``post_history_days``), its JSON, its Atom feed (one entry per post,
updated at its last update) and each post's permalink page, hostile Markdown made harmless
in all of them, each change shown at once.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import timedelta
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
from support.markup import Element, parse

from monitor.domain import keys as api_keys
from monitor.status.service import PUBLIC
from monitor.times import rfc3339

pytestmark = pytest.mark.timeout(60)

URL = "http://127.0.0.1:9/"
ATOM = "{http://www.w3.org/2005/Atom}"
HOSTILE = (
    "<script>alert('x')</script> **bold** <img src=x onerror=alert(1)> "
    "[click](javascript:alert(1)) [data](data:text/html;base64,PHNjcmlwdD4=) "
    "![pic](https://evil.example/p.png) "
    '<a href="https://evil.example" onclick="steal()">raw</a> <style>body{display:none}</style> '
    "[ok](https://example.com/fix)"
)


@pytest.fixture
def site(inprocess_clients: Clients) -> Clients:
    return inprocess_clients


async def _page(site: Clients, db: asyncpg.Connection, **fields: Any) -> tuple[dict[str, Any], list[int]]:
    web = await insert_monitor(db, url=URL, name="Web shop")
    api = await insert_monitor(db, url=URL, name="Public API", tags=["api"])
    await insert_monitor(db, url=URL, name="Hidden", tags=["private"])
    made = await site.api.post(
        "/api/v1/status-pages",
        json={"slug": "acme", "title": "Acme",
              "groups": [{"name": "Website", "monitor_ids": [web["id"]]}, {"name": "API", "tags": ["api"]}],
              **fields},
    )  # fmt: skip
    assert made.status == 201, made
    return made.json, [web["id"], api["id"]]


def _post_body(monitor_ids: list[int], **fields: Any) -> dict[str, Any]:
    return {
        "title": "Checkout is slow",
        "impact": "major",
        "monitor_ids": monitor_ids,
        "groups": ["API"],
        "update": {"state": "investigating", "text": "We are *looking* into it."},
        **fields,
    }


def _harmless(tree: Element) -> None:
    """Nothing in the page runs, loads from elsewhere or restyles: no script, style, image or
    frame element, no event handler or style attribute, no javascript: or data: link."""
    for element in tree.iter():
        assert element.tag not in ("script", "style", "img", "iframe", "object"), element.tag
        assert not [a for a in element.attrs if a.startswith("on") or a == "style"], element.attrs
        assert not element.attrs.get("href", "").strip().lower().startswith(("javascript:", "data:"))


def _errors(answer: Any) -> tuple[int, str, str | None]:
    error = answer.json["error"]
    return answer.status, error["code"], error.get("field")


async def test_a_post_is_made_updated_resolved_and_deleted(site: Clients, db: asyncpg.Connection) -> None:
    page, (web, api) = await _page(site, db)
    posts = f"/api/v1/status-pages/{page['id']}/posts"
    made = await site.api.post(posts, json=_post_body([web, api, web]))
    assert made.status == 201, made
    post = made.json
    assert made.headers["Location"] == f"/api/v1/posts/{post['id']}"
    assert (post["title"], post["impact"], post["state"], post["monitor_ids"], post["groups"]) == (
        "Checkout is slow", "major", "investigating", [web, api], ["API"],
    )  # fmt: skip
    assert post["url"] == f"{site.served.base_url}/status/acme/posts/{post['id']}"
    assert post["resolved_at"] is None and len(post["updates"]) == 1
    assert post["updates"][0]["html"] == "<p>We are <em>looking</em> into it.</p>\n"
    assert (await site.api.get(f"/api/v1/posts/{post['id']}")).json == post

    second = await site.api.post(
        f"/api/v1/posts/{post['id']}/updates", json={"state": "identified", "text": "Found it."}
    )
    assert second.status == 201, second
    assert second.json["state"] == "identified"
    assert [u["state"] for u in second.json["updates"]] == ["identified", "investigating"]  # newest first

    changed = await site.api.patch(f"/api/v1/posts/{post['id']}", json={"impact": "minor", "groups": []})
    assert changed.status == 200, changed
    assert (changed.json["impact"], changed.json["groups"], changed.json["title"]) == (
        "minor",
        [],
        post["title"],
    )
    assert len(changed.json["updates"]) == 2

    resolved = await site.api.post(
        f"/api/v1/posts/{post['id']}/updates", json={"state": "resolved", "text": "Fixed."}
    )
    assert resolved.status == 201 and resolved.json["state"] == "resolved"
    assert resolved.json["resolved_at"] == resolved.json["updates"][0]["created_at"]
    refused = await site.api.post(
        f"/api/v1/posts/{post['id']}/updates", json={"state": "monitoring", "text": "x"}
    )
    assert _errors(refused) == (409, "resolved", "state")

    # Listed per page, newest first, in keyset pages.
    newer = await site.api.post(posts, json=_post_body([], title="Second"))
    first = await site.api.get(posts, params={"limit": "1"})
    assert [p["title"] for p in first.json["items"]] == ["Second"]
    rest = await site.api.get(posts, params={"limit": "1", "cursor": first.json["next_cursor"]})
    assert [p["id"] for p in rest.json["items"]] == [post["id"]] and rest.json["next_cursor"] is None

    assert (await site.api.delete(f"/api/v1/posts/{newer.json['id']}")).status == 204
    assert (await site.api.get(f"/api/v1/posts/{newer.json['id']}")).status == 404
    assert (await site.api.delete(f"/api/v1/posts/{newer.json['id']}")).status == 404
    audited = await db.fetch(
        "SELECT operation FROM audit_log WHERE resource = 'posts' ORDER BY id",
    )
    assert [r["operation"] for r in audited] == [
        "create", "add_update", "update", "add_update", "create", "delete",
    ]  # fmt: skip


REFUSED: list[tuple[str, dict[str, Any], int, str]] = [
    # name, fields over a valid body, the status, the field named
    ("a monitor the page does not show", {"monitor_ids": ["HIDDEN"]}, 422, "monitor_ids.0"),
    ("an unknown monitor", {"monitor_ids": ["WEB", 999999]}, 422, "monitor_ids.1"),
    ("a group the page has not", {"groups": ["API", "Nope"]}, 422, "groups.1"),
    ("an impact that is none of them", {"impact": "apocalyptic"}, 422, "impact"),
    ("a state that is none of them", {"update": {"state": "fixed", "text": "x"}}, 422, "update.state"),
    ("no text", {"update": {"state": "investigating", "text": ""}}, 422, "update.text"),
    ("a text too long", {"update": {"state": "investigating", "text": "x" * 20_001}}, 422, "update.text"),
    ("no title", {"title": ""}, 422, "title"),
    ("a title of two lines", {"title": "a\nb"}, 422, "title"),
    ("an unknown field", {"pinned": True}, 422, "pinned"),
]


@pytest.mark.parametrize(("fields", "status", "field"), [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
async def test_a_bad_post_is_refused_naming_the_field(
    site: Clients, db: asyncpg.Connection, fields: dict[str, Any], status: int, field: str
) -> None:
    page, (web, _) = await _page(site, db)
    hidden = await db.fetchval("SELECT id FROM monitors WHERE name = 'Hidden'")
    if "monitor_ids" in fields:
        fields = {"monitor_ids": [{"HIDDEN": hidden, "WEB": web}.get(m, m) for m in fields["monitor_ids"]]}
    answer = await site.api.post(
        f"/api/v1/status-pages/{page['id']}/posts", json={**_post_body([]), **fields}
    )
    assert _errors(answer)[::2] == (status, field), answer
    assert field in answer.json["error"]["message"]
    patched = await site.api.patch("/api/v1/posts/1", json={"monitor_ids": [hidden]})
    assert patched.status == 404  # no post yet: nothing to change


async def test_roles_and_accounts(site: Clients, db: asyncpg.Connection) -> None:
    page, (web, _) = await _page(site, db)
    account = await ensure_account(db)
    viewer_key = await api_keys.create_key(db, account, "viewer", role="viewer")
    editor_key = await api_keys.create_key(db, account, "editor", role="editor")
    posts = f"/api/v1/status-pages/{page['id']}/posts"
    async with (
        ApiClient(site.served.base_url, key=viewer_key.key) as viewer,
        ApiClient(site.served.base_url, key=editor_key.key) as editor,
    ):
        assert _errors(await viewer.post(posts, json=_post_body([web]))) == (403, "forbidden", None)
        made = await editor.post(posts, json=_post_body([web]))
        assert made.status == 201, made
        post_id = made.json["id"]
        assert (await viewer.get(f"/api/v1/posts/{post_id}")).status == 200
        assert [p["id"] for p in (await viewer.get(posts)).json["items"]] == [post_id]
        for method, path, body in (
            ("POST", f"/api/v1/posts/{post_id}/updates", {"state": "resolved", "text": "x"}),
            ("PATCH", f"/api/v1/posts/{post_id}", {"impact": "none"}),
            ("DELETE", f"/api/v1/posts/{post_id}", None),
        ):
            answer = await viewer.request(method, path, json=body)
            assert _errors(answer)[:2] == (403, "forbidden"), answer
    # Another account: neither the page nor the post exist for it.
    assert (await site.other.get(f"/api/v1/posts/{post_id}")).status == 404
    assert (await site.other.get(posts)).status == 404
    assert (await site.other.post(posts, json=_post_body([]))).status == 404
    assert (await site.other.delete(f"/api/v1/posts/{post_id}")).status == 404
    assert (
        await site.other.post(f"/api/v1/posts/{post_id}/updates", json={"state": "resolved", "text": "x"})
    ).status == 404


async def test_visitors_see_posts_on_the_page_json_feed_and_permalink(
    site: Clients, db: asyncpg.Connection
) -> None:
    page, (web, api) = await _page(site, db, post_history_days=30)
    posts = f"/api/v1/status-pages/{page['id']}/posts"
    assert page["post_history_days"] == 30
    old = (await site.api.post(posts, json=_post_body([api], title="Old outage"))).json
    await site.api.post(
        f"/api/v1/posts/{old['id']}/updates", json={"state": "resolved", "text": "Fixed then."}
    )
    past = (await site.api.post(posts, json=_post_body([api], title="Database failover"))).json
    await site.api.post(
        f"/api/v1/posts/{past['id']}/updates", json={"state": "resolved", "text": "All good."}
    )
    # The old one was resolved 31 days ago: past the page's history.
    await db.execute(
        "UPDATE incident_posts SET resolved_at = resolved_at - $2::interval WHERE id = $1",
        old["id"],
        timedelta(days=31),
    )
    body = _post_body(
        [web], title="<b>Checkout</b> is slow", update={"state": "investigating", "text": HOSTILE}
    )
    current = (await site.api.post(posts, json=body)).json
    await site.api.post(
        f"/api/v1/posts/{current['id']}/updates", json={"state": "identified", "text": "Second **step**."}
    )

    desk = site.served.app[PUBLIC]
    queries = desk.metrics.queries
    before = (queries.labels("page")._value.get(), desk.pages.builds)
    html = await site.public.get("/status/acme")
    assert html.status == 200
    # The posts and their updates are read with the rest of the page: still one statement.
    assert (queries.labels("page")._value.get(), desk.pages.builds) == (before[0] + 1, before[1] + 1)
    tree = parse(html.text)
    articles = tree.find_all("article", "post")
    titles = [a.one("h3", "post-title").text().strip() for a in articles]
    # The open post on top (before the groups), the resolved one below; the old one not at all.
    assert titles == ["<b>Checkout</b> is slow", "Database failover"]
    assert (
        html.text.index("Ongoing incidents")
        < html.text.index("Website")
        < html.text.index("Past incident reports")
    )
    first = articles[0]
    # A resolved post shows its last update and a link to the rest (its permalink).
    assert [
        li.one("p", "update-head").one("strong").text() for li in articles[1].find_all("li", "update")
    ] == ["Resolved"]
    assert articles[1].one("p", "post-more").one("a").attrs["href"] == f"/status/acme/posts/{past['id']}"
    assert [li.one("p", "update-head").one("strong").text() for li in first.find_all("li", "update")] == [
        "Identified",
        "Investigating",
    ]
    assert "Affects Website, Web shop" not in first.text() and "Web shop" in first.text()
    _harmless(tree)
    links = [a.attrs for a in first.find_all("a")]
    assert {"href": "https://example.com/fix", "rel": "nofollow noopener"} in links
    assert {"href": f"/status/acme/posts/{current['id']}"} in links
    assert "&lt;script&gt;alert" in html.text  # shown as text

    data = (await site.public.get("/status/acme.json")).json
    assert data["post_history_days"] == 30
    assert [p["title"] for p in data["posts"]] == ["<b>Checkout</b> is slow", "Database failover"]
    shown = data["posts"][0]
    assert (shown["id"], shown["state"], shown["impact"], shown["resolved"]) == (
        current["id"],
        "identified",
        "major",
        False,
    )
    assert shown["affected"] == {"monitors": ["Web shop"], "groups": ["API"]}
    assert [u["text"] for u in shown["updates"]] == ["Second **step**.", HOSTILE]
    assert shown["updates"][0]["html"] == "<p>Second <strong>step</strong>.</p>\n"
    _harmless(parse(f"<div>{shown['updates'][1]['html']}</div>"))
    assert "monitor_ids" not in shown

    feed = ET.fromstring((await site.public.get("/status/acme/feed.atom")).text)
    entries = {e.findtext(f"{ATOM}title"): e for e in feed.iter(f"{ATOM}entry")}
    entry = entries["<b>Checkout</b> is slow (Identified)"]
    assert "Database failover (Resolved)" in entries and not any(t.startswith("Old outage") for t in entries)
    latest = await db.fetchval(
        "SELECT max(created_at) FROM incident_post_updates WHERE post_id = $1", current["id"]
    )
    assert entry.findtext(f"{ATOM}updated") == rfc3339(latest)
    content = entry.find(f"{ATOM}content")
    assert content is not None and content.get("type") == "html"
    text = content.text or ""
    assert text.index("Identified") < text.index("Investigating")  # newest first
    assert "<strong>step</strong>" in text
    _harmless(parse(f"<div>{text}</div>"))
    assert entry.find(f"{ATOM}link").get("href") == f"/status/acme/posts/{current['id']}"  # type: ignore[union-attr]

    permalink = await site.public.get(f"/status/acme/posts/{current['id']}")
    assert permalink.status == 200 and "script-src" not in permalink.headers["Content-Security-Policy"]
    one = parse(permalink.text)
    _harmless(one)
    assert one.one("h1", "post-title").text() == "<b>Checkout</b> is slow"
    assert "<script" not in permalink.text.split("<body>")[1]
    # The old post left the page's history, not its permalink.
    assert (await site.public.get(f"/status/acme/posts/{old['id']}")).status == 200
    for missing in ("999999", "abc", "-1", "1" * 30):
        assert (await site.public.get(f"/status/acme/posts/{missing}")).status == 404
    assert (await site.public.get(f"/status/nope/posts/{current['id']}")).status == 404

    # A change shows at once: this api forgets the page and the permalink.
    await site.api.patch(f"/api/v1/posts/{current['id']}", json={"title": "Checkout fixed soon"})
    assert "Checkout fixed soon" in (await site.public.get("/status/acme")).text
    assert "Checkout fixed soon" in (await site.public.get(f"/status/acme/posts/{current['id']}")).text
    assert (await site.api.delete(f"/api/v1/posts/{current['id']}")).status == 204
    assert "Checkout fixed soon" not in (await site.public.get("/status/acme")).text
    assert (await site.public.get(f"/status/acme/posts/{current['id']}")).status == 404
