"""``/api/v1/members`` (the people of the caller's account and their roles) and
``/api/v1/audit`` (who changed what); ``monitor.domain.members`` and ``monitor.domain.audit``
do the work."""

from __future__ import annotations

from aiohttp import web

from monitor.api.context import DEPS
from monitor.api.guard import actor
from monitor.api.params import MAX_ID, int_param, json_object, limit_param, path_id
from monitor.domain import audit, members


async def list_members(request: web.Request) -> web.Response:
    limit, cursor = limit_param(request), request.query.get("cursor")
    return web.json_response(
        await members.listing(request.app[DEPS], actor(request), limit=limit, cursor=cursor)
    )


async def add_member(request: web.Request) -> web.Response:
    made = await members.add(request.app[DEPS], actor(request), await json_object(request))
    return web.json_response(made, status=201)


async def change_member(request: web.Request) -> web.Response:
    user_id = path_id(request, what=members.WHAT)
    body = await json_object(request)
    return web.json_response(await members.change_role(request.app[DEPS], actor(request), user_id, body))


async def remove_member(request: web.Request) -> web.Response:
    await members.remove(request.app[DEPS], actor(request), path_id(request, what=members.WHAT))
    return web.Response(status=204)


async def list_audit(request: web.Request) -> web.Response:
    limit, cursor = limit_param(request), request.query.get("cursor")
    filters: dict[str, object] = {
        name: request.query.get(name) for name in ("resource", "operation", "object_id")
    }
    for name in ("user_id", "key_id"):
        if name in request.query:
            filters[name] = int_param(request, name, 0, 1, MAX_ID)
    return web.json_response(
        await audit.listing(request.app[DEPS], actor(request), limit=limit, cursor=cursor, filters=filters)
    )


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/api/v1/members", list_members)
    router.add_post("/api/v1/members", add_member)
    router.add_patch("/api/v1/members/{id}", change_member)
    router.add_delete("/api/v1/members/{id}", remove_member)
    router.add_get("/api/v1/audit", list_audit)
