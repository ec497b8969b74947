"""What every dashboard request goes through: who is asking (the session cookie), in which
account, the CSRF rule for forms, the security headers, and errors as pages.

A page (``page``) needs a session: without one the browser is sent to ``/signin`` with the
page to come back to. The account a person works in is named by the ``monitor_account``
cookie (an account id, not a secret; ``/account`` sets it), else their first membership; the
role is the membership's, and the domain layer checks it on every operation, so a control
hidden from a viewer is also refused to a viewer who forges the request (403).

A form post (``form``) passes the CSRF rule of ``monitor/domain/csrf.py``: its ``Origin``
names this site, or (a browser that sends none) its ``csrf`` field is the session's token.
Every page carries the token in its forms, and htmx sends it as the ``X-CSRF-Token`` header.

A ``DomainError`` raised by an operation becomes a page with its message (a form's views
catch it first and show it next to the field it names); a database that is down is a 503
page that says so.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from aiohttp import web
from multidict import MultiDict

from monitor import logging as mlog
from monitor.domain import csrf, paging, signin
from monitor.domain.context import Actor, Deps
from monitor.domain.errors import DomainError
from monitor.domain.roles import allows
from monitor.domain.session_ids import COOKIE
from monitor.web import cookie as sessioncookie
from monitor.web.keys import DEPS

log = mlog.get(__name__)

ACCOUNT_COOKIE = "monitor_account"
THEME_COOKIE = "monitor_theme"
THEMES = ("auto", "light", "dark")
CSRF_FIELD = "csrf"
# Scripts, styles, images and fetches from this site only; no inline script or style, no
# framing, forms only back to this site.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
SECURITY = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    "Strict-Transport-Security": "max-age=31536000",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=(), interest-cohort=()",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Content-Security-Policy": CSP,
    # A page shows one person's data: never kept by a shared cache, nor offered from history
    # after signing out.
    "Cache-Control": "no-store",
}


@dataclass(frozen=True)
class Viewer:
    """The signed-in person, in the account they work in."""

    session: signin.Session
    session_id: str
    actor: Actor
    me: Mapping[str, Any]
    memberships: list[Mapping[str, Any]] = field(default_factory=list)

    @property
    def role(self) -> str:
        return self.actor.role

    @property
    def csrf(self) -> str:
        return csrf.token(self.session_id)

    def can(self, resource: str, operation: str = "write") -> bool:
        """Whether to show a control: the domain refuses it anyway when not."""
        return allows(self.actor.role, resource, operation)

    @property
    def account_name(self) -> str:
        return next((m["account"] for m in self.memberships if m["account_id"] == self.actor.account_id), "")


def deps(request: web.Request) -> Deps:
    return request.app[DEPS]


def theme_of(request: web.Request) -> str:
    theme = request.cookies.get(THEME_COOKIE, "auto")
    return theme if theme in THEMES else "auto"


async def viewer_of(request: web.Request) -> Viewer | None:
    """The request's person, or None without a live session."""
    session_id = request.cookies.get(COOKIE)
    if not session_id:
        return None
    d = deps(request)
    session = await signin.session_for(d, session_id)
    if session is None:
        return None
    me = await signin.me(d, session, session_id)
    memberships = list(me["memberships"])  # by account, as actor_for reads them
    chosen = request.cookies.get(ACCOUNT_COOKIE, "")
    ids = {str(m["account_id"]) for m in memberships}
    account = chosen if chosen in ids else (str(memberships[0]["account_id"]) if memberships else None)
    actor = signin.actor_among(memberships, session, account, sessioncookie.client(request))
    return Viewer(session, session_id, actor, me, memberships)


def signin_url(request: web.Request) -> str:
    return "/signin?next=" + quote(request.path_qs, safe="")


def headers(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    return {**SECURITY, **(extra or {})}


View = Callable[[web.Request, Viewer], Awaitable[web.StreamResponse]]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def is_htmx(request: web.Request) -> bool:
    return request.headers.get("HX-Request") == "true"


async def check_csrf(request: web.Request, session_id: str) -> None:
    given = request.headers.get(csrf.HEADER)
    if given is None and request.content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
        given = (await request.post()).get(CSRF_FIELD)  # type: ignore[assignment]
    why = csrf.refusal(
        request.method,
        origin=request.headers.get("Origin"),
        site=sessioncookie.site(request),
        session_id=session_id,
        given=given if isinstance(given, str) else None,
    )
    if why is not None:
        raise DomainError(403, "csrf", why)


async def form_data(request: web.Request) -> MultiDict[str]:
    """A form's fields as text (file uploads are not taken)."""
    posted = await request.post()
    return MultiDict((k, v) for k, v in posted.items() if isinstance(v, str))


def path_id(request: web.Request, name: str, what: str) -> int:
    """The id in the path's ``{name}``: ASCII digits from 1 to ``paging.MAX_ID`` (as the JSON
    API takes them), else a 404 naming ``what``: an id no row can have is not found, never a
    500 from the database."""
    raw = request.match_info[name]
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 19 and 0 < int(raw) <= paging.MAX_ID):
        raise DomainError(404, "not_found", f"{what} not found")
    return int(raw)


def back(location: str) -> web.Response:
    """A 303 to the page to see the result on (post/redirect/get)."""
    return web.Response(status=303, headers=headers({"Location": location}))


def safe_next(value: str | None, default: str = "/") -> str:
    """A local path to return to after signing in: never another site (``//host``, ``\\``)."""
    if not value or not value.startswith("/") or value.startswith("//") or "\\" in value:
        return default
    if len(value) > 512 or any(ord(c) < 0x21 for c in value):
        return default
    return value
