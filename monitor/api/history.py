"""A monitor's history: checks, incidents, uptime over windows, response-time statistics
(``monitor.domain.history`` does the work), and an open incident acknowledged
(``monitor.domain.incidents``).

The path's id is read as ``body_target_id`` reads it: an operation judges its query before it
looks the monitor up, so a bad parameter is a 400 even with an id that cannot exist."""

from __future__ import annotations

from aiohttp import web

from monitor import rawdata
from monitor.api import exports as streams
from monitor.api.context import DEPS
from monitor.api.guard import actor
from monitor.api.params import body_target_id, json_object, limit_param, time_range
from monitor.domain import exports, history, incidents


def _format(request: web.Request) -> str:
    return streams.choose_format(request.query.get("format"), request.headers.get("Accept"))


async def list_checks(request: web.Request) -> web.StreamResponse:
    kind = _format(request)
    start, end = time_range(request)
    if kind != "json":  # a CSV or NDJSON stream of the whole range (api/exports.py)
        streams.refuse_page_params(request)
        export = await exports.checks(
            request.app[DEPS],
            actor(request),
            body_target_id(request),
            start=start,
            end=end,
            after=request.query.get("after"),
            checked_from=request.query.get("checked_from"),
        )
        return await streams.stream(request, export, rawdata.Encoder(kind, rawdata.CHECK_COLUMNS))  # type: ignore[arg-type]
    listed = await history.checks(
        request.app[DEPS],
        actor(request),
        body_target_id(request),
        start=start,
        end=end,
        limit=limit_param(request),
        cursor=request.query.get("cursor"),
        checked_from=request.query.get("checked_from"),
    )
    return web.json_response(listed)


async def list_incidents(request: web.Request) -> web.StreamResponse:
    kind = _format(request)
    start, end = time_range(request)
    if kind != "json":
        streams.refuse_page_params(request)
        export = await exports.incidents(
            request.app[DEPS], actor(request), body_target_id(request), start=start, end=end,
            after=request.query.get("after"),
        )  # fmt: skip
        return await streams.stream(request, export, rawdata.Encoder(kind, rawdata.INCIDENT_COLUMNS))  # type: ignore[arg-type]
    listed = await history.incidents(
        request.app[DEPS],
        actor(request),
        body_target_id(request),
        start=start,
        end=end,
        limit=limit_param(request),
        cursor=request.query.get("cursor"),
    )
    return web.json_response(listed)


async def get_incident(request: web.Request) -> web.Response:
    found = await incidents.get(
        request.app[DEPS], actor(request), body_target_id(request), body_target_id(request, "incident_id")
    )
    return web.json_response(found)


async def acknowledge_incident(request: web.Request) -> web.Response:
    # The body is optional: no body is no note.
    body = await json_object(request) if request.body_exists else {}
    answered = await incidents.acknowledge(
        request.app[DEPS],
        actor(request),
        body_target_id(request),
        body_target_id(request, "incident_id"),
        body,
    )
    return web.json_response(answered)


async def uptime(request: web.Request) -> web.Response:
    start, end = time_range(request)
    figures = await history.uptime(
        request.app[DEPS],
        actor(request),
        body_target_id(request),
        start=start,
        end=end,
        windows=request.query.get("window"),
    )
    return web.json_response(figures)


async def stats(request: web.Request) -> web.Response:
    bucket = request.query.get("bucket", "1h")
    history.bucket_size(bucket)  # judged before the times, as it always was
    start, end = time_range(request)
    figures = await history.stats(
        request.app[DEPS], actor(request), body_target_id(request), bucket=bucket, start=start, end=end
    )
    return web.json_response(figures)


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/api/v1/monitors/{id}/checks", list_checks)
    router.add_get("/api/v1/monitors/{id}/incidents", list_incidents)
    router.add_get("/api/v1/monitors/{id}/incidents/{incident_id}", get_incident)
    router.add_post("/api/v1/monitors/{id}/incidents/{incident_id}/acknowledge", acknowledge_incident)
    router.add_get("/api/v1/monitors/{id}/uptime", uptime)
    router.add_get("/api/v1/monitors/{id}/stats", stats)
