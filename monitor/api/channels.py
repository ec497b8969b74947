"""``/api/v1/channels``: alert channels of an account, and a test message through the alerter
(``monitor.domain.channels`` does the work)."""

from __future__ import annotations

from aiohttp import web

from monitor.api.context import DEPS
from monitor.api.guard import actor
from monitor.api.params import body_target_id, json_object, limit_param, path_id
from monitor.domain import channels

WHAT = channels.WHAT


async def create_channel(request: web.Request) -> web.Response:
    made = await channels.create(request.app[DEPS], actor(request), await json_object(request))
    return web.json_response(made, status=201, headers={"Location": f"/api/v1/channels/{made['id']}"})


async def list_channels(request: web.Request) -> web.Response:
    limit, cursor = limit_param(request), request.query.get("cursor")
    return web.json_response(
        await channels.listing(request.app[DEPS], actor(request), limit=limit, cursor=cursor)
    )


async def get_channel(request: web.Request) -> web.Response:
    channel_id = path_id(request, what=WHAT)
    return web.json_response(await channels.get(request.app[DEPS], actor(request), channel_id))


async def patch_channel(request: web.Request) -> web.Response:
    body, channel_id = await json_object(request), body_target_id(request)
    return web.json_response(await channels.update(request.app[DEPS], actor(request), channel_id, body))


async def delete_channel(request: web.Request) -> web.Response:
    await channels.delete(request.app[DEPS], actor(request), path_id(request, what=WHAT))
    return web.Response(status=204)


async def test_channel(request: web.Request) -> web.Response:
    channel_id = path_id(request, what=WHAT)
    return web.json_response(
        await channels.send_test(request.app[DEPS], actor(request), channel_id), status=202
    )


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_post("/api/v1/channels", create_channel)
    router.add_get("/api/v1/channels", list_channels)
    router.add_get("/api/v1/channels/{id}", get_channel)
    router.add_patch("/api/v1/channels/{id}", patch_channel)
    router.add_delete("/api/v1/channels/{id}", delete_channel)
    router.add_post("/api/v1/channels/{id}/test", test_channel)
