"""Invitations and password resets over HTTP (``monitor.domain.invitations`` does the work).

Making an invitation needs an admin of the account and a mail server (``MONITOR_SMTP_HOST``;
without one the command line makes them, ``monitor users invite``). Accepting one and the two
steps of a reset need no credentials: the token of the e-mailed link is the credential. A
reset's letter is sent after the answer, by a task of the app's, so the answer (202) and its
time are the same whether or not a user has the e-mail; a letter that fails is logged, with the
server's reason and never the token.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from aiohttp import web

from monitor import logging as mlog
from monitor.api.context import DEPS, SETTINGS
from monitor.api.errors import ApiError
from monitor.api.guard import actor
from monitor.api.params import json_object
from monitor.domain import invitations
from monitor.domain.roles import authorize
from monitor.mailer import DeliveryError, Letter, Mailer
from monitor.web.keys import MAILER

log = mlog.get(__name__)

# The reset letters in flight.
LETTERS: web.AppKey[set[asyncio.Task[None]]] = web.AppKey("letters")


def base_url(request: web.Request) -> str:
    return request.app[SETTINGS].public_url or f"{request.scheme}://{request.host}"


async def create_invitation(request: web.Request) -> web.Response:
    mailer = request.app.get(MAILER)
    made_by = actor(request)
    authorize(made_by, invitations.RESOURCE, "write")  # a 403 before saying there is no mail server
    if mailer is None:
        raise ApiError(
            503,
            "mail_unconfigured",
            "no mail server is set (MONITOR_SMTP_HOST): invite with `monitor users invite`",
            headers={"Retry-After": "3600"},
        )
    issued = await invitations.invite(
        request.app[DEPS], made_by, await json_object(request), base_url=base_url(request), mailer=mailer
    )
    return web.json_response(issued.answer, status=201)


async def accept_invitation(request: web.Request) -> web.Response:
    return web.json_response(await invitations.accept(request.app[DEPS], await json_object(request)))


async def _deliver(mailer: Mailer, letter: Letter) -> None:
    try:
        await mailer.send(letter)
    except DeliveryError as exc:
        log.warning("mail.reset_failed", error=str(exc), permanent=exc.permanent)
    else:
        log.info("mail.reset_sent")


async def request_reset(request: web.Request) -> web.Response:
    issued = await invitations.request_reset(
        request.app[DEPS], await json_object(request), base_url=base_url(request)
    )
    if issued.letter is not None:
        mailer = request.app.get(MAILER)
        if mailer is None:
            log.warning(
                "mail.unconfigured", why="a password reset was asked for; MONITOR_SMTP_HOST is not set"
            )
        else:
            task = asyncio.create_task(_deliver(mailer, issued.letter))
            letters = request.app[LETTERS]
            letters.add(task)
            task.add_done_callback(letters.discard)
    return web.Response(status=202)


async def confirm_reset(request: web.Request) -> web.Response:
    ended = await invitations.confirm_reset(request.app[DEPS], await json_object(request))
    return web.json_response({"ended": ended})


async def mail(app: web.Application) -> AsyncIterator[None]:
    """The mailer (when a server is set) and the letters in flight, drained at stop."""
    app[LETTERS] = set()
    mailer = Mailer.of(app[SETTINGS])
    if mailer is not None:
        app[MAILER] = mailer
    yield
    letters = app[LETTERS]
    in_flight = list(letters)
    if in_flight:
        await asyncio.wait(in_flight, timeout=10)
    if mailer is not None:
        await mailer.close()


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_post("/api/v1/invitations", create_invitation)
    router.add_post("/api/v1/invitations/accept", accept_invitation)
    router.add_post("/api/v1/password-resets", request_reset)
    router.add_post("/api/v1/password-resets/confirm", confirm_reset)
