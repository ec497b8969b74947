"""Signing in and out in the browser, and the person's choices that are not data: the account
they work in and the colour theme.

Signing in is ``domain/signin.sign_in`` (the throttle, the password, the second factor): this
view only reads the form and sets the cookie the JSON API sets. Its errors come back on the
form, with what was typed kept (never the password). A sign-in post whose ``Origin`` names
another site is refused, so no page elsewhere can sign a visitor into an account of its own.
"""

from __future__ import annotations

from aiohttp import web

from monitor import logging as mlog
from monitor.dashboard import render
from monitor.dashboard.views import error_page, page, unavailable
from monitor.dashboard.web import (
    ACCOUNT_COOKIE,
    THEME_COOKIE,
    THEMES,
    Viewer,
    back,
    check_csrf,
    deps,
    form_data,
    safe_next,
    viewer_of,
)
from monitor.db import UNAVAILABLE as DB_UNAVAILABLE
from monitor.domain import csrf, first_run, signin
from monitor.domain.errors import DomainError
from monitor.domain.session_ids import COOKIE
from monitor.web import cookie as sessions
from monitor.web.keys import SETTINGS

log = mlog.get(__name__)
YEAR = 365 * 86400


def keep(response: web.StreamResponse, name: str, value: str) -> None:
    """A choice that is no secret, kept for a year."""
    response.set_cookie(name, value, max_age=YEAR, path="/", secure=True, httponly=True, samesite="Lax")


async def signin_form(request: web.Request) -> web.StreamResponse:
    if await viewer_of(request) is not None:
        return back(safe_next(request.query.get("next")))
    if await first_run.needs_owner(deps(request)):  # a fresh installation: nobody to sign in yet
        return back(first_run.PAGE)
    return _form(request, safe_next(request.query.get("next")), {}, None)


def _form(
    request: web.Request, next_path: str, values: dict[str, str], error: DomainError | None
) -> web.Response:
    return render.page(
        request,
        None,
        "signin.html",
        status=error.status if error else 200,
        title="Sign in",
        next=next_path,
        values=values,
        error=error,
        sso=request.app[SETTINGS].oidc_issuer is not None,
    )


async def signin_post(request: web.Request) -> web.StreamResponse:
    form = await form_data(request)
    next_path = safe_next(form.get("next"))
    origin = request.headers.get("Origin")
    if origin is not None and not csrf.same_site(origin, sessions.site(request)):
        return _form(request, next_path, {}, DomainError(403, "csrf", "the form was sent from another site"))
    body = {"email": form.get("email", ""), "password": form.get("password", "")}
    for name in ("totp", "recovery_code"):
        if form.get(name, "").strip():
            body[name] = form[name].strip()
    try:
        done = await signin.sign_in(deps(request), body, sessions.client(request))
    except DomainError as exc:
        return _form(request, next_path, {"email": body["email"]}, exc)
    response = back(next_path)
    sessions.set_cookie(response, done.session_id, done.max_age)
    return response


async def signout(request: web.Request) -> web.StreamResponse:
    """End the session: it needs the session (and the CSRF rule), not a membership, so one
    removed from every account can still sign out. Without a live session, the cookie is
    cleared all the same."""
    response = back("/signin")
    sessions.clear_cookie(response)
    session_id = request.cookies.get(COOKIE, "")
    try:
        session = await signin.session_for(deps(request), session_id) if session_id else None
        if session is None:
            return response
        await check_csrf(request, session_id)
        await signin.sign_out(deps(request), session)
    except DomainError as exc:
        return error_page(request, None, exc)
    except DB_UNAVAILABLE as exc:
        log.warning("dashboard.database_unavailable", error=type(exc).__name__)
        return unavailable(request, None)
    return response


async def switch_account(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    form = await form_data(request)
    chosen = form.get("account_id", "")
    if chosen not in {str(m["account_id"]) for m in viewer.memberships}:
        raise DomainError(403, "forbidden", "you are not a member of that account", "account_id")
    response = back(safe_next(form.get("next")))
    keep(response, ACCOUNT_COOKIE, chosen)
    return response


async def set_theme(request: web.Request) -> web.StreamResponse:
    """The colour theme, for everyone (also before signing in): a cookie that is no secret.
    A form post from another site can at worst change a colour."""
    form = await form_data(request)
    theme = form.get("theme", "auto")
    response = back(safe_next(form.get("next")))
    if theme in THEMES:
        keep(response, THEME_COOKIE, theme)
    return response


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/signin", signin_form)
    router.add_post("/signin", signin_post)
    router.add_post("/signout", signout)
    router.add_post("/account", page(switch_account))
    router.add_post("/theme", set_theme)
