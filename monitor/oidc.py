"""OpenID Connect, the relying party's side: the provider's discovery document and keys
(fetched once, cached), the authorization request (code flow with PKCE, S256), the code
exchange, and the ID token's checks.

An ID token is accepted only when its signature verifies with a key of the provider's JWKS
(an asymmetric algorithm the provider announces: never ``none``, never HMAC, so the client
secret cannot sign one), its ``iss`` is the configured issuer exactly, its ``aud`` holds our
client id (and ``azp`` is ours when there are several audiences), ``exp`` is not past and
``iat`` is there (60 s of leeway for clocks), and its ``nonce`` is the one this login sent.
A ``kid`` the cached keys do not know fetches them again (the provider rotated), at most once
a minute, so a stream of forged tokens cannot make us hammer the provider.

The provider's URLs and the SSRF guard (monitor/net/): the guard vets what *users* make the
server dial (a monitor's URL, a webhook); the issuer is an *operator* setting, as
MONITOR_TELEGRAM_API_BASE is, and is often on a private address the guard's deny list refuses
(a Keycloak beside the monitor; a loopback provider in tests). So these fetches use a plain
client session, not the vetted one: the discovery document at ``{issuer}/.well-known/
openid-configuration``, then the ``jwks_uri`` and ``token_endpoint`` it names (the document is
taken only if its ``issuer`` is ours exactly, OpenID Discovery 4.3). Nothing a user sends is
ever fetched: the callback carries only ``code`` and ``state``, and where the browser goes
afterwards is a local path. No redirect is followed, bodies are read up to 1 MiB, each
request times out after 10 s.

The code, the tokens and the client secret are never logged nor put in an answer; a refusal
names its reason only (``OidcError.code``).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote_plus

import aiohttp
from authlib.common.urls import add_params_to_uri
from authlib.oauth2.rfc7636 import create_s256_code_challenge
from joserfc import errors as jose_errors
from joserfc import jwt
from joserfc.jwk import KeySet
from pydantic import SecretStr

from monitor import logging as mlog

log = mlog.get(__name__)

LEEWAY_SECONDS = 60
REFETCH_KEYS_SECONDS = 60.0
MAX_BODY = 1024 * 1024
TIMEOUT = aiohttp.ClientTimeout(total=10)
# What an ID token may be signed with: asymmetric only (an HMAC key would be our client secret).
ALGORITHMS = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)


class OidcError(Exception):
    """A refused step, with a reason that quotes nothing secret. ``status``: 400 for what the
    login sent (a bad token, a wrong state), 502 when the provider failed or misbehaved."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Client:
    """What the operator set (monitor/config.py, ``oidc_*``)."""

    issuer: str
    client_id: str
    client_secret: SecretStr | None
    redirect_uri: str
    scopes: tuple[str, ...] = ("openid", "email", "profile")
    cache_seconds: float = 3600.0


@dataclass(frozen=True)
class Discovery:
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    algorithms: frozenset[str]
    auth_methods: frozenset[str]

    @classmethod
    def from_document(cls, doc: Mapping[str, Any], issuer: str) -> Discovery:
        if doc.get("issuer") != issuer:
            raise OidcError(502, "provider_issuer", "the discovery document is for another issuer")
        urls = {}
        for name in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
            value = doc.get(name)
            if not isinstance(value, str) or not value.startswith(("https://", "http://")):
                raise OidcError(502, "provider_document", f"the discovery document has no {name}")
            urls[name] = value
        algorithms = frozenset(doc.get("id_token_signing_alg_values_supported") or ["RS256"]) & ALGORITHMS
        if not algorithms:
            raise OidcError(
                502, "provider_document", "the provider signs ID tokens with no algorithm we accept"
            )
        methods = frozenset(doc.get("token_endpoint_auth_methods_supported") or ["client_secret_basic"])
        return cls(issuer, **urls, algorithms=algorithms, auth_methods=methods)


def challenge(verifier: str) -> str:
    """PKCE's S256 code challenge of ``verifier`` (RFC 7636)."""
    return str(create_s256_code_challenge(verifier))


