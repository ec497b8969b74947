"""aiohttp application factory: resources, middlewares and the routes of every module."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable

import asyncpg
import structlog
from aiohttp import web

from monitor import db, redisconn
from monitor import logging as mlog
from monitor.api import (
    apply,
    channels,
    first_run,
    guard,
    history,
    invitations,
    keys,
    maintenance,
    members,
    monitors,
    openapi,
    pings,
    posts,
    public,
    reports,
    screenshots,
    sessions,
    sso,
    status_pages,
    summary,
)
from monitor.api.context import DEPS, POOL, REDIS, RESOLVER, SECRET_BOX, SETTINGS
from monitor.api.errors import ApiError, error_response, render_error
from monitor.config import Settings
from monitor.dashboard import routes as dashboard
from monitor.dashboard import views as dashboard_views
from monitor.domain.context import Deps
from monitor.domain.pings import PingDesk
from monitor.keys import TRIAL_WAIT_MAX_SECONDS
from monitor.net.policy import AddressPolicy, log_allow_list
from monitor.net.resolver import VettedResolver
from monitor.probes import metrics_response

log = mlog.get(__name__)

MAX_BODY_BYTES = 64 * 1024
# The routes whose bodies may be larger, each read by its handler against its own cap
# (params.json_object's limit): the files of an apply.
LARGE_BODIES = {apply.PATH: apply.MAX_BODY_BYTES}
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
# Where the request id and start time are kept on the request, for the access line
# (monitor/api/server.py).
REQUEST_ID = "request_id"
STARTED = "started"
# Methods whose body, when there is one, must be JSON.
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
# Errors that mean "the database is not there", answered 503 rather than 500 (monitor/db.py).
DB_UNAVAILABLE = db.UNAVAILABLE

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def request_id_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    given = request.headers.get("X-Request-ID", "")
    request_id = given if _REQUEST_ID.match(given) else uuid.uuid4().hex
    request[REQUEST_ID] = request_id
    request[STARTED] = time.perf_counter()
    with structlog.contextvars.bound_contextvars(request_id=request_id):
        try:
            response = await handler(request)
        except web.HTTPException as exc:
            exc.headers["X-Request-ID"] = request_id
            raise
        response.headers["X-Request-ID"] = request_id
        return response


@web.middleware
async def error_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except ApiError as exc:
        return render_error(exc)
    except web.HTTPRequestEntityTooLarge:
        return error_response(413, "too_large", f"request body exceeds {MAX_BODY_BYTES} bytes")
    except web.HTTPMethodNotAllowed as exc:
        if dashboard_views.wants_page(request):
            response = dashboard_views.not_allowed(request)
        else:
            response = error_response(405, "method_not_allowed", f"{request.method} is not allowed here")
        response.headers["Allow"] = ",".join(sorted(exc.allowed_methods))
        return response
    except web.HTTPNotFound:
        if dashboard_views.wants_page(request):
            return dashboard_views.not_found(request)
        return error_response(404, "not_found", "no such endpoint")
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return error_response(exc.status, "http_error", exc.reason)
    except DB_UNAVAILABLE as exc:
        log.warning("api.database_unavailable", error=type(exc).__name__)
        response = error_response(503, "database_unavailable", "the database is unreachable; try again")
        response.headers["Retry-After"] = "5"
        return response
    except Exception:
        log.exception("api.unhandled_error", path=request.path)
        return error_response(500, "internal", "internal error; see the server log")


def is_json(content_type: str) -> bool:
    """application/json, or a JSON-based type such as application/merge-patch+json."""
    main, _, sub = content_type.partition("/")
    return main == "application" and (sub == "json" or sub.endswith("+json"))


@web.middleware
async def body_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """A body is JSON of at most MAX_BODY_BYTES (a route of LARGE_BODIES: its own cap): 413 when
    its declared length is over (before it is read), 415 when it is not declared JSON (a missing
    Content-Type included)."""
    # Only where a route matched: an unknown path or method stays a 404 or 405.
    # Only the JSON API's: a ping's body is whatever the job sends (a log tail: pings.py reads
    # and bounds it), a dashboard form's is a form (monitor/dashboard/).
    if (
        request.method in _BODY_METHODS
        and request.body_exists
        and request.match_info.http_exception is None
        and request.path.startswith("/api/")
    ):
        cap = LARGE_BODIES.get(request.path, MAX_BODY_BYTES)
        if request.content_length is not None and request.content_length > cap:
            raise ApiError(413, "too_large", f"request body exceeds {cap} bytes")
        # aiohttp reports a missing Content-Type as application/octet-stream.
        if "Content-Type" not in request.headers or not is_json(request.content_type):
            raise ApiError(
                415, "unsupported_media_type", "the body must be JSON, sent as Content-Type: application/json"
            )
    return await handler(request)


async def healthz(request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


async def readyz(request: web.Request) -> web.Response:
    try:
        await db.answers(request.app[POOL], within=2)
    except (*DB_UNAVAILABLE, asyncpg.PostgresError):
        return web.json_response({"status": "unavailable", "database": "down"}, status=503)
    return web.json_response({"status": "ok", "database": "up"})


async def metrics(request: web.Request) -> web.Response:
    return metrics_response(request.app[guard.METRICS].registry)


def create_app(settings: Settings) -> web.Application:
    app = web.Application(
        middlewares=[
            request_id_middleware,
            guard.metrics_middleware,
            error_middleware,
            public.page_domains_middleware,
            guard.auth_middleware,
            guard.rate_limit_middleware,
            body_middleware,
        ],
        # aiohttp refuses a body whose length reaches client_max_size; one of MAX_BODY_BYTES passes.
        client_max_size=MAX_BODY_BYTES + 1,
    )
    app[SETTINGS] = settings
    app[guard.BUCKETS] = guard.TokenBuckets(settings.api_rate_per_second, settings.api_rate_burst)
    app[guard.METRICS] = guard.ApiMetrics()

    async def resources(app: web.Application) -> AsyncIterator[None]:
        app[SECRET_BOX] = settings.secret_box()  # first: without a key the API does not start
        # min_size=0: the API starts, and answers 503, even while the database is down.
        app[POOL] = await db.create_pool(settings.dsn, min_size=0, max_size=10, init=db.preload_array_codecs)
        app[pings.PINGS] = PingDesk(app[POOL], pings.limiter())
        policy = AddressPolicy(settings.allow_cidrs)
        log_allow_list(log, policy)  # as the scheduler and the alerter do
        app[RESOLVER] = VettedResolver(policy, settings.dns_servers)
        app[DEPS] = Deps(app[POOL], settings, app[SECRET_BOX], app[RESOLVER])
        # Read timeouts past the longest wait for a trial's answer (a BLPOP that long).
        app[REDIS] = (
            redisconn.from_settings(
                settings, socket_timeout=TRIAL_WAIT_MAX_SECONDS + 5, socket_connect_timeout=5
            )
            if settings.redis_url is not None
            else None
        )
        yield
        if (client := app[REDIS]) is not None:
            await client.aclose()
        await app[pings.PINGS].close()
        await app[RESOLVER].close()
        app[DEPS].hasher.close()
        await app[POOL].close()

    app.cleanup_ctx.append(resources)
    app.cleanup_ctx.append(invitations.mail)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)
    routed = (monitors, history, screenshots, channels, keys, members, maintenance, summary, status_pages,
              posts, reports, pings, sessions, invitations, first_run, apply, openapi)  # fmt: skip
    for module in routed:
        module.add_routes(app.router)
    sso.setup(app)
    public.setup(app)
    dashboard.setup(app)
    return app
