"""A dashboard view's frame: a signed-in person, CSRF on writes, the security headers, and the
errors of the layers below as pages a person can act on.

- no session: to ``/signin`` with the page to come back to (for htmx, a redirect of the page);
- a ``DomainError`` that reaches the frame (a view that shows a form catches its own first, to
  show the message next to its field): a page with its status and message;
- the database unreachable: a 503 page that says so and to try again (``Retry-After``).
"""

from __future__ import annotations

from aiohttp import web

from monitor import logging as mlog
from monitor.dashboard import render
from monitor.dashboard.web import (
    SECURITY,
    Handler,
    View,
    back,
    check_csrf,
    headers,
    is_htmx,
    signin_url,
    viewer_of,
)
from monitor.db import UNAVAILABLE as DB_UNAVAILABLE
from monitor.domain import csrf
from monitor.domain.errors import DomainError
from monitor.domain.session_ids import COOKIE

log = mlog.get(__name__)

TITLES = {400: "That request is not right", 403: "Not allowed", 404: "Not found", 405: "Not a page",
          409: "Conflict", 422: "That is not valid", 429: "Too many requests",
          503: "Unavailable"}  # fmt: skip


def error_page(request: web.Request, viewer: object, exc: DomainError, signout: str = "") -> web.Response:
    """``signout``: the CSRF token of a session that has no page to show (no membership left),
    for the page's own sign-out form."""
    extra = dict(exc.headers)
    return render.page(
        request,
        viewer,  # type: ignore[arg-type]
        "error.html",
        status=exc.status,
        headers=extra,
        title=TITLES.get(exc.status, "Something went wrong"),
        message=exc.message,
        signout=signout,
    )


def unavailable(request: web.Request, viewer: object) -> web.Response:
    return error_page(
        request,
        viewer,
        DomainError(
            503,
            "database_unavailable",
            "The database cannot be reached just now; nothing was changed. Try again in a few seconds.",
            headers={"Retry-After": "5"},
        ),
    )


def wants_page(request: web.Request) -> bool:
    """An unknown path (or method) a browser asked for (``Accept`` names HTML) outside the JSON
    API: it gets a page that says so rather than the API's JSON error body."""
    return not request.path.startswith("/api/") and "text/html" in request.headers.get("Accept", "")


def not_found(request: web.Request) -> web.Response:
    """The 404 page: no session is looked up (an unknown path costs no query), so no menu."""
    return error_page(request, None, DomainError(404, "not_found", "There is no page at this address."))


def not_allowed(request: web.Request) -> web.Response:
    """The 405 page: a form's address opened as a page (``GET /signout``), say."""
    message = "This address takes a form's post, not a visit: go back and use the page's button."
    return error_page(request, None, DomainError(405, "method_not_allowed", message))


def page(view: View) -> Handler:
    """A view for a signed-in person: to ``/signin`` without a session (for htmx, a redirect of
    the whole page), the security headers on every answer, a domain error as a page."""

    async def handler(request: web.Request) -> web.StreamResponse:
        try:
            viewer = await viewer_of(request)
        except DB_UNAVAILABLE as exc:
            log.warning("dashboard.database_unavailable", error=type(exc).__name__)
            return unavailable(request, None)
        except DomainError as exc:  # a session with no account to work in: it can still sign out
            session_id = request.cookies.get(COOKIE, "")
            return error_page(request, None, exc, signout=csrf.token(session_id) if session_id else "")
        if viewer is None:
            target = signin_url(request)
            if is_htmx(request):
                return web.Response(status=204, headers=headers({"HX-Redirect": target}))
            return back(target)
        try:
            if request.method not in csrf.SAFE_METHODS:
                await check_csrf(request, viewer.session_id)
            response = await view(request, viewer)
        except DomainError as exc:
            return error_page(request, viewer, exc)
        except DB_UNAVAILABLE as exc:
            log.warning("dashboard.database_unavailable", error=type(exc).__name__)
            return unavailable(request, viewer)
        response.headers.update(SECURITY)
        return response

    return handler
