"""How a status page is served to the public: built at most once per cache period whatever the
traffic, ETags and gzip, strict security headers (graded by the project's own grader), a page's
own domain, the JSON and Atom feeds, and a database that goes away.

The api runs in-process (``support.inprocess``) so a test can count the builds of its status
desk (``app[PUBLIC]``: ``directory.builds`` and ``pages.builds``; PostgreSQL's
pg_stat_statements is not loaded on the test server). Waiting for a rebuild is a condition
with a deadline, never a sleep. A database "down" is a TCP proxy (``support.tcpproxy``) in
front of the shared server, cut for this app alone.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
import time
import urllib.robotparser
import uuid
import xml.etree.ElementTree as ET
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import asyncpg
import brotli
import pytest
from multidict import CIMultiDictProxy
from support import ApiClient, ensure_account, insert_monitor, wait_for
from support.inprocess import InProcessApi, InProcessFactory, inprocess_api_fixture  # noqa: F401
from support.markup import parse
from support.status_data import D, H, add_incident, hours_of_checks, set_state
from support.tcpproxy import TcpProxy

from monitor.checks import security_headers
from monitor.domain import keys as api_keys
from monitor.status.service import PUBLIC, StatusDesk

pytestmark = pytest.mark.timeout(60)

ATOM = "{http://www.w3.org/2005/Atom}"
NAME = '<script>alert(1)</script> & "x"'
SLUG = "shop"
DOMAIN = "status.example.com"
# The cache period of the burst test: far longer than a burst of 250 requests takes.
PERIOD = 10


@dataclass
class Site:
    served: InProcessApi
    api: ApiClient  # the test account's key
    raw: aiohttp.ClientSession  # a visitor's, bodies as sent (gzip not undone)
    monitor_id: int
    page_id: int

    @property
    def desk(self) -> StatusDesk:
        return self.served.app[PUBLIC]

    async def get(self, path: str, **headers: str) -> Fetched:
        headers.setdefault("Accept-Encoding", "identity")
        async with self.raw.get(self.served.base_url + path, headers=headers) as resp:
            return Fetched(resp.status, resp.headers, await resp.read())


@dataclass(frozen=True)
class Fetched:
    status: int
    headers: CIMultiDictProxy[str]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode()

    @property
    def json(self) -> Any:
        return json.loads(self.body)


SiteFactory = Callable[..., Awaitable[Site]]


@pytest.fixture
async def open_site(db: asyncpg.Connection, inprocess_api: InProcessFactory) -> AsyncIterator[SiteFactory]:
    """``await open_site(cache_seconds, env={...}, **page_fields)``: an api with that cache
    period and a page ``shop`` of one monitor named NAME (up, created 10 days ago, checks in
    the last hours, two past incidents and none ongoing)."""
    async with AsyncExitStack() as stack:

        async def make(cache_seconds: float = 2, env: dict[str, str] | None = None, **fields: Any) -> Site:
            served = await inprocess_api(MONITOR_STATUS_CACHE_SECONDS=str(cache_seconds), **(env or {}))
            key = await api_keys.create_key(db, await ensure_account(db), "tests")
            api = await stack.enter_async_context(ApiClient(served.base_url, key=key.key))
            raw = await stack.enter_async_context(
                aiohttp.ClientSession(
                    auto_decompress=False, trust_env=False, timeout=aiohttp.ClientTimeout(15)
                )
            )
            t0 = await db.fetchval("SELECT now()")
            monitor = await insert_monitor(
                db, url="http://shop.example/", name=NAME, created_at=t0 - 10 * D, tags=["shop"]
            )
            hour = t0.replace(minute=0, second=0, microsecond=0)
            await hours_of_checks(db, monitor["id"], [hour - i * H for i in range(1, 6)], latency_ms=80)
            await add_incident(db, monitor["id"], t0 - 3 * D, t0 - 3 * D + H)
            await add_incident(db, monitor["id"], t0 - 2 * D, t0 - 2 * D + 0.5 * H)
            await set_state(db, monitor["id"], "up", t0 - 2 * D)
            page = await api.post(
                "/api/v1/status-pages",
                json={"slug": SLUG, "title": "Shop", "groups": [{"name": "All", "tags": ["shop"]}], **fields},
            )
            assert page.status == 201, page
            return Site(served, api, raw, monitor["id"], page.json["id"])

        yield make


def builds(site: Site) -> tuple[int, int]:
    """(directory reads, page builds) so far."""
    return site.desk.directory.builds, site.desk.pages.builds


def statements(site: Site) -> tuple[float, float]:
    """(SQL statements of directory reads, of page builds) so far (monitor_status_queries_total)."""
    queries = site.desk.metrics.queries
    return queries.labels("directory")._value.get(), queries.labels("page")._value.get()


# -- caching -----------------------------------------------------------------------------------


async def test_a_burst_costs_one_build_and_unknown_pages_cost_none(open_site: SiteFactory) -> None:
    site = await open_site(cache_seconds=PERIOD)
    before, said = builds(site), statements(site)
    started = time.monotonic()
    answers = await asyncio.gather(*(site.get(f"/status/{SLUG}") for _ in range(200)))
    missing = await asyncio.gather(*(site.get(f"/status/nothing-{i}") for i in range(50)))
    elapsed = time.monotonic() - started
    assert elapsed < PERIOD, (
        f"the burst took {elapsed:.1f}s, more than one period: the counts below mean nothing"
    )
    assert {a.status for a in answers} == {200} and len({a.body for a in answers}) == 1
    assert {a.headers["ETag"] for a in answers} == {answers[0].headers["ETag"]}
    # One read of the list of pages, one build of this page; the unknown slugs cost nothing.
    assert [after - b for after, b in zip(builds(site), before, strict=True)] == [1, 1]
    # And each is one SQL statement: the page's data is read in one query.
    assert [after - b for after, b in zip(statements(site), said, strict=True)] == [1, 1]
    assert {m.status for m in missing} == {404}
    # Kept by a browser or proxy for what is left of the period, less than the whole of it.
    cache_control = answers[0].headers["Cache-Control"]
    assert cache_control.startswith("public, max-age="), cache_control
    assert int(cache_control.removeprefix("public, max-age=")) < PERIOD, cache_control
    assert answers[0].headers["Vary"] == "Accept-Encoding"


async def test_under_steady_traffic_the_page_is_built_once_per_period(open_site: SiteFactory) -> None:
    site = await open_site(cache_seconds=1)
    before = builds(site)
    started = time.monotonic()
    while (elapsed := time.monotonic() - started) < 2.5:
        answers = await asyncio.gather(*(site.get(f"/status/{SLUG}") for _ in range(20)))
        assert {a.status for a in answers} == {200}
    elapsed = time.monotonic() - started
    directory, pages = (after - b for after, b in zip(builds(site), before, strict=True))
    # A rebuild starts only once the value is a period old: never more than one per period.
    most = 1 + int(elapsed / 1)
    assert 2 <= pages <= most and 1 <= directory <= most, (directory, pages, elapsed)


async def test_a_change_shows_after_the_period_and_an_owners_change_at_once(
    open_site: SiteFactory, db: asyncpg.Connection
) -> None:
    site = await open_site(cache_seconds=2)

    async def status() -> str:
        answer = await site.get(f"/status/{SLUG}.json")
        assert answer.status == 200, answer
        return str(answer.json["groups"][0]["monitors"][0]["status"])

    assert await status() == "up"
    built_at = time.monotonic()
    # The next build may begin this long before the period ends (twice this build's time).
    lead = site.desk.pages.lead(SLUG)
    await set_state(db, site.monitor_id, "down", await db.fetchval("SELECT now()"))
    if time.monotonic() - built_at < 2 - lead - 0.5:  # well inside the period: the page built before
        assert await status() == "up"
    started = time.monotonic()

    async def shows_down() -> bool:
        return await status() == "down"

    await wait_for(shows_down, timeout=10, message="the page shows the monitor down")
    assert time.monotonic() - built_at >= 2 - lead - 0.1, "shown before the period was over"
    assert time.monotonic() - started < 2 * 2 + 1

    # The owner's change is seen at once: the api forgets its cached page.
    changed = await site.api.patch(f"/api/v1/status-pages/{site.page_id}", json={"title": "Shop, renamed"})
    assert changed.status == 200, changed
    page = parse((await site.get(f"/status/{SLUG}")).text)
    assert page.one("h1", "title").text() == "Shop, renamed"


async def test_after_a_quiet_spell_a_change_shows_within_the_period_and_one_build(
    open_site: SiteFactory, db: asyncpg.Connection
) -> None:
    """The bound the README promises: what a visitor reads (page, JSON, badge) is never older
    than the cache period plus one build, a quiet spell or not (it was up to 70 s)."""
    period = 1.0
    site = await open_site(cache_seconds=period)
    token = await db.fetchval("SELECT badge_token FROM monitors WHERE id = $1", site.monitor_id)
    badge = f"/badge/{token}/status.svg"

    async def shown() -> tuple[str, str, str]:
        paths = (f"/status/{SLUG}", f"/status/{SLUG}.json", badge)
        page, data, svg = [await site.get(path) for path in paths]
        state = parse(page.text).one("span", "state").text().strip()
        return state, data.json["groups"][0]["monitors"][0]["status"], svg.text

    before = await shown()
    assert before[:2] == ("Up", "up") and ">up<" in before[2], before
    # A quiet spell: no visitor for three periods (the scenario itself, not a wait for a condition).
    await asyncio.sleep(3 * period)
    changed = time.monotonic()
    await set_state(db, site.monitor_id, "down", await db.fetchval("SELECT now()"))
    # The first visitor after it already sees the change: what was built before the spell is
    # more than a period old, so the request waits for a build rather than being shown it.
    state, status, svg = await shown()
    took = time.monotonic() - changed
    assert (state, status) == ("Down", "down") and ">down<" in svg, (state, status, svg)
    assert took < period, f"{took:.2f}s: more than one build"
    # And what a browser or proxy may keep it for runs to the end of its period, no further.
    again = await site.get(f"/status/{SLUG}.json")
    age = int(again.headers["Cache-Control"].removeprefix("public, max-age="))
    assert 0 <= age <= period, again.headers


async def test_etags_answer_304_and_gzip_is_the_same_body(open_site: SiteFactory) -> None:
    site = await open_site()
    for path in (f"/status/{SLUG}", f"/status/{SLUG}.json", f"/status/{SLUG}/feed.atom"):
        plain = await site.get(path)
        assert plain.status == 200 and "Content-Encoding" not in plain.headers, (path, plain.headers)
        etag = plain.headers["ETag"]
        assert etag.startswith('"') and etag.endswith('"'), etag
        again = await site.get(path, **{"If-None-Match": etag})
        assert (again.status, again.body, again.headers["ETag"]) == (304, b"", etag), path
        assert (await site.get(path, **{"If-None-Match": '"something-else"'})).status == 200
        if len(plain.body) >= 1024:  # smaller ones are sent as they are
            packed = await site.get(path, **{"Accept-Encoding": "gzip, deflate"})
            # The gzip copy is another representation, with its own ETag.
            gz_etag = etag[:-1] + '-gz"'
            assert packed.headers["Content-Encoding"] == "gzip" and packed.headers["ETag"] == gz_etag, path
            assert len(packed.body) < len(plain.body) and gzip.decompress(packed.body) == plain.body, path
            cached = await site.get(path, **{"Accept-Encoding": "gzip", "If-None-Match": gz_etag})
            assert cached.status == 304, path
            refused = await site.get(path, **{"Accept-Encoding": "gzip;q=0, identity"})
            assert "Content-Encoding" not in refused.headers and refused.body == plain.body, path
    # The stylesheet the page links to is cached for a year under its content hash.
    href = next(e.attrs["href"] for e in parse((await site.get(f"/status/{SLUG}")).text).find_all("link")
                if e.attrs.get("rel") == "stylesheet")  # fmt: skip
    css = await site.get(href)
    assert css.status == 200 and css.headers["Content-Type"].startswith("text/css"), css
    assert css.headers["Cache-Control"] == "public, max-age=31536000, immutable"


# -- static files, favicon, robots.txt --------------------------------------------------------


async def test_the_stylesheet_is_sent_compressed_to_a_client_that_takes_it(open_site: SiteFactory) -> None:
    site = await open_site()
    href = next(e.attrs["href"] for e in parse((await site.get(f"/status/{SLUG}")).text).find_all("link")
                if e.attrs.get("rel") == "stylesheet")  # fmt: skip
    plain = await site.get(href)  # Accept-Encoding: identity
    assert plain.status == 200 and "Content-Encoding" not in plain.headers, plain.headers
    assert (
        plain.headers["Content-Type"] == "text/css; charset=utf-8" and b"prefers-color-scheme" in plain.body
    )
    etags = {plain.headers["ETag"]}
    for accept, coding, unpack in [
        ("gzip, deflate, br, zstd", "br", brotli.decompress),  # a browser's
        ("gzip", "gzip", gzip.decompress),  # curl --compressed without brotli
    ]:
        packed = await site.get(href, **{"Accept-Encoding": accept})
        assert packed.headers["Content-Encoding"] == coding, (accept, packed.headers)
        assert unpack(packed.body) == plain.body and len(packed.body) < len(plain.body) / 2, accept
        assert packed.headers["Vary"] == "Accept-Encoding"
        assert packed.headers["Cache-Control"] == "public, max-age=31536000, immutable"
        etags.add(packed.headers["ETag"])
        again = await site.get(href, **{"Accept-Encoding": accept, "If-None-Match": packed.headers["ETag"]})
        assert (again.status, again.body) == (304, b""), accept
    assert len(etags) == 3  # each representation its own
    assert plain.headers["Vary"] == "Accept-Encoding"
    # Without this version's hash it may change: cached a day, not a year.
    unversioned = await site.get("/static/status.css", **{"Accept-Encoding": "br"})
    assert unversioned.headers["Cache-Control"] == "public, max-age=86400"
    assert brotli.decompress(unversioned.body) == plain.body


async def test_a_page_has_the_default_favicon_or_its_own(open_site: SiteFactory) -> None:
    site = await open_site(domain=DOMAIN)
    icons = [(e.attrs["href"], e.attrs.get("type")) for e in parse((await site.get(f"/status/{SLUG}")).text)
             .find_all("link") if e.attrs.get("rel") == "icon"]  # fmt: skip
    assert [urlsplit(href).path for href, _ in icons] == ["/favicon.ico", "/static/favicon.svg"], icons
    for href, kind in icons:
        icon = await site.get(href)
        assert icon.status == 200 and icon.headers["Cache-Control"] == "public, max-age=31536000, immutable"
        assert icon.headers["Content-Type"] == (kind or "image/x-icon"), icon.headers
    # Asked unasked at the root: the ICO (16 and 32 px), by whichever host.
    for host in (None, DOMAIN):
        root = await site.get("/favicon.ico", **({"Host": host} if host else {}))
        assert root.status == 200 and root.body[:6] == b"\x00\x00\x01\x00\x02\x00", root.headers

    own = "https://cdn.example.com/brand/icon.svg"
    changed = await site.api.patch(f"/api/v1/status-pages/{site.page_id}", json={"favicon_url": own})
    assert changed.status == 200 and changed.json["favicon_url"] == own, changed
    page = await site.get(f"/status/{SLUG}")
    assert [e.attrs["href"] for e in parse(page.text).find_all("link") if e.attrs.get("rel") == "icon"] == [
        own
    ]
    assert policy(page.headers["Content-Security-Policy"])["img-src"] == ["'self'", "https://cdn.example.com"]
    assert (await site.get(f"/status/{SLUG}.json")).json["favicon_url"] == own
    # On the page's own domain, /favicon.ico is its icon; elsewhere still the default.
    async with site.raw.get(
        site.served.base_url + "/favicon.ico", headers={"Host": DOMAIN}, allow_redirects=False
    ) as resp:
        assert (resp.status, resp.headers["Location"]) == (302, own)
    assert (await site.get("/favicon.ico")).status == 200


@pytest.mark.parametrize("indexed", [True, False])
async def test_robots_txt_lets_crawlers_read_status_pages_and_nothing_private(
    open_site: SiteFactory, indexed: bool
) -> None:
    env = {} if indexed else {"MONITOR_STATUS_PAGES_INDEXED": "false"}
    site = await open_site(env=env)
    robots = await site.get("/robots.txt")
    assert robots.status == 200 and robots.headers["Content-Type"] == "text/plain; charset=utf-8", robots
    parser = urllib.robotparser.RobotFileParser()
    parser.parse(robots.text.splitlines())
    base = site.served.base_url
    assert parser.can_fetch("*", f"{base}/status/{SLUG}") is indexed
    for private in ("/api/v1/monitors", "/api/v1/keys", "/badge/abc/status.svg", "/ping/abc", "/metrics"):
        assert not parser.can_fetch("*", base + private), private
    page = await site.get(f"/status/{SLUG}")
    assert page.headers.get("X-Robots-Tag") == (None if indexed else "noindex")


# -- security headers -------------------------------------------------------------------------


def policy(header: str) -> dict[str, list[str]]:
    """A Content-Security-Policy as directive -> sources."""
    directives = [part.split() for part in header.split(";") if part.strip()]
    return {d[0]: d[1:] for d in directives}


@pytest.mark.parametrize(
    ("logo", "images"),
    [
        (None, ["'self'"]),
        ("https://cdn.example.com:8443/img/logo.png?v=2", ["'self'", "https://cdn.example.com:8443"]),
    ],
)
async def test_the_page_has_strict_security_headers(
    open_site: SiteFactory, logo: str | None, images: list[str]
) -> None:
    site = await open_site(logo_url=logo)
    answer = await site.get(f"/status/{SLUG}")
    csp = policy(answer.headers["Content-Security-Policy"])
    assert csp["default-src"] == ["'none'"] and "script-src" not in csp, csp
    assert "'unsafe-inline'" not in answer.headers["Content-Security-Policy"]
    assert csp["style-src"] == ["'self'"] and csp["img-src"] == images, csp
    assert csp["frame-ancestors"] == ["'none'"] and csp["base-uri"] == ["'none'"], csp
    assert answer.headers["X-Content-Type-Options"] == "nosniff"
    assert answer.headers["X-Frame-Options"] == "DENY"
    # The page has no script nor inline style for that policy to refuse.
    tree = parse(answer.text)
    assert not tree.find_all("script") and not tree.find_all("style")
    assert not [e.tag for e in tree.iter() if "style" in e.attrs or any(a.startswith("on") for a in e.attrs)]
    logos = [e.attrs["src"] for e in tree.find_all("img", "logo")]
    assert logos == ([logo] if logo else []), logos

    # The project's own grader, as for a page served over https (HSTS counts only there).
    headers = {name.lower(): answer.headers.getall(name) for name in answer.headers}
    report = security_headers.grade(headers, https=True)
    assert security_headers.at_least(report.grade, "A"), report.as_json()
    # And a page that does not exist is no weaker.
    missing = await site.get("/status/nothing-here")
    assert missing.status == 404 and "script-src" not in policy(missing.headers["Content-Security-Policy"])


# -- a page's own domain, JSON and Atom --------------------------------------------------------


async def test_a_pages_own_domain_serves_it_at_the_root(open_site: SiteFactory) -> None:
    site = await open_site(domain=DOMAIN)
    page = await site.get(f"/status/{SLUG}")
    for host in (DOMAIN, f"{DOMAIN}:8443", "Status.Example.COM", f"{DOMAIN}."):
        root = await site.get("/", Host=host)
        assert (root.status, root.headers["ETag"], root.body) == (200, page.headers["ETag"], page.body), host
        assert root.headers["Content-Security-Policy"] == page.headers["Content-Security-Policy"], host
    # Every other host's root is the dashboard's (its sign-in or first visit), never the page.
    for host in ("other.example.com", "example.com", "127.0.0.1", "[::1]:80", "status.example.com.evil.com"):
        elsewhere = await site.get("/", Host=host)
        assert elsewhere.body != page.body and b'class="brand"' in elsewhere.body, host
    # Nor the dashboard: its pages are the api's own address's, never a customer-facing domain's.
    for path in ("/signin", "/setup", "/monitors/new", "/channels"):
        assert (await site.get(path, Host=DOMAIN)).status == 404, path
        assert (await site.get(path)).status in (200, 303), path
    # Under its own domain only the page itself: not another page (of any account) by slug.
    other = await site.api.post(
        "/api/v1/status-pages",
        json={"slug": "other", "title": "Log in again", "groups": [{"name": "g", "tags": ["x"]}]},
    )
    assert other.status == 201, other
    assert (await site.get("/status/other", Host=DOMAIN)).status == 404
    assert (await site.get("/status/other.json", Host=DOMAIN)).status == 404
    assert (await site.get(f"/status/{SLUG}", Host=DOMAIN)).status == 200
    assert (await site.get("/status/other")).status == 200  # at the api's own address, as always
    # Given up by the owner, the domain serves the page no more, at once.
    changed = await site.api.patch(f"/api/v1/status-pages/{site.page_id}", json={"domain": None})
    assert changed.status == 200, changed
    assert b'class="brand"' in (await site.get("/", Host=DOMAIN)).body  # the dashboard's


async def test_the_json_is_for_anyone_and_the_feed_has_an_entry_per_incident(
    open_site: SiteFactory, db: asyncpg.Connection
) -> None:
    site = await open_site(domain=DOMAIN)
    await add_incident(db, site.monitor_id, await db.fetchval("SELECT now() - interval '5 minutes'"), None)
    data = await site.get(f"/status/{SLUG}.json")
    assert data.headers["Access-Control-Allow-Origin"] == "*"
    assert data.headers["Content-Type"] == "application/json; charset=utf-8"
    assert "Access-Control-Allow-Origin" not in (await site.get(f"/status/{SLUG}")).headers
    incidents = data.json["incidents"]
    assert [(i["monitor"], i["ongoing"]) for i in incidents] == [(NAME, True), (NAME, False), (NAME, False)]

    feed = await site.get(f"/status/{SLUG}/feed.atom")
    assert feed.status == 200 and feed.headers["Content-Type"] == "application/atom+xml; charset=utf-8"
    assert feed.headers["Access-Control-Allow-Origin"] == "*"
    root = ET.fromstring(feed.body)
    assert root.tag == f"{ATOM}feed"
    entries = root.findall(f"{ATOM}entry")
    assert len(entries) == len(incidents) == 3
    ids = [root.findtext(f"{ATOM}id", "")] + [e.findtext(f"{ATOM}id", "") for e in entries]
    for value in ids:
        assert (
            value.startswith("urn:uuid:") and str(uuid.UUID(value.removeprefix("urn:uuid:"))) == value[9:]
        ), value
    assert len(set(ids)) == len(ids), ids
    titles = [e.findtext(f"{ATOM}title") for e in entries]
    assert titles == [f"{NAME} is down", f"{NAME} was down for 30 min", f"{NAME} was down for 1 h 0 min"]
    assert all(e.findtext(f"{ATOM}published") and e.findtext(f"{ATOM}updated") for e in entries)
    assert b"<script>" not in feed.body
    # The same ids whichever host the feed is read from.
    elsewhere = ET.fromstring((await site.get(f"/status/{SLUG}/feed.atom", Host=DOMAIN)).body)
    assert [e.findtext(f"{ATOM}id") for e in elsewhere.findall(f"{ATOM}entry")] == ids[1:]


# -- a database that goes away -----------------------------------------------------------------


async def test_with_the_database_down_the_page_built_before_is_served(
    open_site: SiteFactory, database_url: str
) -> None:
    upstream = urlsplit(database_url)
    proxy = await TcpProxy(upstream.hostname or "127.0.0.1", upstream.port or 5432).start()
    try:
        through = upstream._replace(netloc=f"{upstream.netloc.rpartition('@')[0]}@127.0.0.1:{proxy.port}")
        site = await open_site(cache_seconds=1, env={"MONITOR_DATABASE_URL": through.geturl()})
        before = await site.get(f"/status/{SLUG}")
        assert before.status == 200, before
        proxy.cut()
        _, pages = builds(site)

        async def rebuilt_and_failed() -> bool:
            answer = await site.get(f"/status/{SLUG}")
            assert (answer.status, answer.body) == (200, before.body), answer
            # A build starts only when none is running: a second one means the first has failed.
            return builds(site)[1] >= pages + 2

        # Past the period a request starts a rebuild, which fails; the page before is still served.
        await wait_for(rebuilt_and_failed, timeout=10, message="rebuilds were tried with the database down")
        for _ in range(3):
            answer = await site.get(f"/status/{SLUG}")
            assert (answer.status, answer.headers["ETag"]) == (200, before.headers["ETag"])
        proxy.restore()
    finally:
        await proxy.close()


async def test_a_request_without_host_is_the_dashboard_at_the_root_without_a_lookup(
    open_site: SiteFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """aiohttp's request.host looks the machine's own name up (socket.getfqdn, blocking the
    loop) when there is no Host header; the root reads the header itself."""
    site = await open_site(domain=DOMAIN)
    looked_up: list[str] = []
    monkeypatch.setattr(socket, "getfqdn", lambda name="": looked_up.append(name) or "host.invalid")
    host, port = site.served.base_url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(b"GET / HTTP/1.0\r\n\r\n")
        await writer.drain()
        head = await asyncio.wait_for(reader.readline(), 5)
    finally:
        writer.close()
    assert head.startswith(b"HTTP/1.0 303"), head  # to the dashboard's sign-in
    assert looked_up == []
