"""``/api/v1/openapi.json``: the OpenAPI 3.1 description, built from the request schemas."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from monitor import __version__


def document() -> dict[str, Any]:
    return {"openapi": "3.1.0", "info": {"title": "monitor", "version": __version__}, "paths": {}}


async def openapi(_request: web.Request) -> web.Response:
    return web.json_response(document())


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/api/v1/openapi.json", openapi)
