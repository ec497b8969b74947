"""The API process as a lifecycle service: listen, then stop accepting and finish requests.

Also the two places where aiohttp itself speaks rather than the app: the access line of
every request (:class:`AccessLogger`), and the answer to a request aiohttp's parser refuses
(a request line or header over 8,190 bytes, a malformed request line), which never reaches
the app's middlewares (:class:`_Connection`).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from time import perf_counter
from typing import Any

from aiohttp import web
from aiohttp.abc import AbstractAccessLogger
from aiohttp.http_exceptions import HttpProcessingError, LineTooLong

from monitor import logging as mlog
from monitor.api import first_run, guard
from monitor.api.app import REQUEST_ID, STARTED, create_app
from monitor.api.context import DEPS
from monitor.api.errors import error_response
from monitor.config import Settings
from monitor.domain.first_run import dashboard_url

log = mlog.get(__name__)
access_log = mlog.get("monitor.api.access")

# Set on a request aiohttp's parser refused: the error's class name.
REFUSED = "refused"
# A path longer than this is cut in the access line.
MAX_LOGGED_PATH = 256


class AccessLogger(AbstractAccessLogger):
    """One ``api.request`` line per request, once its response is sent: request id, method,
    route (the matched resource's template, e.g. ``/api/v1/monitors/{id}``), path, status,
    duration. Never a header nor the query string."""

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        refused = request.get(REFUSED)
        started = request.get(STARTED)
        # aiohttp's ``time`` comes from the loop's clock, whole milliseconds under uvloop.
        seconds = perf_counter() - started if started is not None else time
        fields: dict[str, Any] = {
            "request_id": request.get(REQUEST_ID) or response.headers.get("X-Request-ID"),
            "status": response.status,
            "duration_ms": round(seconds * 1000, 3),
        }
        if refused is not None:
            # What the parser made of the request is not to be trusted, nor logged.
            fields.update(method=None, route=None, path=None, refused=refused)
        else:
            route = None
            if isinstance(request, web.Request):
                resource = request.match_info.route.resource
                route = resource.canonical if resource is not None else None
            # A ping's path is its secret token: monitor.logging.redact masks it on every line.
            fields.update(method=request.method, route=route, path=request.path[:MAX_LOGGED_PATH])
        account_id = request.get(guard.ACCOUNT)
        if account_id is not None:
            fields["account_id"] = account_id
        if response.status >= 500:
            access_log.error("api.request", **fields)
        elif response.status < 400 and (
            fields.get("route") == "/" or str(fields.get("route") or "").startswith(ROUTINE)
        ):
            # An answered ping is routine (thousands a second for a fleet of cron jobs, and the
            # largest cost per ping at info: bench/README.md), and so is a public page or badge
            # under a traffic spike; refused ones stay at info.
            access_log.debug("api.request", **fields)
        else:
            access_log.info("api.request", **fields)


# Routes whose answered requests log at debug (see AccessLogger.log).
ROUTINE = ("/ping/", "/status/", "/badge/", "/static/", "/favicon.ico", "/robots.txt")


class _Connection(web.RequestHandler):
    """aiohttp's handler of one connection, answering what never reaches the app (a request
    its parser refused, a handler's timeout, an exception past every middleware) in the API's
    error shape, with an ``X-Request-ID``, and logging no traceback for a client's mistake."""

    __slots__ = ()

    def handle_error(
        self,
        request: web.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        if request.writer.output_size > 0:
            # As aiohttp does: a response is under way, the connection is broken.
            raise ConnectionError("the response has started; cannot send the error")
        request_id = uuid.uuid4().hex
        request[REQUEST_ID] = request_id
        if isinstance(exc, HttpProcessingError):
            # The parser's message quotes the request's bytes (an Authorization header, say):
            # neither the answer nor the log repeats it. The access line says what happened.
            request[REFUSED] = type(exc).__name__
            if isinstance(exc, LineTooLong):
                text = f"the request line or a header is longer than {self.max_field_size} bytes"
            else:
                text = "the request is not valid HTTP/1.1"
            response = error_response(status, "bad_request", text)
        elif status == 504:
            response = error_response(504, "timeout", "the request took too long")
        else:
            log.error("api.unhandled_error", request_id=request_id, exc_info=exc)
            response = error_response(500, "internal", "internal error; see the server log")
        response.headers["X-Request-ID"] = request_id
        response.force_close()
        return response


class _Server(web.Server):
    """aiohttp's low-level server, making :class:`_Connection` handlers."""

    @classmethod
    def like(cls, server: web.Server) -> _Server:
        return cls(
            server.request_handler,
            request_factory=server.request_factory,
            handler_cancellation=server.handler_cancellation,
            **server._kwargs,
        )

    def __call__(self) -> web.RequestHandler:
        return _Connection(self, loop=self._loop, **self._kwargs)


class _Runner(web.AppRunner):
    async def _make_server(self) -> web.Server:
        # The app's own server (startup hooks run, app frozen), with our connection handler.
        return _Server.like(await super()._make_server())


def _announced(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("dashboard.setup_token_failed", exc_info=task.exception())


class ApiServer:
    name = "api"

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._runner: web.AppRunner | None = None
        self._announcing: asyncio.Task[None] | None = None

    async def start(self) -> None:
        app = create_app(self.settings)
        # aiohttp's own graceful stop: close the listener, let in-flight requests
        # finish within shutdown_timeout, then cancel them.
        self._runner = _Runner(
            app,
            access_log_class=AccessLogger,
            access_log=logging.getLogger("monitor.api.access"),
            shutdown_timeout=self.settings.shutdown_timeout_seconds * 0.8,
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.settings.api_host, self.settings.api_port)
        await site.start()
        log.info("api.listening", host=self.settings.api_host, port=self.settings.api_port)
        # On a fresh installation, the link that makes the first owner (monitor/api/first_run.py).
        port = self._runner.addresses[0][1] if self._runner.addresses else None
        base = dashboard_url(self.settings, port)
        self._announcing = asyncio.create_task(first_run.announce(app[DEPS], base), name="setup-link")
        self._announcing.add_done_callback(_announced)

    async def _stop_announcing(self) -> None:
        task, self._announcing = self._announcing, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def drain(self) -> None:
        await self._stop_announcing()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def abandoned(self) -> list[str]:
        return ["in-flight requests"] if self._runner is not None else []

    async def close(self) -> None:
        await self._stop_announcing()
        if self._runner is not None:
            await self._runner.cleanup()
