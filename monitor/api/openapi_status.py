"""The OpenAPI description of status pages: their management under ``/api/v1/status-pages``,
and what anyone may read (the pages, their feeds, badges), which answers HTML, Atom or SVG."""

from __future__ import annotations

from typing import Any

from monitor.api.openapi import CURSOR, JSON, LIMIT, LOCATION, _Builder, _id, _json, _links, _query
from monitor.status.badges import STYLES
from monitor.status.view import WINDOWS

EXAMPLE = {"slug": "acme", "title": "Acme status", "groups": [{"name": "Website", "tags": ["prod"]}]}
BADGE_TOKEN = {"type": "string"}
SHOWN = (
    ("/status/{slug}", "getStatusPageHtml", "A status page (HTML, no script)", "text/html"),
    ("/status/{slug}.json", "getStatusPageJson", "A status page's data", JSON),
    ("/status/{slug}/feed.atom", "getStatusPageFeed", "A status page's incidents", "application/atom+xml"),
)
STATIC = (
    ("/static/status.css", "getStatusCss", "The status pages' stylesheet", "text/css"),
    ("/static/favicon.svg", "getFaviconSvg", "The default icon of status pages", "image/svg+xml"),
)


def add_status_pages(b: _Builder) -> None:
    r, page_id = b.refs, _id("status page")
    # fmt: off
    b.add("post", "/api/v1/status-pages", "createStatusPage", "Create a public status page",
          tag="status-pages", errors=(409,), body=("StatusPageCreate", EXAMPLE),
          ok={201: {**_json(r["StatusPage"], "The page, as created.", LOCATION),
                    "links": _links("getStatusPage", "updateStatusPage", "deleteStatusPage")}})
    b.add("get", "/api/v1/status-pages", "listStatusPages", "List status pages", tag="status-pages",
          ok={200: _json(r["StatusPageList"], "One page of status pages.")}, errors=(400,),
          parameters=(LIMIT, CURSOR))
    b.add("get", "/api/v1/status-pages/{id}", "getStatusPage", "Read a status page", tag="status-pages",
          ok={200: _json(r["StatusPage"], "The status page.")}, errors=(404,), parameters=(page_id,))
    b.add("patch", "/api/v1/status-pages/{id}", "updateStatusPage",
          "Change a status page (only the fields given; groups replaces every group)",
          tag="status-pages", ok={200: _json(r["StatusPage"], "The page, as changed.")},
          errors=(404, 409), parameters=(page_id,), body=("StatusPagePatch", {"show_urls": True}))
    b.add("delete", "/api/v1/status-pages/{id}", "deleteStatusPage", "Delete a status page",
          tag="status-pages", ok={204: {"description": "Deleted."}}, errors=(404,), parameters=(page_id,))
    b.add("post", "/api/v1/monitors/{id}/badge-token", "rotateBadgeToken",
          "Give a monitor a new badge token (its old badge URLs stop working at once)", tag="monitors",
          ok={200: _json(r["BadgeToken"], "The new badge URL.")}, errors=(404,), parameters=(_id("monitor"),))
    slug = {"name": "slug", "in": "path", "required": True, "description": "the page's slug",
            "schema": {"type": "string"}}
    missing = {"description": "No such status page.",
               "content": {"text/html": {"schema": {"type": "string"}}}}
    for path, op, summary, media in SHOWN:
        shown = {"description": f"{summary}; cached (ETag, Cache-Control).",
                 "content": {media: {"schema": {"type": "object" if media == JSON else "string"}}}}
        b.add("get", path, op, summary, tag="public", public=True, errors=(503,), parameters=(slug,),
              ok={200: shown, 304: {"description": "Not modified (If-None-Match)."},
                  404: _json(r["Error"], "No such status page.") if media == JSON else missing})
    html = {"content": {"text/html": {"schema": {"type": "string"}}}}
    b.add("get", "/", "getDomainPage",
          "The status page whose custom domain is the Host header; elsewhere the dashboard",
          tag="public", public=True, errors=(503,),
          ok={200: {**html, "description": "The page (or, signed in, the dashboard's overview)."},
              303: {"description": "On any other host, without a session: to the dashboard's sign-in."},
              304: {"description": "Not modified (If-None-Match)."}})
    for path, op, summary, media in STATIC:
        b.add("get", path, op, summary, tag="public", public=True,
              ok={200: {"description": f"{summary} (cached for a year at its ?v= URL; brotli or gzip "
                                       "for a client that takes it, where that saves bytes).",
                        "content": {media: {"schema": {"type": "string"}}}},
                  304: {"description": "Not modified."}})
    b.add("get", "/favicon.ico", "getFavicon", "The default icon; on a page's own domain, that page's",
          tag="public", public=True,
          ok={200: {"description": "The default icon (ICO, 16 and 32 px).",
                    "content": {"image/x-icon": {"schema": {"type": "string", "format": "binary"}}}},
              302: {"description": "On a page's own domain whose page names a favicon_url: to it."},
              304: {"description": "Not modified."}})
    b.add("get", "/robots.txt", "getRobotsTxt", "What crawlers may read", tag="public", public=True,
          ok={200: {"description": "Status pages allowed (unless MONITOR_STATUS_PAGES_INDEXED is false); "
                                   "the API, badges and ping URLs disallowed.",
                    "content": {"text/plain": {"schema": {"type": "string"}}}},
              304: {"description": "Not modified."}})
    token: dict[str, Any] = {"name": "token", "in": "path", "required": True, "schema": BADGE_TOKEN,
             "description": "the monitor's badge token (from its badge_url)"}
    svg: dict[str, Any] = {"content": {"image/svg+xml": {"schema": {"type": "string"}}}}
    query = (_query("label", {"type": "string", "maxLength": 200}, "the left-hand text"),
             _query("style", {"type": "string", "enum": list(STYLES), "default": "flat"}, "the look"))
    badge_ok: dict[int, dict[str, Any]] = {
                200: {**svg, "description": "The badge."}, 304: {"description": "Not modified."},
                400: {**svg, "description": "A style that does not exist (the badge says so)."},
                404: {**svg, "description": "No such token or window (the badge says so)."}}
    b.add("get", "/badge/{token}/status.svg", "getStatusBadge", "A monitor's status badge", tag="public",
          public=True, errors=(503,), parameters=(token, *query), ok=badge_ok)
    kind = {"name": "kind", "in": "path", "required": True, "schema": {"type": "string"},
            "description": "uptime, or response (the average response time); other kinds are a 404 badge"}
    window = {"name": "window", "in": "path", "required": True, "schema": {"type": "string"},
              "description": f"the window, up to now: {', '.join(WINDOWS)}; others are a 404 badge"}
    b.add("get", "/badge/{token}/{kind}/{window}.svg", "getWindowBadge",
          "A monitor's uptime or response-time badge over a window", tag="public", public=True,
          errors=(503,), parameters=(token, kind, window, *query), ok=badge_ok)
    # fmt: on
