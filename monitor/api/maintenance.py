"""``/api/v1/maintenance``: maintenance windows of an account (``monitor.domain.maintenance``
does the work); this api process's status desk is told of every change, so the notices on its
pages show at once."""

from __future__ import annotations

from aiohttp import web

from monitor.api.context import DEPS
from monitor.api.guard import actor
from monitor.api.params import body_target_id, json_object, limit_param, path_id
from monitor.domain import maintenance
from monitor.status.service import PUBLIC

WHAT = maintenance.WHAT


async def create_window(request: web.Request) -> web.Response:
    window = await maintenance.create(
        request.app[DEPS], actor(request), await json_object(request), published=request.app.get(PUBLIC)
    )
    return web.json_response(window, status=201, headers={"Location": f"/api/v1/maintenance/{window['id']}"})


async def preview_schedule(request: web.Request) -> web.Response:
    """The next spans of a schedule not saved (``maintenance.preview``), for whoever may read
    the account's windows."""
    return web.json_response({"items": await maintenance.preview(actor(request), await json_object(request))})


async def list_windows(request: web.Request) -> web.Response:
    limit, cursor = limit_param(request), request.query.get("cursor")
    return web.json_response(
        await maintenance.listing(request.app[DEPS], actor(request), limit=limit, cursor=cursor)
    )


async def get_window(request: web.Request) -> web.Response:
    window_id = path_id(request, what=WHAT)
    return web.json_response(await maintenance.get(request.app[DEPS], actor(request), window_id))


async def patch_window(request: web.Request) -> web.Response:
    body, window_id = await json_object(request), body_target_id(request)
    return web.json_response(
        await maintenance.update(
            request.app[DEPS], actor(request), window_id, body, published=request.app.get(PUBLIC)
        )
    )


async def delete_window(request: web.Request) -> web.Response:
    await maintenance.delete(
        request.app[DEPS], actor(request), path_id(request, what=WHAT), published=request.app.get(PUBLIC)
    )
    return web.Response(status=204)


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_post("/api/v1/maintenance", create_window)
    router.add_get("/api/v1/maintenance", list_windows)
    router.add_post("/api/v1/maintenance-preview", preview_schedule)
    router.add_get("/api/v1/maintenance/{id}", get_window)
    router.add_patch("/api/v1/maintenance/{id}", patch_window)
    router.add_delete("/api/v1/maintenance/{id}", delete_window)
