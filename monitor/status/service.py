"""The public side's memory: status pages and badges, each built about once per period.

Four caches (``cache.Fresh``), each with its own key:
- the directory: every page's row by slug and by custom domain, read in one query per
  period, so a request for a page that does not exist costs no query at all;
- each page: its data read (``data.gather``, one statement) and rendered to HTML, JSON and
  Atom, each representation with its ETag and a gzip copy, once per period;
- each incident post's permalink page, by (slug, post id): the page's row, the post, its
  updates and the names of what it affects in one statement; a post that does not exist is
  remembered as such (a bounded number of keys, the least recently used forgotten first);
- each badge's figures (status, or uptime or response time over a window) by badge token;
  a token that does not exist is remembered as such, the least recently used forgotten first.
A visitor's request then costs a dictionary look-up and a write of ready bytes.

Builds and the SQL statements they issue are counted (``monitor_status_builds_total`` and
``monitor_status_queries_total`` by ``what``: page, directory, badge) on the api's /metrics:
what bench/status.py reads to show one build per page per period.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
from aiohttp import web
from prometheus_client import CollectorRegistry, Counter

from monitor.domain.uptime import maintenance_spans, uptimes
from monitor.status import badges, data, render, view
from monitor.status.bodies import Body, body
from monitor.status.cache import Fresh

# The pages kept in memory weigh at most this (HTML, JSON and Atom, with their gzip copies): a
# page of 250 monitors weighs about 4.5 MB, one of 20 about 0.4 MB.
PAGE_CACHE_BYTES = 256 * 1024 * 1024
# Every badge of a token: (kind, window).
BADGES = (("status", ""), *((kind, window) for kind in ("uptime", "response") for window in view.WINDOWS))
MICROSECOND = timedelta(microseconds=1)


@dataclass(frozen=True)
class Page:
    row: Mapping[str, Any]
    html: Body
    json: Body
    atom: Body


@dataclass(frozen=True)
class PostPage:
    row: Mapping[str, Any]  # the status page's
    html: Body


@dataclass(frozen=True)
class Directory:
    by_slug: Mapping[str, Mapping[str, Any]]
    by_domain: Mapping[str, str]


@dataclass(frozen=True)
class BadgeFigures:
    """What a badge says: a (message, colour) pair."""

    message: str
    color: str


class StatusMetrics:
    """Builds and their statements, by what was built; registered nowhere without a registry."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.builds = Counter(
            "monitor_status_builds", "Public builds (page, directory, badge)", ["what"], registry=registry
        )
        self.queries = Counter(
            "monitor_status_queries", "SQL statements issued by public builds", ["what"], registry=registry
        )


