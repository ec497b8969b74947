"""The first visit of a fresh installation: make the first owner and account, with the setup
link's one-time token (``domain/first_run.py``), then a short guided start on the overview.

``/setup?token=...`` is the link ``make run`` and the api's log print. While no user exists,
``/`` and ``/signin`` send a visitor here; once one exists, ``/setup`` says so and links to the
sign-in. The token travels in the form (a hidden field), never in a log line of ours, and the
page is not cached.
"""

from __future__ import annotations

from aiohttp import web

from monitor.dashboard import render
from monitor.dashboard.forms import Form, failed
from monitor.dashboard.web import back, deps, form_data
from monitor.domain import csrf, first_run
from monitor.domain.errors import DomainError
from monitor.web import cookie

FIELDS = ("email", "name", "password", "account_name", "token")
# The setup link carries its token: no request from the page names it to anyone.
NO_REFERRER = {"Referrer-Policy": "no-referrer"}


async def setup_form(request: web.Request) -> web.StreamResponse:
    if not await first_run.needs_owner(deps(request)):
        return render.page(request, None, "setup_done.html", title="Already set up")
    token = request.query.get("token", "")
    return render.page(
        request, None, "setup.html", title="Set up monitor", form=Form({"token": token}), headers=NO_REFERRER
    )


async def setup_post(request: web.Request) -> web.StreamResponse:
    form = await form_data(request)
    values = {name: form.get(name, "") for name in FIELDS}
    origin = request.headers.get("Origin")
    if origin is not None and not csrf.same_site(origin, cookie.site(request)):
        error = DomainError(403, "csrf", "the form was sent from another site")
        return _again(request, values, error)
    try:
        done = await first_run.create_owner(deps(request), values, cookie.client(request))
    except DomainError as exc:
        if exc.code == "already_set_up":
            return render.page(request, None, "setup_done.html", title="Already set up", status=409)
        return _again(request, values, exc)
    response = back("/?welcome=1")
    cookie.set_cookie(response, done.session_id, done.max_age)
    return response


def _again(request: web.Request, values: dict[str, str], error: DomainError) -> web.Response:
    kept = {k: v for k, v in values.items() if k != "password"}
    return render.page(
        request,
        None,
        "setup.html",
        status=error.status,
        headers={**NO_REFERRER, **error.headers},
        title="Set up monitor",
        form=failed(kept, error, FIELDS),
    )


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get(first_run.PAGE, setup_form)
    router.add_post(first_run.PAGE, setup_post)
