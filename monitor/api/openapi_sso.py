"""The OpenAPI description of single sign-on (the routes of ``api/sso.py``): browser
redirects, not JSON, except for the refusals."""

from __future__ import annotations

from typing import TYPE_CHECKING

from monitor.api.openapi_signin import SET_COOKIE
from monitor.domain.sso import MAX_RETURN_PATH, STATE_COOKIE

if TYPE_CHECKING:  # openapi.py imports this module
    from monitor.api.openapi import _Builder as Builder

LOCATION = {"required": True, "schema": {"type": "string", "format": "uri-reference"}}
NEXT = {
    "name": "next",
    "in": "query",
    "required": False,
    "description": "where to go once signed in: a path of this site of at most "
    f"{MAX_RETURN_PATH} characters (anything else is `/`); a request line longer than 8,190 "
    "bytes is refused with 400",
    "schema": {"type": "string", "maxLength": MAX_RETURN_PATH},
}


# OAuth's code, state and error are visible ASCII (RFC 6749, appendix A); their lengths together,
# percent-encoded, stay under the 8,190 bytes of aiohttp's request line.
VSCHAR = "^[\\x20-\\x7e]*$"


def _query(name: str, description: str, longest: int) -> dict[str, object]:
    schema = {"type": "string", "maxLength": longest, "pattern": VSCHAR}
    return {"name": name, "in": "query", "required": False, "description": description, "schema": schema}


def add_sso(b: Builder) -> None:
    # fmt: off
    b.add("get", "/api/v1/sso/login", "ssoLogin",
          "Sign in with the identity provider: a redirect to it (OpenID Connect, code flow with PKCE)",
          tag="session", public=True, errors=(400, 404, 429, 502, 503), parameters=(NEXT,),
          ok={302: {"description": "To the provider's authorization endpoint; the login's state is "
                    f"kept in the {STATE_COOKIE} cookie for ten minutes.",
                    "headers": {"Location": LOCATION, "Set-Cookie": {
                        "required": True, "schema": {"type": "string"},
                        "description": f"{STATE_COOKIE}: Secure; HttpOnly; SameSite=Lax; Path=/"}}}})
    b.add("get", "/api/v1/sso/callback", "ssoCallback",
          "Where the identity provider sends the browser back (the redirect URI to register)",
          tag="session", public=True, errors=(400, 403, 404, 429, 502, 503),
          parameters=(_query("code", "the authorization code", 1800),
                      _query("state", "the login's state", 512),
                      _query("error", "the provider's refusal, instead of a code", 256)),
          ok={303: {"description": "Signed in: on to the login's `next` path, with the session cookie.",
                    "headers": {"Location": LOCATION, **SET_COOKIE}}})
    b.add("get", "/api/v1/sso/proxy", "ssoProxy",
          "Sign in as the user a trusted reverse proxy names in MONITOR_TRUSTED_PROXY_HEADER",
          tag="session", public=True, errors=(400, 401, 403, 404, 429, 503), parameters=(NEXT,),
          ok={303: {"description": "Signed in: on to `next`, with the session cookie.",
                    "headers": {"Location": LOCATION, **SET_COOKIE}}})
    # fmt: on
