"""What anyone may read, without a key: status pages (``/status/<slug>``, its ``.json`` and
``/feed.atom``, its incident posts' permalinks ``/posts/<id>``, and ``/`` of a page's own
domain), the static files (stylesheet, favicons),
``/robots.txt``, and badges (``/badge/<token>/status.svg``, ``/uptime/30d.svg``,
``/response/24h.svg``).

Every answer comes from ``monitor.status.service``'s caches or ``monitor.status.assets``, with
an ETag (a 304 for a client that has it), ``Cache-Control`` (for what is left of a page's
cache period; a year for a static file at its versioned URL), and the compressed copy a
client takes (gzip; brotli too for static files). Pages carry strict security headers: a
Content-Security-Policy with no script at all, images only from the api and the page's logo
and favicon, no framing.
"""

from __future__ import annotations

import functools
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web

from monitor.api.context import POOL, SETTINGS
from monitor.api.errors import error_response
from monitor.api.guard import METRICS
from monitor.dashboard import pages_overview as dashboard
from monitor.domain.schemas.status_pages import SLUG
from monitor.status import assets, badges
from monitor.status.bodies import Body, body, send
from monitor.status.service import PUBLIC, StatusDesk
from monitor.status.view import WINDOWS

SECURITY = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Strict-Transport-Security": "max-age=31536000",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=(), interest-cohort=()",
    "Cross-Origin-Opener-Policy": "same-origin",
}
# connect-src 'self': no script may run to use it; it lets tools that read the page's own
# robots.txt from within the page (Lighthouse's audit does) reach it.
PAGE_CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self'{images}; connect-src 'self'; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'"
)
# An SVG opened on its own is a document: no script, its own inline styles only.
BADGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors *"
BADGE_KINDS = ("uptime", "response")
_TOKEN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_HOST = re.compile(r"^[a-z0-9.-]{1,253}$")
_LABELS = {"status": "status", "uptime": "uptime {window}", "response": "response time {window}"}
YEAR = "public, max-age=31536000, immutable"
DAY = "public, max-age=86400"


def fresh_for(seconds: float) -> str:
    """A cached answer's Cache-Control: a browser or proxy keeps it for what is left of its
    period (whole seconds), not a period more, so no copy outlives the page's bound."""
    return f"public, max-age={int(seconds)}"


def request_host(request: web.Request) -> str:
    """The Host header's name, lower case, without port or final dot; "" without one (not
    aiohttp's request.host, which then looks the machine's own name up, blocking the loop)."""
    host = request.headers.get("Host", "").strip().lower()
    if host.startswith("["):  # an IPv6 literal: no page's domain
        return ""
    name = host.rpartition(":")[0] if ":" in host else host
    return name.rstrip(".")


