"""The session cookie as HTTP carries it, for every face that signs people in (the JSON API's
``/api/v1/session``, the dashboard's sign-in form): set, cleared, and what a request tells of
its sender and of the site it was sent to (for the CSRF rule of ``monitor/domain/csrf.py``).

``__Host-monitor_session``: ``Secure``, ``HttpOnly``, ``SameSite=Lax``, ``Path=/``, no
``Domain``, ``Max-Age`` the absolute lifetime (the server ends it sooner when idle).
"""

from __future__ import annotations

from aiohttp import web

from monitor.domain import csrf, signin
from monitor.domain.session_ids import COOKIE
from monitor.web.keys import SETTINGS


def client(request: web.Request) -> signin.Client:
    return signin.Client(request.remote, request.headers.get("User-Agent"))


def site(request: web.Request) -> str:
    """This site's origin, for the CSRF rule: MONITOR_PUBLIC_URL's, else the request's own."""
    public = request.app[SETTINGS].public_url
    return csrf.origin_of(public if public else f"{request.scheme}://{request.host}")


def set_cookie(response: web.StreamResponse, value: str, max_age: int) -> None:
    response.set_cookie(COOKIE, value, max_age=max_age, path="/", secure=True, httponly=True, samesite="Lax")


def clear_cookie(response: web.StreamResponse) -> None:
    response.del_cookie(COOKIE, path="/", secure=True, httponly=True, samesite="Lax")
