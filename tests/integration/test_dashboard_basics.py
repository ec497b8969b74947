"""The dashboard's plumbing, through an in-process api: signing in with the form (a wrong
password shown on the form, the e-mail kept), the overview of the account's monitors only,
a viewer without write controls, the security headers and the CSP on every page, CSRF on
form posts (another site's Origin, no token), the theme, signing out, and ``/`` of a status
page's own domain still being that page.
"""

from __future__ import annotations

import aiohttp
import asyncpg
from support import ensure_account
from support.dashboard import Person, base_url_fixture, http_fixture  # noqa: F401
from support.db import insert_monitor
from support.inprocess import InProcessFactory, inprocess_api_fixture  # noqa: F401
from support.people import COOKIE, make_user

PASSWORD = "Dashboard-Pass-4e1b7c"


async def test_sign_in_overview_and_sign_out(
    db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession
):
    account = await ensure_account(db)
    other = await ensure_account(db, "other")
    await make_user(db, "owner@example.com", PASSWORD, account, "owner")
    await insert_monitor(db, url="http://127.0.0.1:9/", name="Shop <b>front</b>")
    await insert_monitor(db, url="http://127.0.0.1:9/", name="Not mine", account_id=other)

    anonymous = Person(base_url, http)
    first = await anonymous.get("/")
    assert first.status == 303 and first.location in ("/signin?next=%2F", "/signin?next=/")

    wrong = await anonymous.post("/signin", {"email": "owner@example.com", "password": "nope-nope-nope"})
    assert wrong.status == 401
    alert = wrong.tree.one("p", "error-text")
    assert "e-mail or password is wrong" in alert.text()
    assert 'value="owner@example.com"' in wrong.text and "nope-nope-nope" not in wrong.text

    person = await Person.sign_in(base_url, http, "owner@example.com", PASSWORD)
    page = await person.get("/")
    assert page.status == 200
    names = [a.text() for a in page.tree.find_all("a") if a.attrs.get("href", "").startswith("/monitors/")]
    assert "Shop <b>front</b>" in names and "Not mine" not in names
    assert "<b>front</b>" not in page.text  # the name is text, not markup
    csp = page.headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "style-src 'self'" in csp
    assert page.headers["X-Frame-Options"] == "DENY" and page.headers["Cache-Control"] == "no-store"
    assert any(a.attrs.get("href") == "/monitors/new" for a in page.tree.find_all("a"))

    out = await person.post("/signout", {})
    assert out.status == 303 and COOKIE not in person.cookies
    assert (await person.get("/")).status == 303


async def test_viewer_sees_no_write_controls(
    db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession
):
    account = await ensure_account(db)
    await make_user(db, "viewer@example.com", PASSWORD, account, "viewer")
    await insert_monitor(db, url="http://127.0.0.1:9/", name="Shop")
    viewer = await Person.sign_in(base_url, http, "viewer@example.com", PASSWORD)
    page = await viewer.get("/")
    assert page.status == 200 and "Shop" in page.text
    assert not any(a.attrs.get("href") == "/monitors/new" for a in page.tree.find_all("a"))


async def test_form_posts_need_this_sites_origin_or_the_token(
    db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession
):
    account = await ensure_account(db)
    await make_user(db, "owner@example.com", PASSWORD, account, "owner")
    person = await Person.sign_in(base_url, http, "owner@example.com", PASSWORD)
    forged = await person.post("/signout", {}, csrf=False)
    assert forged.status == 403 and "CSRF" in forged.text
    elsewhere = await person.post("/signout", {}, headers={"Origin": "https://evil.example"})
    assert elsewhere.status == 403 and "another site" in elsewhere.text
    assert (await person.get("/")).status == 200  # still signed in
    same_site = await person.post("/signout", {}, csrf=False, headers={"Origin": base_url})
    assert same_site.status == 303


async def test_sign_in_from_another_site_is_refused(
    db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession
):
    account = await ensure_account(db)
    await make_user(db, "owner@example.com", PASSWORD, account, "owner")
    person = Person(base_url, http)
    answer = await person.post(
        "/signin",
        {"email": "owner@example.com", "password": PASSWORD},
        headers={"Origin": "https://evil.example"},
    )
    assert answer.status == 403 and COOKIE not in person.cookies