@web.middleware
async def page_domains_middleware(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """On a status page's own domain, the page and the public files only: not the dashboard
    (a sign-in form on a customer-facing domain would be a look-alike of somebody else's, and
    its forms fail the CSRF rule there, whose site is MONITOR_PUBLIC_URL's)."""
    served_by = getattr(request.match_info.handler, "__module__", "")
    if served_by.startswith("monitor.dashboard.") and (host := request_host(request)):
        if await request.app[PUBLIC].slug_for_domain(host) is not None:
            return _missing_page()
    return await handler(request)


def _missing_page() -> web.Response:
    return web.Response(
        status=404,
        text="<!doctype html><title>Not found</title><p>There is no status page here.</p>",
        content_type="text/html",
        headers={**SECURITY, "Content-Security-Policy": PAGE_CSP.format(images="")},
    )


def _page_headers(row: Mapping[str, Any], indexed: bool) -> dict[str, str]:
    images = "".join(dict.fromkeys(image_source(row[f]) for f in ("logo_url", "favicon_url")))
    headers = {**SECURITY, "Content-Security-Policy": PAGE_CSP.format(images=images)}
    if not indexed:
        headers["X-Robots-Tag"] = "noindex"
    return headers


def image_source(url: str | None) -> str:
    """An image's origin as a CSP source (" https://host[:port]", the host in ASCII), or ""."""
    if not url:
        return ""
    parts = urlsplit(url)
    host = (parts.hostname or "").encode("idna").decode("ascii")
    if not _HOST.match(host):  # validated when stored; a row from elsewhere adds no source
        return ""
    return f" https://{host}" + (f":{parts.port}" if parts.port else "")


async def _serve(request: web.Request, slug: str, kind: str) -> web.Response:
    desk = request.app[PUBLIC]
    owner = await desk.slug_for_domain(request_host(request))
    # On a page's own domain only that page is served: not another account's page under it.
    found = SLUG.match(slug) and owner in (None, slug)
    page = await desk.page(slug) if found else None
    if page is None:
        if kind == "json":
            return error_response(404, "not_found", "status page not found")
        return _missing_page()
    headers = _page_headers(page.row, request.app[SETTINGS].status_pages_indexed)
    if kind != "html":
        headers["Access-Control-Allow-Origin"] = "*"  # public data, for others' dashboards
    return send(request, getattr(page, kind), headers, fresh_for(desk.pages.remaining(slug)))


async def post_page(request: web.Request) -> web.Response:
    """An incident post's permalink, ``/status/<slug>/posts/<id>``, cached as pages are."""
    desk = request.app[PUBLIC]
    slug, raw = request.match_info["slug"], request.match_info["post_id"]
    owner = await desk.slug_for_domain(request_host(request))
    found = SLUG.match(slug) and owner in (None, slug) and raw.isascii() and raw.isdigit() and len(raw) <= 18
    post = await desk.post(slug, int(raw)) if found else None
    if post is None:
        return _missing_page()
    headers = _page_headers(post.row, request.app[SETTINGS].status_pages_indexed)
    return send(request, post.html, headers, fresh_for(desk.posts.remaining((slug, int(raw)))))


async def status_page(request: web.Request) -> web.Response:
    return await _serve(request, request.match_info["slug"], "html")


async def status_json(request: web.Request) -> web.Response:
    return await _serve(request, request.match_info["slug"], "json")


async def status_feed(request: web.Request) -> web.Response:
    return await _serve(request, request.match_info["slug"], "atom")


async def domain_page(request: web.Request) -> web.Response | None:
    """``/`` of a host name a page claims as its own domain: that page; None on any other host
    (where ``/`` is the dashboard's)."""
    slug = await request.app[PUBLIC].slug_for_domain(request_host(request))
    if slug is None:
        return None
    return await _serve(request, slug, "html")


async def static_file(request: web.Request) -> web.Response:
    """A static file: cached for a year at this version's URL (its content never changes),
    for a day at its plain one."""
    asset = assets.ASSETS[request.path]
    cache = YEAR if request.query.get("v") == asset.version else DAY
    return send(request, asset.body, {"X-Content-Type-Options": "nosniff"}, cache)


async def favicon(request: web.Request) -> web.StreamResponse:
    """``/favicon.ico``: on a page's own domain, that page's icon when it names one (a redirect
    to it); the default icon everywhere else."""
    directory = await request.app[PUBLIC].directory.get(None)
    slug = directory.by_domain.get(request_host(request))
    row = directory.by_slug.get(slug) if slug is not None else None
    own = row["favicon_url"] if row is not None else None
    if own:
        raise web.HTTPFound(own, headers={"Cache-Control": DAY})
    return await static_file(request)


async def robots(request: web.Request) -> web.Response:
    text = assets.robots_txt(request.app[SETTINGS].status_pages_indexed)
    return send(request, _robots(text), {"X-Content-Type-Options": "nosniff"}, "public, max-age=3600")


@functools.lru_cache(maxsize=2)
def _robots(text: str) -> Body:
    return body(text, "text/plain; charset=utf-8")


async def _badge(request: web.Request, kind: str, window: str) -> web.Response:
    label = badges.clean_label(request.query.get("label"), _LABELS[kind].format(window=window))
    style = request.query.get("style", "flat")
    if style not in badges.STYLES:
        return _badge_error(400, f"style must be one of {', '.join(badges.STYLES)}", label)
    token = request.match_info["token"]
    desk = request.app[PUBLIC]
    figures = await desk.badge(token, kind, window) if _TOKEN.match(token) else None
    if figures is None:
        return _badge_error(404, "not found", label)
    svg = render_badge(label, figures.message, figures.color, style)
    headers = {"Content-Security-Policy": BADGE_CSP, "X-Content-Type-Options": "nosniff"}
    return send(request, svg, headers, fresh_for(desk.badges.remaining((token, kind, window))))


# A badge's SVG, ETag and gzip copy took 27 µs, an eighth of a badge request's CPU (bench/status.py):
# made once per label, message, colour and style.
@functools.lru_cache(maxsize=1024)
def render_badge(label: str, message: str, color: str, style: str) -> Body:
    return body(badges.render(label, message, color, style), "image/svg+xml; charset=utf-8")


def _badge_error(status: int, message: str, label: str) -> web.Response:
    return web.Response(
        status=status,
        body=badges.render(label, message, "lightgrey").encode(),
        headers={
            "Content-Type": "image/svg+xml; charset=utf-8",
            "Cache-Control": "no-cache",
            "Content-Security-Policy": BADGE_CSP,
            "X-Content-Type-Options": "nosniff",
        },
    )


async def status_badge(request: web.Request) -> web.Response:
    return await _badge(request, "status", "")


async def window_badge(request: web.Request) -> web.Response:
    kind, window = request.match_info["kind"], request.match_info["window"]
    if kind not in BADGE_KINDS:
        return _badge_error(404, f"kind must be one of {', '.join(BADGE_KINDS)}", "badge")
    if window not in WINDOWS:
        return _badge_error(404, f"window must be one of {', '.join(WINDOWS)}", kind)
    return await _badge(request, kind, window)


async def root(request: web.Request) -> web.StreamResponse:
    """``/``: a status page on the domain it claims, the dashboard on every other host."""
    own = await domain_page(request)
    if own is not None:
        return own
    return await dashboard.overview_page(request)


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/", root)
    router.add_get("/robots.txt", robots)
    router.add_get(assets.FAVICON_ICO.path, favicon)
    for path in (assets.CSS.path, assets.FAVICON_SVG.path):
        router.add_get(path, static_file)
    # Anything in the slot is taken and answered in the route's own kind (a page's 404 is a
    # page, a badge's an image), not as the API's JSON 404 for no such endpoint.
    router.add_get("/status/{slug:[^/]+}.json", status_json)
    router.add_get("/status/{slug:[^/]+}/feed.atom", status_feed)
    router.add_get("/status/{slug:[^/]+}/posts/{post_id:[^/]+}", post_page)
    router.add_get("/status/{slug:[^/]+}", status_page)
    router.add_get("/badge/{token:[^/]+}/status.svg", status_badge)
    router.add_get("/badge/{token:[^/]+}/{kind:[^/]+}/{window:[^/]+}.svg", window_badge)


def setup(app: web.Application) -> None:
    """The desk and its routes; the desk is made when the pool is there and closed before it."""

    async def desk(app: web.Application) -> AsyncIterator[None]:
        app[PUBLIC] = StatusDesk(app[POOL], app[SETTINGS].status_cache_seconds, app[METRICS].registry)
        yield
        await app[PUBLIC].close()

    app.cleanup_ctx.append(desk)
    add_routes(app.router)
