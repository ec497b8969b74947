"""A monitor's screenshots (``monitor.domain.screenshots`` does the work): the list, one's
details and its PNG, accepting one as the baseline, and the baseline's masks."""

from __future__ import annotations

from aiohttp import web

from monitor.api.context import DEPS
from monitor.api.guard import actor
from monitor.api.params import body_target_id, json_object
from monitor.domain import screenshots

BASE = "/api/v1/monitors/{id}/screenshots"


async def list_screenshots(request: web.Request) -> web.Response:
    return web.json_response(
        await screenshots.listing(request.app[DEPS], actor(request), body_target_id(request))
    )


async def get_screenshot(request: web.Request) -> web.Response:
    png = await screenshots.image(
        request.app[DEPS], actor(request), body_target_id(request), body_target_id(request, "sid")
    )
    # A screenshot's id names one image for ever (a new run writes a new row): it may be kept,
    # by this browser alone (the account's pages are private).
    return web.Response(
        body=png, content_type="image/png", headers={"Cache-Control": "private, max-age=86400"}
    )


async def accept_baseline(request: web.Request) -> web.Response:
    accepted = await screenshots.accept(
        request.app[DEPS], actor(request), body_target_id(request), body_target_id(request, "sid")
    )
    return web.json_response(accepted)


async def put_masks(request: web.Request) -> web.Response:
    body = await json_object(request)
    changed = await screenshots.set_masks(request.app[DEPS], actor(request), body_target_id(request), body)
    return web.json_response(changed)


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get(BASE, list_screenshots)
    router.add_put(f"{BASE}/masks", put_masks)
    router.add_get(BASE + "/{sid}", get_screenshot)
    router.add_post(BASE + "/{sid}/baseline", accept_baseline)
