"""The overview: every monitor of the account with its state, type, last check, 24 h uptime and
a sparkline of the last 24 hours' response times; the summary counts on top; search, filters,
sort and keyset pages (``monitor_lists.listing``, the JSON API's listing); bulk pause, resume
and delete behind a confirmation (``monitor_bulk``).

It is ``/`` on every host but a status page's own domain (the api's ``public.root`` decides).

Live without reloading: ``static/overview.js`` asks for the list's part (``HX-Request``) every
2 s while the tab is visible, with the ``ETag`` it last got (``If-None-Match``). The ETag is the
account's list version (``summary.counts``, the query of the counts on top: per state, how
many and the latest change of a monitor or of its state), the query, the role and a 15-second
bucket (so the "last check" texts age); when nothing moved the answer is a 304 and nothing is
rendered. On a 200 the script replaces only the cells marked ``data-live`` of the rows it shows
already (so checkboxes and focus stay as they are), and the whole list only when the rows
themselves changed (the checked boxes and the focused element restored by id).
"""

from __future__ import annotations

import hashlib
import re
import time
from urllib.parse import urlencode

from aiohttp import web

from monitor.dashboard import render
from monitor.dashboard.views import page
from monitor.dashboard.web import Viewer, back, deps, form_data, headers, is_htmx, safe_next
from monitor.domain import monitor_bulk, monitor_lists, summary
from monitor.domain.errors import DomainError

PAGE_SIZE = 50
# How long a "last check 12 s ago" may be shown unchanged by a poll that saw nothing move.
AGE_BUCKET_S = 15
SORT_TEXT = {"id": "Oldest first", "name": "Name", "state": "State (worst first)", "last_check": "Last check"}
FILTERS = ("q", "state", "tag", "type", "location", "sort")
ACTION_TEXT = {"pause": "Pause", "resume": "Resume", "delete": "Delete"}


def _filters(request: web.Request) -> dict[str, str]:
    return {name: request.query.get(name, "").strip() for name in FILTERS}


def _link(kept: dict[str, str], **over: str) -> str:
    """The overview's address with the filters kept and some changed (the first page)."""
    values = {k: v for k, v in {**kept, **over}.items() if v}
    return "/?" + urlencode(values) if values else "/"


def _etag(request: web.Request, viewer: Viewer, version: str) -> str:
    bucket = int(time.time() // AGE_BUCKET_S)
    text = f"{version}|{request.path_qs}|{viewer.role}|{is_htmx(request)}|{bucket}"
    return 'W/"' + hashlib.sha256(text.encode()).hexdigest()[:24] + '"'


async def overview(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    d = deps(request)
    f = _filters(request)
    counts = await summary.counts(d, viewer.actor)
    etag = _etag(request, viewer, counts["version"])
    if request.headers.get("If-None-Match") == etag:
        return web.Response(status=304, headers=headers({"ETag": etag}))
    tags = [t for t in re.split(r"[\s,]+", f["tag"]) if t]
    try:
        found = await monitor_lists.listing(
            d,
            viewer.actor,
            limit=PAGE_SIZE,
            cursor=request.query.get("cursor") or None,
            status=f["state"] or None,
            tags=tags,
            q=f["q"] or None,
            type_=f["type"] or None,
            location=f["location"] or None,
            sort=f["sort"] or "id",
            includes=("uptime_24h", monitor_lists.RESPONSE_24H),
        )
        error = None
    except DomainError as exc:
        if exc.status >= 500 or exc.status == 403:
            raise
        found, error = {"items": [], "next_cursor": None}, exc
    kept = {k: v for k, v in f.items() if v}
    # The guided start, on the whole page only (a poll of the list does not ask).
    steps = None if is_htmx(request) else await summary.first_steps(d, viewer.actor)
    return render.page(
        request,
        viewer,
        "overview.html",
        title="Monitors",
        headers={"ETag": etag, "Vary": "HX-Request"},
        items=found["items"],
        next_cursor=found["next_cursor"],
        first_page=bool(request.query.get("cursor")),
        counts=counts,
        f=f,
        kept=kept,
        state=f["state"],
        types=monitor_lists.types(),
        sorts=SORT_TEXT,
        error=error,
        etag=etag,
        here=request.path_qs,
        link=_link,
        steps=steps,
        welcome="welcome" in request.query,
    )


def _ids(values: list[str]) -> list[int]:
    try:
        return [int(v) for v in values]
    except ValueError:
        raise DomainError(400, "invalid", "id: not a monitor id", "id") from None


async def bulk(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    """Without ``confirm=yes``: the confirmation page listing the chosen monitors; with it (the
    confirmation's form, or the script after the browser's own confirm): done, then back."""
    form = await form_data(request)
    action = form.get("action", "")
    ids = _ids(form.getall("id", []))
    after = safe_next(form.get("next"))
    d = deps(request)
    if form.get("confirm") == "yes":
        await monitor_bulk.bulk(d, viewer.actor, action, ids)
        return back(after)
    chosen = await monitor_bulk.preview(d, viewer.actor, action, ids)
    return render.page(
        request,
        viewer,
        "overview_confirm.html",
        title=f"{ACTION_TEXT[action]} {len(chosen)} monitor{'s' if len(chosen) != 1 else ''}?",
        action=action,
        action_text=ACTION_TEXT[action],
        chosen=chosen,
        after=after,
    )


overview_page = page(overview)
bulk_page = page(bulk)


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_post("/monitors/bulk", bulk_page)
