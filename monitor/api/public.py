"""What anyone may read, without a key: status pages (``/status/<slug>``, its ``.json`` and
``/feed.atom``, and ``/`` of a page's own domain), the stylesheet, and badges
(``/badge/<token>/status.svg``, ``/uptime/30d.svg``, ``/response/24h.svg``).

Every answer comes from ``monitor.status.service``'s caches, with an ETag (a 304 for a
client that has it), ``Cache-Control`` for what is left of its cache period, and gzip for a
client that takes it. Pages carry strict security headers: a Content-Security-Policy with no script at all,
images only from the api and the page's logo, no framing.
"""

from __future__ import annotations

import functools
import re
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

from aiohttp import web

from monitor.api.context import POOL, SETTINGS
from monitor.api.errors import error_response
from monitor.api.guard import METRICS
from monitor.api.schemas_status import SLUG
from monitor.status import badges, render
from monitor.status.service import PUBLIC, Body, StatusDesk, body
from monitor.status.view import WINDOWS

SECURITY = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Strict-Transport-Security": "max-age=31536000",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=(), interest-cohort=()",
    "Cross-Origin-Opener-Policy": "same-origin",
}
PAGE_CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self'{logo}; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)
# An SVG opened on its own is a document: no script, its own inline styles only.
BADGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors *"
BADGE_KINDS = ("uptime", "response")
_TOKEN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_HOST = re.compile(r"^[a-z0-9.-]{1,253}$")
_LABELS = {"status": "status", "uptime": "uptime {window}", "response": "response time {window}"}


def _send(request: web.Request, body: Body, headers: dict[str, str], fresh_for: float) -> web.Response:
    """``body`` with its ETag and the cache headers: 304 when the client has it, gzipped when
    the client takes gzip. A browser or proxy may keep it for what is left of its period
    (``fresh_for`` seconds, whole ones), not a period more: no copy outlives the bound."""
    max_age = int(fresh_for)
    gzipped = body.gzipped is not None and _takes_gzip(request.headers.get("Accept-Encoding", ""))
    # The gzip copy is another representation: its own (strong) ETag.
    etag = body.etag[:-1] + '-gz"' if gzipped else body.etag
    common = {
        **headers,
        "ETag": etag,
        "Cache-Control": f"public, max-age={max_age}",
        "Vary": "Accept-Encoding",
    }
    if etag in request.headers.get("If-None-Match", ""):
        return web.Response(status=304, headers=common)
    if gzipped:
        return web.Response(
            body=body.gzipped,
            headers={**common, "Content-Type": body.content_type, "Content-Encoding": "gzip"},
        )
    return web.Response(body=body.content, headers={**common, "Content-Type": body.content_type})


def _takes_gzip(accept: str) -> bool:
    """Whether an Accept-Encoding takes gzip (not with q=0)."""
    for item in accept.lower().split(","):
        coding, _, params = item.partition(";")
        if coding.strip() in ("gzip", "x-gzip"):
            return params.replace(" ", "") not in ("q=0", "q=0.0", "q=0.00", "q=0.000")
    return False


def request_host(request: web.Request) -> str:
    """The Host header's name, lower case, without port or final dot; "" without one (not
    aiohttp's request.host, which then looks the machine's own name up, blocking the loop)."""
    host = request.headers.get("Host", "").strip().lower()
    if host.startswith("["):  # an IPv6 literal: no page's domain
        return ""
    name = host.rpartition(":")[0] if ":" in host else host
    return name.rstrip(".")


def _missing_page() -> web.Response:
    return web.Response(
        status=404,
        text="<!doctype html><title>Not found</title><p>There is no status page here.</p>",
        content_type="text/html",
        headers={**SECURITY, "Content-Security-Policy": PAGE_CSP.format(logo="")},
    )


def _page_headers(logo_url: str | None) -> dict[str, str]:
    return {**SECURITY, "Content-Security-Policy": PAGE_CSP.format(logo=logo_source(logo_url))}


def logo_source(logo_url: str | None) -> str:
    """The logo's origin as a CSP source (" https://host[:port]", the host in ASCII), or ""."""
    if not logo_url:
        return ""
    parts = urlsplit(logo_url)
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
    headers = _page_headers(page.row["logo_url"])
    if kind != "html":
        headers["Access-Control-Allow-Origin"] = "*"  # public data, for others' dashboards
    return _send(request, getattr(page, kind), headers, desk.pages.remaining(slug))


async def status_page(request: web.Request) -> web.Response:
    return await _serve(request, request.match_info["slug"], "html")


async def status_json(request: web.Request) -> web.Response:
    return await _serve(request, request.match_info["slug"], "json")


async def status_feed(request: web.Request) -> web.Response:
    return await _serve(request, request.match_info["slug"], "atom")


async def domain_root(request: web.Request) -> web.Response:
    """``/`` of a host name a page claims as its own domain; a 404 anywhere else."""
    slug = await request.app[PUBLIC].slug_for_domain(request_host(request))
    if slug is None:
        raise web.HTTPNotFound()
    return await _serve(request, slug, "html")


_CSS = Body(render.CSS, None, f'"{render.CSS_HASH}"', "text/css; charset=utf-8")


async def stylesheet(request: web.Request) -> web.Response:
    response = _send(request, _CSS, {"X-Content-Type-Options": "nosniff"}, request.app[PUBLIC].ttl)
    if request.query.get("v") == render.CSS_HASH:  # this version's URL never changes content
        response.headers["Cache-Control"] = "public, max-age=31536000, immutable"
    return response


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
    return _send(request, svg, headers, desk.badges.remaining((token, kind, window)))


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


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/", domain_root)
    router.add_get(render.CSS_PATH, stylesheet)
    # Anything in the slot is taken and answered in the route's own kind (a page's 404 is a
    # page, a badge's an image), not as the API's JSON 404 for no such endpoint.
    router.add_get("/status/{slug:[^/]+}.json", status_json)
    router.add_get("/status/{slug:[^/]+}/feed.atom", status_feed)
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
