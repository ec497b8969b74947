"""``/api/v1/status-pages/{id}/posts`` and ``/api/v1/posts/{id}``: incident posts on an
account's status pages, and their timelines (``/api/v1/posts/{id}/updates``).
``monitor.domain.posts`` does the work; this api process's status desk is told of every change,
so its visitors see it at once.
"""

from __future__ import annotations

from aiohttp import web

from monitor.api.context import DEPS
from monitor.api.guard import actor
from monitor.api.params import body_target_id, json_object, limit_param, path_id, public_base
from monitor.domain import posts
from monitor.status.service import PUBLIC

WHAT = posts.WHAT


async def create_post(request: web.Request) -> web.Response:
    body, page_id = await json_object(request), body_target_id(request)
    made = await posts.create(
        request.app[DEPS], actor(request), page_id, body,
        base=public_base(request), published=request.app.get(PUBLIC),
    )  # fmt: skip
    return web.json_response(made, status=201, headers={"Location": f"/api/v1/posts/{made['id']}"})


async def list_posts(request: web.Request) -> web.Response:
    page_id = path_id(request, what="status page")
    limit, cursor = limit_param(request), request.query.get("cursor")
    found = await posts.listing(
        request.app[DEPS], actor(request), page_id, base=public_base(request), limit=limit, cursor=cursor
    )
    return web.json_response(found)


async def get_post(request: web.Request) -> web.Response:
    post_id = path_id(request, what=WHAT)
    return web.json_response(
        await posts.get(request.app[DEPS], actor(request), post_id, base=public_base(request))
    )


async def patch_post(request: web.Request) -> web.Response:
    body, post_id = await json_object(request), body_target_id(request)
    changed = await posts.update(
        request.app[DEPS], actor(request), post_id, body,
        base=public_base(request), published=request.app.get(PUBLIC),
    )  # fmt: skip
    return web.json_response(changed)


async def add_update(request: web.Request) -> web.Response:
    body, post_id = await json_object(request), body_target_id(request)
    changed = await posts.add_update(
        request.app[DEPS], actor(request), post_id, body,
        base=public_base(request), published=request.app.get(PUBLIC),
    )  # fmt: skip
    return web.json_response(changed, status=201)


async def delete_post(request: web.Request) -> web.Response:
    post_id = path_id(request, what=WHAT)
    await posts.delete(request.app[DEPS], actor(request), post_id, published=request.app.get(PUBLIC))
    return web.Response(status=204)


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_post("/api/v1/status-pages/{id}/posts", create_post)
    router.add_get("/api/v1/status-pages/{id}/posts", list_posts)
    router.add_get("/api/v1/posts/{id}", get_post)
    router.add_patch("/api/v1/posts/{id}", patch_post)
    router.add_delete("/api/v1/posts/{id}", delete_post)
    router.add_post("/api/v1/posts/{id}/updates", add_update)
