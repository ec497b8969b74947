"""Cookie-authenticated writes and cross-site requests: the one rule, pure.

A browser sends the session cookie with any request to this site, also one a page elsewhere
makes it send (``SameSite=Lax`` stops cross-site POSTs from forms and scripts in today's
browsers, not in every browser nor from a sibling subdomain). So a write (any method but GET,
HEAD, OPTIONS) that authenticates with the cookie passes only when

- its ``Origin`` header names this site (``MONITOR_PUBLIC_URL``'s origin, else the origin the
  request was sent to), or
- it carries no ``Origin`` and its ``X-CSRF-Token`` header is the session's token.

An ``Origin`` that names another site (or ``null``) is refused even with the token. The token
is derived from the session id (SHA-256 over a label and the id): stored nowhere, not
reversible into the id, ended with its session; the sign-in answer and ``GET /api/v1/me``
give it to the page. A Bearer key is never sent by a browser on its own, so requests with one
are not held to this.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from urllib.parse import urlsplit

HEADER = "X-CSRF-Token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def token(session_id: str) -> str:
    digest = hashlib.sha256(b"monitor-csrf\x00" + session_id.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of a URL, lower-cased, the default port left out; ``""`` for one
    that does not parse (a port out of range, a broken IPv6 address): it names no site."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return ""
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    default = {"http": 80, "https": 443}.get(scheme)
    return f"{scheme}://{host}" + (f":{port}" if port is not None and port != default else "")


def same_site(origin: str, site: str) -> bool:
    """Whether an ``Origin`` header names ``site`` (never ``null``, nor one that does not parse)."""
    named = origin_of(origin)
    return origin != "null" and named != "" and named == site


def refusal(method: str, *, origin: str | None, site: str, session_id: str, given: str | None) -> str | None:
    """Why a cookie-authenticated request must be refused, or None when it may go."""
    if method.upper() in SAFE_METHODS:
        return None
    if origin is not None:
        if same_site(origin, site):
            return None
        return "the request comes from another site (its Origin header is not this site's)"
    if given and hmac.compare_digest(token(session_id).encode(), given.encode()):
        return None
    return f"a write with the session cookie needs its CSRF token in the {HEADER} header"
