"""Single sign-on over HTTP: ``GET /api/v1/sso/login`` sends the browser to the identity
provider, ``GET /api/v1/sso/callback`` is where it comes back (the redirect URI to register),
``GET /api/v1/sso/proxy`` makes a session of a trusted proxy's header. Each that succeeds
sets the session cookie (``sessions.set_cookie``) and sends the browser on with a 303 to a
path of this site (``?next=``, kept with the login); a refusal is the usual JSON error.

The login's state rides in the ``__Host-monitor_sso`` cookie as well as in the URL
(``Secure``, ``HttpOnly``, ``SameSite=Lax``: sent on the provider's top-level redirect back,
not on a cross-site subrequest), ten minutes at most, cleared by the callback.

The provider (``monitor/oidc.py``) is made once per process when MONITOR_OIDC_ISSUER is set,
with its own client session: nothing is fetched before the first login, so the api starts
while the provider is down.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
from aiohttp import web

from monitor import oidc
from monitor.api import sessions
from monitor.api.context import DEPS, SETTINGS
from monitor.config import Settings
from monitor.domain import signin, sso, sso_signin

PROVIDER = web.AppKey("oidc_provider", oidc.Provider)
PATHS = ("/api/v1/sso/login", "/api/v1/sso/callback", "/api/v1/sso/proxy")
OPEN = frozenset(("GET", path) for path in PATHS)


def client_of(settings: Settings) -> oidc.Client | None:
    if settings.oidc_issuer is None or settings.oidc_client_id is None:
        return None
    return oidc.Client(
        issuer=settings.oidc_issuer,
        client_id=settings.oidc_client_id,
        client_secret=settings.oidc_client_secret,
        redirect_uri=settings.oidc_redirect,
        scopes=tuple(settings.oidc_scopes),
        cache_seconds=settings.oidc_cache_seconds,
    )


def provider(request: web.Request) -> oidc.Provider | None:
    return request.app.get(PROVIDER)


def _state_cookie(response: web.StreamResponse, value: str, max_age: int) -> None:
    response.set_cookie(
        sso.STATE_COOKIE, value, max_age=max_age, path="/", secure=True, httponly=True, samesite="Lax"
    )


def _signed_in(location: str, signed: signin.SignedIn) -> web.Response:
    response = web.Response(status=303, headers={"Location": location, "Cache-Control": "no-store"})
    sessions.set_cookie(response, signed.session_id, signed.max_age)
    return response


async def login(request: web.Request) -> web.Response:
    begun = await sso_signin.begin(request.app[DEPS], provider(request), request.query.get("next"))
    response = web.Response(status=302, headers={"Location": begun.url, "Cache-Control": "no-store"})
    _state_cookie(response, begun.state, begun.max_age)
    return response


async def callback(request: web.Request) -> web.Response:
    query = request.query
    done = await sso_signin.finish(
        request.app[DEPS],
        provider(request),
        state=query.get("state"),
        cookie_state=request.cookies.get(sso.STATE_COOKIE),
        code=query.get("code"),
        error=query.get("error"),
        client=sessions.client(request),
    )
    response = _signed_in(done.return_to, done.signed_in)
    response.del_cookie(sso.STATE_COOKIE, path="/", secure=True, httponly=True, samesite="Lax")
    return response


async def proxy(request: web.Request) -> web.Response:
    header = request.app[SETTINGS].trusted_proxy_header
    signed = await sso_signin.from_proxy(
        request.app[DEPS], request.headers.get(header) if header else None, sessions.client(request)
    )
    return _signed_in(sso.return_path(request.query.get("next")), signed)


def setup(app: web.Application) -> None:
    """The routes, and the provider when one is configured."""
    app.router.add_get("/api/v1/sso/login", login)
    app.router.add_get("/api/v1/sso/callback", callback)
    app.router.add_get("/api/v1/sso/proxy", proxy)
    made = client_of(app[SETTINGS])
    if made is None:
        return

    async def provider_ctx(app: web.Application) -> AsyncIterator[None]:
        async with aiohttp.ClientSession(trust_env=False) as http:
            app[PROVIDER] = oidc.Provider(made, http)
            yield

    app.cleanup_ctx.append(provider_ctx)