class StatusDesk:
    def __init__(self, pool: asyncpg.Pool, ttl: float, registry: CollectorRegistry | None = None) -> None:
        self._pool = pool
        self.ttl = ttl
        self.metrics = StatusMetrics(registry)
        self.directory: Fresh[None, Directory] = Fresh(self._directory, ttl, max_keys=1)
        self.pages: Fresh[str, Page | None] = Fresh(
            self._page, ttl, max_keys=10_000, weigh=_weight, max_weight=PAGE_CACHE_BYTES
        )
        self.badges: Fresh[tuple[str, str, str], BadgeFigures | None] = Fresh(
            self._badge, ttl, max_keys=20_000
        )
        self.posts: Fresh[tuple[str, int], PostPage | None] = Fresh(self._post, ttl, max_keys=10_000)

    def forget(self, *slugs: str) -> None:
        """A page its owner just changed: read again on the next request."""
        self.directory.forget(None)
        self.pages.forget(*slugs)

    def forget_post(self, slug: str, post_id: int) -> None:
        """A post just made, changed or deleted: its permalink is read again on its next request."""
        self.posts.forget((slug, post_id))

    def forget_badge(self, token: str) -> None:
        """A badge token was replaced: the old one must stop answering now, not a period later."""
        self.badges.forget(*((token, kind, window) for kind, window in BADGES))

    async def page(self, slug: str) -> Page | None:
        if slug not in (await self.directory.get(None)).by_slug:
            return None
        return await self.pages.get(slug)

    async def post(self, slug: str, post_id: int) -> PostPage | None:
        if slug not in (await self.directory.get(None)).by_slug:
            return None
        return await self.posts.get((slug, post_id))

    async def slug_for_domain(self, host: str) -> str | None:
        return (await self.directory.get(None)).by_domain.get(host)

    async def badge(self, token: str, kind: str, window: str) -> BadgeFigures | None:
        return await self.badges.get((token, kind, window))

    async def close(self) -> None:
        for cache in (self.directory, self.pages, self.posts, self.badges):
            await cache.close()

    # -- builds ---------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _connection(self, what: str) -> AsyncIterator[asyncpg.Connection]:
        """A pooled connection for one build of ``what``, its statements counted."""
        self.metrics.builds.labels(what).inc()
        queries = self.metrics.queries.labels(what)

        def count(_: asyncpg.connection.LoggedQuery) -> None:
            queries.inc()

        async with self._pool.acquire() as conn:
            conn.add_query_logger(count)
            try:
                yield conn
            finally:
                conn.remove_query_logger(count)

    async def _directory(self, _: None) -> Directory:
        async with self._connection("directory") as conn:
            rows = await conn.fetch("SELECT * FROM status_pages")
        return Directory(
            {r["slug"]: r for r in rows}, {r["domain"]: r["slug"] for r in rows if r["domain"] is not None}
        )

    async def _page(self, slug: str) -> Page | None:
        # The page's row is read afresh with its data: the directory only says it exists.
        async with self._connection("page") as conn:
            raw = await data.gather(conn, slug, datetime.now(UTC))
        if raw is None:
            return None
        # The arithmetic, rendering and compression of a large page take tens of milliseconds:
        # in a thread, the event loop goes on answering meanwhile.
        return await asyncio.to_thread(_page_of, raw)

    async def _post(self, key: tuple[str, int]) -> PostPage | None:
        slug, post_id = key
        async with self._connection("post") as conn:
            row = await conn.fetchrow(data.POST_SQL, slug, post_id)
        if row is None:
            return None
        return _post_page_of(row)

    async def _badge(self, key: tuple[str, str, str]) -> BadgeFigures | None:
        token, kind, window = key
        async with self._connection("badge") as conn:
            monitor = await conn.fetchrow(
                """SELECT m.id, m.created_at, m.paused, coalesce(s.status, 'unknown') AS status
                   FROM monitors m LEFT JOIN monitor_state s ON s.monitor_id = m.id
                   WHERE m.badge_token = $1""",
                token,
            )
            if monitor is None:
                return None
            now: datetime = await conn.fetchval("SELECT now()")
            if kind == "status":
                return BadgeFigures(*badges.status_badge(await _status(conn, monitor, now)))
            start = now - view.WINDOWS[window]
            if kind == "uptime":
                found = await uptimes(conn, [(monitor["id"], monitor["created_at"])], start, now, now)
                return BadgeFigures(*badges.uptime_badge(found[monitor["id"]].percent))
            # The average of the successful checks (the rollups' latencies are theirs only).
            average, checks = await conn.fetchrow(
                """SELECT sum(latency_sum) / nullif(sum(latency_n), 0), coalesce(sum(checks), 0)
                   FROM checks_hourly WHERE monitor_id = $1 AND hour >= $2""",
                monitor["id"],
                start,
            )
            return BadgeFigures(*badges.latency_badge(average, checks > 0))


async def _status(conn: asyncpg.Connection, monitor: Mapping[str, Any], now: datetime) -> str:
    """A badge's status as the monitor's status page shows it (``view.status_of``): paused, or
    in maintenance while a window that covers it is open, else what its checks say."""
    if monitor["paused"]:
        return "paused"
    spans = await maintenance_spans(conn, [monitor["id"]], now, now + MICROSECOND)
    return view.status_of(
        monitor, any(e is not None and s <= now < e for s, e in spans.get(monitor["id"], ()))
    )


def _weight(page: Page | None) -> int:
    if page is None:
        return 0
    return sum(len(b.content) + sum(len(c) for _, c in b.encoded) for b in (page.html, page.json, page.atom))


def _page_of(raw: data.Raw) -> Page:
    """The page's three representations from what was read (pure)."""
    row = raw.page
    model = view.build(data.assemble(raw))
    base = f"/status/{row['slug']}"
    return Page(
        row,
        body(render.html(model, base), "text/html; charset=utf-8"),
        body(render.as_json(model), "application/json; charset=utf-8"),
        body(render.atom(model, base, row["id"]), "application/atom+xml; charset=utf-8"),
    )


def _post_page_of(row: Mapping[str, Any]) -> PostPage:
    """A post's permalink page from the row ``data.POST_SQL`` read (pure)."""
    page, post, updates, shown = data.post_parts(row)
    model = view.post_of(post, updates, page["id"], shown, {g["name"] for g in page["groups"]})
    base = f"/status/{page['slug']}"
    return PostPage(page, body(render.post_html(page, model, base), "text/html; charset=utf-8"))


PUBLIC = web.AppKey("public", StatusDesk)
