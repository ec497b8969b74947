"""``/api/v1/keys``: the caller's account's API keys, the secret shown once, at creation
(``monitor.domain.keys`` does the work)."""

from __future__ import annotations

from aiohttp import web

from monitor.api.context import DEPS
from monitor.api.guard import actor
from monitor.api.params import json_object, limit_param, path_id
from monitor.domain import keys


async def create_key(request: web.Request) -> web.Response:
    return web.json_response(
        await keys.create(request.app[DEPS], actor(request), await json_object(request)), status=201
    )


async def list_keys(request: web.Request) -> web.Response:
    limit, cursor = limit_param(request), request.query.get("cursor")
    return web.json_response(
        await keys.listing(request.app[DEPS], actor(request), limit=limit, cursor=cursor)
    )


async def revoke_key(request: web.Request) -> web.Response:
    await keys.revoke(request.app[DEPS], actor(request), path_id(request, what=keys.WHAT))
    return web.Response(status=204)


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_post("/api/v1/keys", create_key)
    router.add_get("/api/v1/keys", list_keys)
    router.add_delete("/api/v1/keys/{id}", revoke_key)
