"""One's own profile: the password, two-factor sign-in (TOTP), and signing out everywhere.

Every operation is ``domain/credentials.py``'s or ``domain/signin.py``'s, as the JSON API's
``/api/v1/me`` routes are: a new password ends every other session; turning two factors on is
two steps (the secret shown once, as text and as an ``otpauth://`` URI for the app, then the
app's first code), and the recovery codes are shown once, on the page that answers that code;
turning them off needs the password. Nothing secret is put back into a form after a failure.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from monitor.dashboard import render
from monitor.dashboard.forms import Form, failed
from monitor.dashboard.views import page
from monitor.dashboard.web import Viewer, back, deps, form_data
from monitor.domain import credentials, signin
from monitor.domain.errors import DomainError
from monitor.web import cookie as sessions

NOTICES = {
    "password": "Your password was changed; every other session of yours was signed out.",
    "totp_off": "Two-factor sign-in is off.",
}


def _profile(
    request: web.Request,
    viewer: Viewer,
    *,
    status: int = 200,
    password: Form | None = None,
    disable: Form | None = None,
    **extra: Any,
) -> web.Response:
    return render.page(
        request,
        viewer,
        "profile.html",
        status=status,
        title="Your profile",
        password_form=password or Form(),
        disable_form=disable or Form(),
        notice=NOTICES.get(request.query.get("done", ""), ""),
        **extra,
    )


async def profile(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    return _profile(request, viewer)


async def change_password(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    posted = await form_data(request)
    body = {
        "current_password": posted.get("current_password", ""),
        "new_password": posted.get("new_password", ""),
    }
    try:
        await credentials.change_password(deps(request), viewer.session, body, sessions.client(request))
    except DomainError as exc:
        if exc.status >= 500 or exc.status == 429:
            raise
        shown = ("current_password", "new_password")
        return _profile(request, viewer, status=exc.status, password=failed({}, exc, shown))
    return back("/profile?done=password")


async def totp_enrol(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    made = await credentials.enrol(deps(request), viewer.session)
    return render.page(
        request, viewer, "totp_enrol.html", title="Turn on two-factor sign-in", enrolled=made, form=Form()
    )


async def totp_confirm(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    posted = await form_data(request)
    try:
        done = await credentials.confirm(
            deps(request), viewer.session, {"code": posted.get("code", "").strip()}
        )
    except DomainError as exc:
        if exc.status != 422:
            raise
        return render.page(
            request,
            viewer,
            "totp_enrol.html",
            status=exc.status,
            title="Turn on two-factor sign-in",
            enrolled=None,
            form=failed({}, exc, ("code",)),
        )
    return render.page(
        request, viewer, "recovery_codes.html", title="Two-factor sign-in is on", codes=done["recovery_codes"]
    )


async def totp_disable(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    posted = await form_data(request)
    try:
        await credentials.disable(
            deps(request), viewer.session, {"password": posted.get("password", "")}, sessions.client(request)
        )
    except DomainError as exc:
        if exc.status >= 500 or exc.status == 429:
            raise
        return _profile(request, viewer, status=exc.status, disable=failed({}, exc, ("password",)))
    return back("/profile?done=totp_off")


async def sign_out_everywhere(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    await signin.sign_out_everywhere(deps(request), viewer.session)
    response = back("/signin")
    sessions.clear_cookie(response)
    return response


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/profile", page(profile))
    router.add_post("/profile/password", page(change_password))
    router.add_post("/profile/totp", page(totp_enrol))
    router.add_post("/profile/totp/confirm", page(totp_confirm))
    router.add_post("/profile/totp/disable", page(totp_disable))
    router.add_post("/profile/sessions/end", page(sign_out_everywhere))