async def test_theme_is_kept_and_static_files_are_versioned(base_url: str, http: aiohttp.ClientSession):
    person = Person(base_url, http)
    answer = await person.post("/theme", {"theme": "dark", "next": "/signin"})
    assert answer.status == 303 and answer.location == "/signin"
    page = await person.get("/signin")
    assert page.tree.one("html").attrs["data-theme"] == "dark"
    css = next(
        link.attrs["href"] for link in page.tree.find_all("link") if link.attrs.get("rel") == "stylesheet"
    )
    async with http.get(base_url + css) as response:
        assert response.status == 200 and "immutable" in response.headers["Cache-Control"]
        assert response.headers["Content-Type"].startswith("text/css")


async def test_signin_next_never_leaves_the_site(
    db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession
):
    account = await ensure_account(db)
    await make_user(db, "owner@example.com", PASSWORD, account, "owner")
    person = Person(base_url, http)
    for target in ("//evil.example/", "https://evil.example/", "/\\evil.example"):
        answer = await person.post(
            "/signin", {"email": "owner@example.com", "password": PASSWORD, "next": target}
        )
        assert answer.status == 303 and answer.location == "/", target


async def test_a_broken_origin_is_refused_not_a_crash(
    db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession
):
    """An ``Origin`` that does not parse (a port out of range) names no site: 403, not a 500."""
    account = await ensure_account(db)
    await make_user(db, "owner@example.com", PASSWORD, account, "owner")
    person = await Person.sign_in(base_url, http, "owner@example.com", PASSWORD)
    for origin in ("http://127.0.0.1:99999", "http://[::1"):
        answer = await person.post("/signout", {}, headers={"Origin": origin})
        assert answer.status == 403 and "another site" in answer.text, origin
        signin = await Person(base_url, http).post(
            "/signin", {"email": "owner@example.com", "password": PASSWORD}, headers={"Origin": origin}
        )
        assert signin.status == 403 and COOKIE not in signin.headers.get("Set-Cookie", ""), origin
    assert (await person.get("/")).status == 200  # still signed in


async def test_an_unknown_path_is_a_page_for_a_browser(base_url: str, http: aiohttp.ClientSession):
    """A browser (``Accept: text/html``) at an unknown path gets an HTML 404 page with the
    security headers; a script, and any unknown path under /api/, the API's JSON error."""
    person = Person(base_url, http)
    browser = {"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}
    page = await person.get("/no/such/page<script>", headers=browser)
    assert page.status == 404 and page.headers["Content-Type"].startswith("text/html")
    assert page.tree.one("h1").text() == "Not found" and "<script>" not in page.text
    assert page.headers["Content-Security-Policy"] and page.headers["Cache-Control"] == "no-store"
    script = await person.get("/no/such/page")
    assert script.status == 404 and script.headers["Content-Type"].startswith("application/json")
    visit = await person.get("/signout", headers=browser)
    assert visit.status == 405 and visit.tree.one("h1").text() == "Not a page" and "Allow" in visit.headers
    api = await person.get("/api/v1/nothing-here", headers=browser)
    assert api.status in (401, 404) and api.headers["Content-Type"].startswith("application/json")


async def test_one_removed_from_every_account_can_still_sign_out(
    db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession
):
    """A session whose person has no membership left gets a 403 page that says so, with a
    sign-out form that works (before, /signout itself needed a membership: 403)."""
    account = await ensure_account(db)
    user_id = await make_user(db, "owner@example.com", PASSWORD, account, "owner")
    person = await Person.sign_in(base_url, http, "owner@example.com", PASSWORD)
    await db.execute("DELETE FROM memberships WHERE user_id = $1", user_id)
    page = await person.get("/")
    assert page.status == 403 and "not a member" in page.text
    form = next(f for f in page.tree.find_all("form") if f.attrs.get("action") == "/signout")
    token = next(i.attrs["value"] for i in form.find_all("input") if i.attrs.get("name") == "csrf")
    forged = await person.post("/signout", {}, csrf=False)
    assert forged.status == 403 and COOKIE in person.cookies
    out = await person.post("/signout", {"csrf": token}, csrf=False)
    assert out.status == 303 and out.location == "/signin" and COOKIE not in person.cookies
    assert await db.fetchval("SELECT count(*) FROM sessions WHERE user_id = $1", user_id) == 0
