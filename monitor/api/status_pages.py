"""``/api/v1/status-pages``: an account's public status pages (the pages themselves are served
by ``public.py``); and ``/api/v1/monitors/{id}/badge-token``, which replaces a monitor's badge
token. ``monitor.domain.status_pages`` does the work; this api process's status desk is told of
every change, so its visitors see it at once.
"""

from __future__ import annotations

from aiohttp import web

from monitor.api.context import DEPS
from monitor.api.guard import actor
from monitor.api.params import body_target_id, json_object, limit_param, path_id, public_base
from monitor.domain import status_pages
from monitor.status.service import PUBLIC

WHAT = status_pages.WHAT


async def create_page(request: web.Request) -> web.Response:
    made = await status_pages.create(
        request.app[DEPS], actor(request), await json_object(request),
        base=public_base(request), published=request.app.get(PUBLIC),
    )  # fmt: skip
    return web.json_response(made, status=201, headers={"Location": f"/api/v1/status-pages/{made['id']}"})


async def list_pages(request: web.Request) -> web.Response:
    limit, cursor = limit_param(request), request.query.get("cursor")
    found = await status_pages.listing(
        request.app[DEPS], actor(request), base=public_base(request), limit=limit, cursor=cursor
    )
    return web.json_response(found)


async def get_page(request: web.Request) -> web.Response:
    page_id = path_id(request, what=WHAT)
    return web.json_response(
        await status_pages.get(request.app[DEPS], actor(request), page_id, base=public_base(request))
    )


async def patch_page(request: web.Request) -> web.Response:
    body, page_id = await json_object(request), body_target_id(request)
    changed = await status_pages.update(
        request.app[DEPS], actor(request), page_id, body,
        base=public_base(request), published=request.app.get(PUBLIC),
    )  # fmt: skip
    return web.json_response(changed)


async def delete_page(request: web.Request) -> web.Response:
    page_id = path_id(request, what=WHAT)
    await status_pages.delete(request.app[DEPS], actor(request), page_id, published=request.app.get(PUBLIC))
    return web.Response(status=204)


async def rotate_badge_token(request: web.Request) -> web.Response:
    monitor_id = path_id(request, what="monitor")
    answer = await status_pages.rotate_badge_token(
        request.app[DEPS],
        actor(request),
        monitor_id,
        base=public_base(request),
        published=request.app.get(PUBLIC),
    )
    return web.json_response(answer)


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_post("/api/v1/monitors/{id}/badge-token", rotate_badge_token)
    router.add_post("/api/v1/status-pages", create_page)
    router.add_get("/api/v1/status-pages", list_pages)
    router.add_get("/api/v1/status-pages/{id}", get_page)
    router.add_patch("/api/v1/status-pages/{id}", patch_page)
    router.add_delete("/api/v1/status-pages/{id}", delete_page)
