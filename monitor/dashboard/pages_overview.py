"""The overview: every monitor of the account with its state, and the summary counts on top.

It is ``/`` on every host but a status page's own domain (the api's ``public.root`` decides).
"""

from __future__ import annotations

from aiohttp import web

from monitor.dashboard import render
from monitor.dashboard.views import page
from monitor.dashboard.web import Viewer, deps
from monitor.domain import monitors, summary
from monitor.domain.errors import DomainError

PAGE_SIZE = 50


async def overview(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    d = deps(request)
    status = request.query.get("state") or None
    tags = [t for t in request.query.getall("tag", []) if t]
    try:
        found = await monitors.listing(
            d,
            viewer.actor,
            limit=PAGE_SIZE,
            cursor=request.query.get("cursor") or None,
            status=status,
            tags=tags,
            includes=("uptime_24h",),
        )
        error = None
    except DomainError as exc:
        if exc.status >= 500 or exc.status == 403:
            raise
        found, error = {"items": [], "next_cursor": None}, exc
    counts = await summary.summary(d, viewer.actor)
    return render.page(
        request,
        viewer,
        "overview.html",
        title="Monitors",
        items=found["items"],
        next_cursor=found["next_cursor"],
        counts=counts,
        state=status or "",
        tags=tags,
        error=error,
    )


overview_page = page(overview)