def authorization_url(found: Discovery, client: Client, state: str, nonce: str, verifier: str) -> str:
    params = [
        ("response_type", "code"),
        ("client_id", client.client_id),
        ("redirect_uri", client.redirect_uri),
        ("scope", " ".join(client.scopes)),
        ("state", state),
        ("nonce", nonce),
        ("code_challenge", challenge(verifier)),
        ("code_challenge_method", "S256"),
    ]
    return str(add_params_to_uri(found.authorization_endpoint, params))


def verify_id_token(
    token: str,
    keys: KeySet,
    *,
    issuer: str,
    client_id: str,
    nonce: str,
    algorithms: Collection[str],
    now: float,
    leeway: int = LEEWAY_SECONDS,
) -> dict[str, Any]:
    """The claims of a valid ID token; an ``OidcError`` (400) naming the first check that fails."""
    try:
        decoded = jwt.decode(token, keys, algorithms=sorted(set(algorithms) & ALGORITHMS))
    except (jose_errors.BadSignatureError, jose_errors.UnsupportedAlgorithmError) as exc:
        raise OidcError(
            400, "id_token_signature", f"the ID token's signature does not verify ({exc.error})"
        ) from None
    except (ValueError, jose_errors.JoseError) as exc:
        error = getattr(exc, "error", type(exc).__name__)
        raise OidcError(400, "id_token_invalid", f"the ID token cannot be read ({error})") from None
    claims = dict(decoded.claims)
    registry = jwt.JWTClaimsRegistry(
        now=int(now),
        leeway=leeway,
        iss={"essential": True, "value": issuer},
        aud={"essential": True, "value": client_id},
        sub={"essential": True},
        exp={"essential": True},
        iat={"essential": True},
    )
    try:
        registry.validate(claims)
    except jose_errors.ExpiredTokenError:
        raise OidcError(400, "id_token_expired", "the ID token has expired") from None
    except (jose_errors.InvalidClaimError, jose_errors.MissingClaimError) as exc:
        claim = str(getattr(exc, "claim", "")) or "a claim"
        words = {"iss": "the ID token is from another issuer", "aud": "the ID token is for another client"}
        raise OidcError(
            400, f"id_token_{claim}", words.get(claim, f"the ID token's {claim} is wrong")
        ) from None
    except jose_errors.JoseError as exc:
        raise OidcError(400, "id_token_invalid", f"the ID token is refused ({exc.error})") from None
    audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
    if len(audiences) > 1 and claims.get("azp") != client_id:
        raise OidcError(400, "id_token_azp", "the ID token was issued to another party (azp)")
    if claims.get("nonce") != nonce:
        raise OidcError(400, "id_token_nonce", "the ID token's nonce is not this sign-in's")
    return claims


