"""``/api/v1/summary``: the account at a glance (``monitor.domain.summary`` does the work)."""

from __future__ import annotations

from aiohttp import web

from monitor.api.context import DEPS
from monitor.api.guard import actor
from monitor.domain import summary as glance


async def summary(request: web.Request) -> web.Response:
    return web.json_response(await glance.summary(request.app[DEPS], actor(request)))


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/api/v1/summary", summary)
