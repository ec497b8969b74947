"""The first run over HTTP (monitor/domain/first_run.py): whether the first owner is still to
be made, making them with the setup token, and the setup link the api logs when it starts.

``GET /api/v1/setup`` and ``POST /api/v1/setup`` need no credentials (``sessions.OPEN``); the
POST answers as a sign-in does (201, the user as ``GET /api/v1/me`` shows them, and the session
cookie), so a script and the dashboard's form are both signed in by it.
"""

from __future__ import annotations

import asyncio

import asyncpg
from aiohttp import web

from monitor import db
from monitor import logging as mlog
from monitor.api import sessions
from monitor.api.context import DEPS
from monitor.api.params import json_object
from monitor.domain import first_run, signin
from monitor.domain.context import Deps

log = mlog.get(__name__)
PATH = "/api/v1/setup"
# The log line with the setup link: the one secret logged on purpose (monitor/logging.py).
SETUP_EVENT = mlog.SETUP_EVENT
# While the database cannot be asked (down, or not migrated yet), asked again this often.
RETRY_SECONDS = 2.0


async def get_setup(request: web.Request) -> web.Response:
    return web.json_response({"needs_owner": await first_run.needs_owner(request.app[DEPS])})


async def post_setup(request: web.Request) -> web.Response:
    deps = request.app[DEPS]
    done = await first_run.create_owner(deps, await json_object(request), sessions.client(request))
    response = web.json_response(await signin.me(deps, done.session, done.session_id), status=201)
    sessions.set_cookie(response, done.session_id, done.max_age)
    return response


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get(PATH, get_setup)
    router.add_post(PATH, post_setup)


async def announce(deps: Deps, base_url: str, *, retry_seconds: float = RETRY_SECONDS) -> None:
    """Log where the dashboard is, once: with the setup link of a new token while no user
    exists (``first_run.issue_token``), else the address alone (``dashboard.address``). While
    the database cannot answer, one warning, then asked again every ``retry_seconds``."""
    warned = False
    while True:
        try:
            token = await first_run.issue_token(deps)
        except (*db.UNAVAILABLE, asyncpg.PostgresError) as exc:  # not migrated: UndefinedTableError
            if not warned:
                log.warning("dashboard.setup_token_waiting", error=type(exc).__name__,
                            hint="the database is unreachable or not migrated (monitor migrate)")  # fmt: skip
                warned = True
            await asyncio.sleep(retry_seconds)
            continue
        if token is not None:
            log.info(
                SETUP_EVENT,
                url=first_run.setup_url(base_url, token),
                dashboard=base_url,
                expires_in_hours=first_run.TOKEN_HOURS,
                note="open it to make the first owner and account; it works until one exists",
            )
        else:
            log.info("dashboard.address", dashboard=base_url)
        return
