"""A browser monitor's screenshots, ``/monitors/{id}/screenshots``: the latest beside the
accepted baseline with the share of pixels that differ and a picture of where, an **Accept as
baseline** form for editors, the baseline's masks as a list of rectangles to edit (one per
line, ``x y width height``: no JavaScript needed), and the first screenshot of each outage with
its incident. The PNGs are served here too (``.../{sid}.png``), under the dashboard's session,
as an ``<img>`` cannot send an API key.

Every read and write is ``domain/screenshots.py``'s.
"""

from __future__ import annotations

import re
from typing import Any

from aiohttp import web

from monitor.dashboard import render
from monitor.dashboard.forms import Form, failed
from monitor.dashboard.views import page
from monitor.dashboard.web import Viewer, back, deps, form_data, path_id
from monitor.domain import monitors, screenshots
from monitor.domain.errors import DomainError

_NUMBERS = re.compile(r"[\s,;x]+")


def parse_masks(text: str) -> list[dict[str, Any]]:
    """The masks' text, a rectangle a line (``x y width height``, commas allowed), as the API's
    body; a 422 naming ``masks`` for a line that is not four whole numbers."""
    found: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), 1):
        parts = [p for p in _NUMBERS.split(line.strip()) if p]
        if not parts:
            continue
        if len(parts) != 4 or not all(p.isascii() and p.isdigit() and len(p) <= 6 for p in parts):
            raise DomainError(
                422, "invalid", f"masks: line {number} is not four whole numbers (x y width height)", "masks"
            )
        x, y, width, height = (int(p) for p in parts)
        found.append({"x": x, "y": y, "width": width, "height": height})
    return found


def masks_text(masks: list[dict[str, Any]]) -> str:
    return "\n".join(f"{m['x']} {m['y']} {m['width']} {m['height']}" for m in masks)


async def _page(
    request: web.Request, viewer: Viewer, monitor_id: int, form: Form | None = None, status: int = 200
) -> web.Response:
    d = deps(request)
    monitor = (await monitors.get(d, viewer.actor, monitor_id)).monitor
    shots = (await screenshots.listing(d, viewer.actor, monitor_id))["screenshots"]
    latest = next((s for s in shots if s["role"] == "latest"), None)
    baseline = next((s for s in shots if s["role"] == "baseline"), None)
    notice = {
        "accepted": "The screenshot is the baseline now: the next checks are compared with it.",
        "masks": "The masks were saved: the next checks leave those regions out.",
    }
    return render.page(
        request,
        viewer,
        "screenshots.html",
        status=status,
        title=f"Screenshots of {monitor['name']}",
        m=monitor,
        latest=latest,
        baseline=baseline,
        onsets=[s for s in shots if s["role"] == "onset"],
        can_edit=viewer.can("monitors"),
        form=form or Form({"masks": masks_text(baseline["masks"]) if baseline else ""}),
        notice=notice.get(request.query.get("done", ""), ""),
    )


def _ids(request: web.Request) -> tuple[int, int]:
    return path_id(request, "id", "monitor"), path_id(request, "sid", "screenshot")


async def listing(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    return await _page(request, viewer, path_id(request, "id", "monitor"))


async def image(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    monitor_id, screenshot_id = _ids(request)
    png = await screenshots.image(deps(request), viewer.actor, monitor_id, screenshot_id)
    return web.Response(body=png, content_type="image/png")


async def diff_image(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    monitor_id, screenshot_id = _ids(request)
    png = await screenshots.diff_image(deps(request), viewer.actor, monitor_id, screenshot_id)
    return web.Response(body=png, content_type="image/png")


async def accept(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    monitor_id, screenshot_id = _ids(request)
    await screenshots.accept(deps(request), viewer.actor, monitor_id, screenshot_id)
    return back(f"/monitors/{monitor_id}/screenshots?done=accepted")


async def set_masks(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    monitor_id = path_id(request, "id", "monitor")
    text = (await form_data(request)).get("masks", "")
    try:
        await screenshots.set_masks(deps(request), viewer.actor, monitor_id, {"masks": parse_masks(text)})
    except DomainError as exc:
        if exc.status in (403, 404) or exc.status >= 500:
            raise
        if exc.field and exc.field.startswith("masks"):
            exc = DomainError(exc.status, exc.code, exc.message, "masks")
        return await _page(request, viewer, monitor_id, failed({"masks": text}, exc, ("masks",)), exc.status)
    return back(f"/monitors/{monitor_id}/screenshots?done=masks#masks")


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get(r"/monitors/{id:\d+}/screenshots", page(listing))
    router.add_post(r"/monitors/{id:\d+}/screenshots/masks", page(set_masks))
    router.add_get(r"/monitors/{id:\d+}/screenshots/{sid:\d+}.png", page(image))
    router.add_get(r"/monitors/{id:\d+}/screenshots/{sid:\d+}/diff.png", page(diff_image))
    router.add_post(r"/monitors/{id:\d+}/screenshots/{sid:\d+}/baseline", page(accept))
