"""The dashboard's routes on the api's application: each area's views add their own."""

from __future__ import annotations

from aiohttp import web

from monitor import logging as mlog
from monitor.dashboard import (
    assets,
    pages_channels,
    pages_keys,
    pages_maintenance,
    pages_members,
    pages_monitor,
    pages_monitor_forms,
    pages_overview,
    pages_posts,
    pages_profile,
    pages_reports,
    pages_screenshots,
    pages_setup,
    pages_signin,
    pages_status_pages,
)
from monitor.status.bodies import send

log = mlog.get(__name__)
YEAR = "public, max-age=31536000, immutable"
DAY = "public, max-age=86400"
# Each area's views add their routes; ``/`` itself is the api's (``public.root``).
AREAS = (
    pages_setup,
    pages_signin,
    pages_channels,
    pages_keys,
    pages_profile,
    pages_members,
    pages_maintenance,
    pages_status_pages,
    pages_posts,
    pages_overview,
    pages_monitor,
    pages_monitor_forms,
    pages_screenshots,
    pages_reports,
)


async def static_file(request: web.Request) -> web.Response:
    """A static file of the dashboard, by its path; a year in caches at its versioned URL."""
    found = assets.BY_PATH.get(request.path)
    if found is None:
        raise web.HTTPNotFound()
    cache = YEAR if request.query.get("v") == found.version else DAY
    # The same choice of copy and 304 as the public side's static files.
    return send(request, found.body, {"X-Content-Type-Options": "nosniff"}, cache)


def setup(app: web.Application) -> None:
    if assets.MISSING:
        log.warning("dashboard.vendored_missing", problem=assets.MISSING)
    app.router.add_get(assets.PREFIX + "{name:.+}", static_file)
    for area in AREAS:
        area.add_routes(app.router)
