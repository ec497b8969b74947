"""Dashboard sessions over HTTP: signing in and out, ``/api/v1/me`` and the user's credentials,
and what the session cookie makes of a request (``authenticate``, called by the guard when a
request carries no ``Authorization`` header).

The cookie is ``__Host-monitor_session``: ``Secure``, ``HttpOnly``, ``SameSite=Lax``,
``Path=/``, no ``Domain``, ``Max-Age`` the absolute lifetime (the server ends it sooner when
idle). Its value, the session id, is never logged nor put in a body. A write with the cookie
passes the CSRF rule of ``monitor/domain/csrf.py`` or gets 403 ``csrf``. The account a
request acts in is named by ``X-Monitor-Account`` (monitor/domain/signin.py).
"""

from __future__ import annotations

from aiohttp import web

from monitor.api.context import DEPS
from monitor.api.errors import ApiError
from monitor.api.params import json_object
from monitor.domain import credentials, csrf, signin
from monitor.domain.session_ids import COOKIE
from monitor.web.cookie import clear_cookie, client, set_cookie, site

__all__ = ["clear_cookie", "client", "set_cookie", "site"]

SESSION = "session"
SESSION_ID = "session_id"
# Routes that need no credentials at all: signing in, accepting an invitation, resets, the
# first run (monitor/api/first_run.py: its setup token is its credential).
OPEN = frozenset(
    {
        ("POST", "/api/v1/session"),
        ("GET", "/api/v1/setup"),
        ("POST", "/api/v1/setup"),
        ("POST", "/api/v1/invitations/accept"),
        ("POST", "/api/v1/password-resets"),
        ("POST", "/api/v1/password-resets/confirm"),
    }
)
# Routes about the signed-in person, in no account: a session is needed, no account header.
USER_PATHS = ("/api/v1/me", "/api/v1/session")


def is_user_path(path: str) -> bool:
    return path in ("/api/v1/sessions", *USER_PATHS) or path.startswith("/api/v1/me/")


async def authenticate(request: web.Request) -> signin.Session | None:
    """The session of the request's cookie, checked against the CSRF rule, kept on the request;
    None when there is no cookie. A 401 when it ended, a 403 when the CSRF rule refuses."""
    session_id = request.cookies.get(COOKIE)
    if not session_id:
        return None
    session = await signin.session_for(request.app[DEPS], session_id)
    if session is None:
        raise ApiError(401, "unauthorized", "the session has ended; sign in again")
    why = csrf.refusal(
        request.method,
        origin=request.headers.get("Origin"),
        site=site(request),
        session_id=session_id,
        given=request.headers.get(csrf.HEADER),
    )
    if why is not None:
        raise ApiError(403, "csrf", why)
    request[SESSION] = session
    request[SESSION_ID] = session_id
    return session


def session(request: web.Request) -> signin.Session:
    found = request.get(SESSION)
    if not isinstance(found, signin.Session):
        raise ApiError(
            401, "unauthorized", "sign in first: this route is for a signed-in person, not an API key"
        )
    return found


async def create_session(request: web.Request) -> web.Response:
    done = await signin.sign_in(request.app[DEPS], await json_object(request), client(request))
    response = web.json_response(
        await signin.me(request.app[DEPS], done.session, done.session_id), status=201
    )
    set_cookie(response, done.session_id, done.max_age)
    return response


async def delete_session(request: web.Request) -> web.Response:
    await signin.sign_out(request.app[DEPS], session(request))
    response = web.Response(status=204)
    clear_cookie(response)
    return response


async def delete_sessions(request: web.Request) -> web.Response:
    ended = await signin.sign_out_everywhere(request.app[DEPS], session(request))
    response = web.json_response({"ended": ended})
    clear_cookie(response)
    return response


async def get_me(request: web.Request) -> web.Response:
    return web.json_response(await signin.me(request.app[DEPS], session(request), request[SESSION_ID]))


async def enrol_totp(request: web.Request) -> web.Response:
    return web.json_response(await credentials.enrol(request.app[DEPS], session(request)), status=201)


async def confirm_totp(request: web.Request) -> web.Response:
    body = await json_object(request)
    return web.json_response(await credentials.confirm(request.app[DEPS], session(request), body))


async def disable_totp(request: web.Request) -> web.Response:
    body = await json_object(request)
    await credentials.disable(request.app[DEPS], session(request), body, client(request))
    return web.Response(status=204)


async def change_password(request: web.Request) -> web.Response:
    body = await json_object(request)
    return web.json_response(
        await credentials.change_password(request.app[DEPS], session(request), body, client(request))
    )


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_post("/api/v1/session", create_session)
    router.add_delete("/api/v1/session", delete_session)
    router.add_delete("/api/v1/sessions", delete_sessions)
    router.add_get("/api/v1/me", get_me)
    router.add_post("/api/v1/me/totp", enrol_totp)
    router.add_post("/api/v1/me/totp/confirm", confirm_totp)
    router.add_post("/api/v1/me/totp/disable", disable_totp)
    router.add_post("/api/v1/me/password", change_password)