class Provider:
    """One provider for the process: its discovery document and keys cached
    ``client.cache_seconds``; concurrent first uses fetch once."""

    def __init__(
        self, client: Client, http: aiohttp.ClientSession, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.client = client
        self._http = http
        self._clock = clock
        self._lock = asyncio.Lock()
        self._found: tuple[float, Discovery] | None = None
        self._keys: tuple[float, KeySet] | None = None

    async def _get_json(self, url: str, what: str) -> Any:
        try:
            async with self._http.get(url, allow_redirects=False, timeout=TIMEOUT) as response:
                body = await response.content.read(MAX_BODY + 1)
                status = response.status
        except (aiohttp.ClientError, TimeoutError) as exc:
            log.warning("sso.provider_unreachable", what=what, error=type(exc).__name__)
            raise OidcError(
                502, "provider_unreachable", f"the identity provider's {what} is unreachable"
            ) from None
        return _json_of(status, body, what)

    async def discovery(self) -> Discovery:
        async with self._lock:
            if self._found is None or self._clock() >= self._found[0]:
                url = self.client.issuer.rstrip("/") + "/.well-known/openid-configuration"
                doc = await self._get_json(url, "discovery document")
                if not isinstance(doc, dict):
                    raise OidcError(502, "provider_document", "the discovery document is not an object")
                self._found = (
                    self._clock() + self.client.cache_seconds,
                    Discovery.from_document(doc, self.client.issuer),
                )
            return self._found[1]

    async def keys(self, *, refresh: bool = False) -> KeySet:
        """The provider's keys; ``refresh`` fetches them again unless that was done within the
        last minute."""
        found = await self.discovery()
        async with self._lock:
            now = self._clock()
            stale = self._keys is None or now >= self._keys[0]
            recent = (
                self._keys is not None
                and now < self._keys[0] - self.client.cache_seconds + REFETCH_KEYS_SECONDS
            )
            if stale or (refresh and not recent):
                doc = await self._get_json(found.jwks_uri, "key set")
                try:
                    key_set = KeySet.import_key_set(doc)
                except (ValueError, TypeError, KeyError, jose_errors.JoseError):
                    raise OidcError(502, "provider_keys", "the provider's key set cannot be read") from None
                self._keys = (now + self.client.cache_seconds, key_set)
            assert self._keys is not None
            return self._keys[1]

    async def authorization_url(self, state: str, nonce: str, verifier: str) -> str:
        return authorization_url(await self.discovery(), self.client, state, nonce, verifier)

    async def exchange(self, code: str, verifier: str) -> str:
        """The ID token for ``code``: the token endpoint's answer, with the client's secret by
        HTTP Basic (or in the form, if that is all the provider takes; none for a public client)."""
        found = await self.discovery()
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": self.client.redirect_uri,
            "client_id": self.client.client_id,
            "code_verifier": verifier,
        }
        auth = None
        secret = self.client.client_secret
        if secret is not None:
            if "client_secret_basic" in found.auth_methods or "client_secret_post" not in found.auth_methods:
                auth = aiohttp.BasicAuth(
                    _form_quote(self.client.client_id), _form_quote(secret.get_secret_value())
                )
            else:
                form["client_secret"] = secret.get_secret_value()
        try:
            async with self._http.post(
                found.token_endpoint, data=form, auth=auth, allow_redirects=False, timeout=TIMEOUT,
                headers={"Accept": "application/json"},
            ) as response:  # fmt: skip
                body = await response.content.read(MAX_BODY + 1)
                status = response.status
        except (aiohttp.ClientError, TimeoutError) as exc:
            log.warning("sso.provider_unreachable", what="token endpoint", error=type(exc).__name__)
            raise OidcError(
                502, "provider_unreachable", "the identity provider's token endpoint is unreachable"
            ) from None
        if status in (400, 401):
            error = _error_code(body)
            log.info("sso.code_refused", status=status, error=error)  # the provider's error code only
            raise OidcError(400, "code_refused", f"the identity provider refused the code ({error})")
        answer = _json_of(status, body, "token endpoint")
        token = answer.get("id_token") if isinstance(answer, dict) else None
        if not isinstance(token, str):
            raise OidcError(502, "provider_token", "the token endpoint sent no ID token")
        return token

    async def verify(self, token: str, nonce: str) -> dict[str, Any]:
        found = await self.discovery()
        c = self.client

        def check(keys: KeySet) -> dict[str, Any]:
            return verify_id_token(
                token, keys, issuer=c.issuer, client_id=c.client_id, nonce=nonce,
                algorithms=found.algorithms, now=time.time(),
            )  # fmt: skip

        try:
            return check(await self.keys())
        except OidcError as exc:
            if exc.code not in ("id_token_signature", "id_token_invalid"):
                raise
        # A key the provider added since we fetched them: once more with fresh keys.
        return check(await self.keys(refresh=True))


def _form_quote(text: str) -> str:
    """RFC 6749 2.3.1: the client id and secret are form-encoded before Basic encoding."""
    return quote_plus(text)


def _json_of(status: int, body: bytes, what: str) -> Any:
    if len(body) > MAX_BODY:
        raise OidcError(502, "provider_answer", f"the identity provider's {what} is over 1 MiB")
    if status != 200:
        log.warning("sso.provider_error", what=what, status=status)
        raise OidcError(502, "provider_answer", f"the identity provider's {what} answered {status}")
    try:
        return json.loads(body)
    except ValueError:
        raise OidcError(502, "provider_answer", f"the identity provider's {what} is not JSON") from None


def _error_code(body: bytes) -> str:
    """The ``error`` of an OAuth error answer (``invalid_grant``), if it is a short token."""
    try:
        error = json.loads(body).get("error")
    except (ValueError, AttributeError):
        return "unknown"
    return error if isinstance(error, str) and error.isascii() and len(error) <= 64 else "unknown"
