"""A local OpenID provider on loopback, for the single sign-on tests: a discovery document, a
JWKS, an authorization endpoint that signs in whoever ``next_claims`` says at once (no login
page) and a token endpoint that checks what a real one checks (the client's secret by Basic,
the code once, the redirect URI, the PKCE verifier against the S256 challenge) and answers with
an ID token signed by an RSA key the test made. ``overrides`` bend the next ID token (another
``iss``, ``aud``, an ``exp`` past) for the refusals.

``env()`` is what points an api process at it.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from aiohttp import web
from joserfc import jwt
from joserfc.jwk import RSAKey

from . import leaks

CLIENT_ID = "monitor-test"
REDIRECT_URI = "https://monitor.test/api/v1/sso/callback"


@dataclass
class Grant:
    """A code handed out by the authorization endpoint, until the token endpoint takes it."""

    client_id: str
    redirect_uri: str
    nonce: str
    challenge: str
    claims: dict[str, Any]


@dataclass
class OidcProvider:
    host: str = "127.0.0.1"
    client_id: str = CLIENT_ID
    client_secret: str = field(default_factory=lambda: "secret-" + secrets.token_urlsafe(24))
    redirect_uri: str = REDIRECT_URI
    key: RSAKey = field(default_factory=lambda: RSAKey.generate_key(2048, parameters={"kid": "test-1"}))
    next_claims: dict[str, Any] = field(default_factory=dict)  # who the next sign-in is
    overrides: dict[str, Any] = field(default_factory=dict)  # claims of the next ID token, forced
    port: int | None = None
    grants: dict[str, Grant] = field(default_factory=dict)
    handed_out: list[str] = field(default_factory=list)  # every code and token, for the log scan
    token_requests: int = 0
    _runner: web.AppRunner | None = None

    @property
    def issuer(self) -> str:
        assert self.port is not None, "OidcProvider not started"
        return f"http://{self.host}:{self.port}"

    def env(self, **extra: str) -> dict[str, str]:
        leaks.secret("OIDC client secret", self.client_secret)
        return {
            "MONITOR_OIDC_ISSUER": self.issuer,
            "MONITOR_OIDC_CLIENT_ID": self.client_id,
            "MONITOR_OIDC_CLIENT_SECRET": self.client_secret,
            "MONITOR_OIDC_REDIRECT_URL": self.redirect_uri,
            **extra,
        }

    def sign(self, claims: dict[str, Any], key: RSAKey | None = None) -> str:
        signer = key or self.key
        header = {"alg": "RS256", "kid": signer.kid or "test-1"}
        return str(jwt.encode(header, claims, signer))

    def id_token(self, nonce: str, claims: dict[str, Any]) -> str:
        now = int(time.time())
        body = {
            "iss": self.issuer,
            "aud": self.client_id,
            "sub": "sub-" + str(claims.get("email", "")),
            "iat": now,
            "exp": now + 300,
            "nonce": nonce,
            **claims,
            **self.overrides,
        }
        return self.sign(body)

    async def start(self) -> OidcProvider:
        app = web.Application()
        app.router.add_get("/.well-known/openid-configuration", self._discovery)
        app.router.add_get("/jwks", self._jwks)
        app.router.add_get("/authorize", self._authorize)
        app.router.add_post("/token", self._token)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        await web.TCPSite(self._runner, self.host, 0).start()
        self.port = self._runner.addresses[0][1]
        return self

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> OidcProvider:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _discovery(self, request: web.Request) -> web.Response:
        return web.json_response(
            {
                "issuer": self.issuer,
                "authorization_endpoint": self.issuer + "/authorize",
                "token_endpoint": self.issuer + "/token",
                "jwks_uri": self.issuer + "/jwks",
                "response_types_supported": ["code"],
                "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": ["RS256"],
                "token_endpoint_auth_methods_supported": ["client_secret_basic"],
                "code_challenge_methods_supported": ["S256"],
            }
        )

    async def _jwks(self, request: web.Request) -> web.Response:
        public = self.key.as_dict(private=False)
        return web.json_response({"keys": [{**public, "kid": self.key.kid, "use": "sig", "alg": "RS256"}]})

    async def _authorize(self, request: web.Request) -> web.Response:
        q = request.query
        wanted = {"response_type": "code", "client_id": self.client_id, "code_challenge_method": "S256"}
        for name, value in wanted.items():
            if q.get(name) != value:
                return web.json_response({"error": "invalid_request", "field": name}, status=400)
        if q.get("redirect_uri") != self.redirect_uri or "openid" not in q.get("scope", "").split():
            return web.json_response({"error": "invalid_request"}, status=400)
        code = secrets.token_urlsafe(24)
        self.handed_out.append(code)
        leaks.secret("OIDC code", code)
        self.grants[code] = Grant(
            q["client_id"], q["redirect_uri"], q["nonce"], q["code_challenge"], dict(self.next_claims)
        )
        back = urlencode({"code": code, "state": q["state"]})
        raise web.HTTPFound(f"{q['redirect_uri']}?{back}")

    async def _token(self, request: web.Request) -> web.Response:
        self.token_requests += 1
        form = await request.post()
        expected = base64.b64encode(f"{self.client_id}:{self.client_secret}".encode()).decode()
        if request.headers.get("Authorization") != f"Basic {expected}":
            return web.json_response({"error": "invalid_client"}, status=401)
        grant = self.grants.pop(str(form.get("code", "")), None)  # a code works once
        if grant is None or form.get("grant_type") != "authorization_code":
            return web.json_response({"error": "invalid_grant"}, status=400)
        verifier = str(form.get("code_verifier", ""))
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        if challenge != grant.challenge or form.get("redirect_uri") != grant.redirect_uri:
            return web.json_response({"error": "invalid_grant"}, status=400)
        token = self.id_token(grant.nonce, grant.claims)
        access = secrets.token_urlsafe(24)
        self.handed_out.extend([token, access])
        leaks.secret("OIDC ID token", token)
        leaks.secret("OIDC access token", access)
        return web.json_response(
            {"access_token": access, "token_type": "Bearer", "expires_in": 300, "id_token": token}
        )
