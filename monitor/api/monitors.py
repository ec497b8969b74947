"""``/api/v1/monitors``: create, list (filters, pages, uptime), read, update, delete
(``monitor.domain.monitors`` does the work), and a body checked once before it is saved
(``monitor.domain.trials``)."""

from __future__ import annotations

from aiohttp import web

from monitor.api.context import DEPS, REDIS
from monitor.api.guard import actor
from monitor.api.params import json_object, limit_param, path_id, public_base
from monitor.domain import monitor_lists, monitors, trials


def _answer(shown: monitors.Versioned, status: int = 200) -> web.Response:
    return web.json_response(shown.monitor, status=status, headers={"ETag": shown.etag})


async def create_monitor(request: web.Request) -> web.Response:
    body = await json_object(request)
    made = await monitors.create(request.app[DEPS], actor(request), body, base=public_base(request))
    response = _answer(made, status=201)
    response.headers["Location"] = f"/api/v1/monitors/{made.monitor['id']}"
    return response


async def list_monitors(request: web.Request) -> web.Response:
    limit, cursor = limit_param(request), request.query.get("cursor")
    includes = [i for part in request.query.getall("include", []) for i in part.split(",") if i]
    listed = await monitor_lists.listing(
        request.app[DEPS],
        actor(request),
        limit=limit,
        cursor=cursor,
        status=request.query.get("status"),
        tags=request.query.getall("tag", []),
        q=request.query.get("q"),
        type_=request.query.get("type"),
        location=request.query.get("location"),
        sort=request.query.get("sort", "id"),
        includes=includes,
        base=public_base(request),
    )
    return web.json_response(listed)


async def get_monitor(request: web.Request) -> web.Response:
    monitor_id = path_id(request)
    return _answer(
        await monitors.get(request.app[DEPS], actor(request), monitor_id, base=public_base(request))
    )


async def patch_monitor(request: web.Request) -> web.Response:
    body = await json_object(request)
    changed = await monitors.update(
        request.app[DEPS],
        actor(request),
        path_id(request),
        body,
        expected=request.headers.getall("If-Match", []),
        base=public_base(request),
    )
    return _answer(changed)


async def delete_monitor(request: web.Request) -> web.Response:
    await monitors.delete(request.app[DEPS], actor(request), path_id(request))
    return web.Response(status=204)


async def test_monitor(request: web.Request) -> web.Response:
    body = await json_object(request)
    return web.json_response(await trials.trial(request.app[DEPS], actor(request), body, request.app[REDIS]))


async def not_allowed(request: web.Request) -> web.Response:
    raise web.HTTPMethodNotAllowed(request.method, ["POST"])


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_post("/api/v1/monitors", create_monitor)
    # Before /{id}: another method here is a 405, not a monitor named "test" not found.
    trial = router.add_resource("/api/v1/monitors/test")
    trial.add_route("POST", test_monitor)
    trial.add_route("*", not_allowed)
    router.add_get("/api/v1/monitors", list_monitors)
    router.add_get("/api/v1/monitors/{id}", get_monitor)
    router.add_patch("/api/v1/monitors/{id}", patch_monitor)
    router.add_delete("/api/v1/monitors/{id}", delete_monitor)
