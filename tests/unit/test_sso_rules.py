"""Single sign-on's pure rules (monitor/domain/sso.py) and the ID token's checks
(monitor/oidc.py), as tables; the provider's discovery and keys cached, against the local
provider of tests/support/oidc_provider.py on loopback."""

from __future__ import annotations

import base64
import hashlib
import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

import aiohttp
import pytest
from joserfc.jwk import KeySet, RSAKey
from support.oidc_provider import OidcProvider

from monitor import config, oidc
from monitor.domain import sso
from monitor.domain.errors import DomainError

ISSUER = "https://id.example"
CLIENT = "monitor"
NONCE = "n" * 43
KEY = RSAKey.generate_key(2048, parameters={"kid": "k1"})
OTHER_KEY = RSAKey.generate_key(2048, parameters={"kid": "k1"})
KEYS = KeySet.import_key_set({"keys": [{**KEY.as_dict(private=False), "kid": "k1"}]})


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (None, "/"),
        ("", "/"),
        ("/dashboard?x=1", "/dashboard?x=1"),
        ("//evil.example/", "/"),
        ("/\\evil.example", "/"),
        ("https://evil.example/", "/"),
        ("dashboard", "/"),
        ("/a\r\nSet-Cookie: x", "/"),
        ("/" + "a" * 511, "/" + "a" * 511),
        ("/" + "a" * 512, "/"),
    ],
)
def test_return_path_is_a_path_of_this_site(given: str | None, expected: str) -> None:
    assert sso.return_path(given) == expected


def test_login_values_are_random_and_state_hashes_only_ours() -> None:
    a, b = sso.new_login(), sso.new_login()
    assert len({a.state, a.nonce, a.verifier, b.state, b.nonce, b.verifier}) == 6
    assert 43 <= len(a.verifier) <= 128  # RFC 7636's bounds
    assert sso.state_hash(a.state) == hashlib.sha256(a.state.encode()).digest()
    for bad in (None, "", "short", "x" * 43 + "!", "x" * 129):
        assert sso.state_hash(bad) is None


@pytest.mark.parametrize(
    ("query", "cookie", "same"),
    [("s" * 43, "s" * 43, True), ("s" * 43, "t" * 43, False), ("s" * 43, None, False), (None, None, False)],
)
def test_the_callback_must_come_to_the_browser_that_started(
    query: str | None, cookie: str | None, same: bool
) -> None:
    assert sso.same_browser(query, cookie) is same


@pytest.mark.parametrize(
    ("claims", "expected"),
    [
        ({"email": "ada@example.com", "email_verified": True}, sso.Identity("ada@example.com")),
        (
            {"email": "ada@example.com", "email_verified": True, "name": " Ada ", "groups": ["ops", 3]},
            sso.Identity("ada@example.com", "Ada", ("ops",)),
        ),
        (
            {"email": "ada@example.com", "email_verified": True, "groups": "ops"},
            sso.Identity("ada@example.com", "", ("ops",)),
        ),
        ({"email": "ada@example.com", "email_verified": False}, "email_unverified"),
        ({"email": "ada@example.com", "email_verified": "true"}, "email_unverified"),
        ({"email": "ada@example.com"}, "email_unverified"),
        ({"email_verified": True}, "no_email"),
        ({"email": "not an e-mail", "email_verified": True}, "no_email"),
    ],
)
def test_identity_needs_an_email_the_provider_verified(claims: dict[str, Any], expected: object) -> None:
    if isinstance(expected, str):
        with pytest.raises(DomainError) as refused:
            sso.identity(claims, "groups")
        assert (refused.value.status, refused.value.code) == (403, expected)
    else:
        assert sso.identity(claims, "groups") == expected


MAPPING = {"ops": "editor", "sre": "admin", "audit": "viewer"}


@pytest.mark.parametrize(
    ("groups", "expected"),
    [
        ((), None),
        (("nobody",), None),
        (("ops",), "editor"),
        (("audit", "sre", "ops"), "admin"),
        (("audit",), "viewer"),
    ],
)
def test_role_for_the_highest_mapped_group(groups: tuple[str, ...], expected: str | None) -> None:
    assert sso.role_for(groups, MAPPING) == expected


@pytest.mark.parametrize(
    ("exists", "member", "account", "mapped_groups", "mapped", "expected"),
    [
        (False, None, None, False, None, "no_user"),
        (False, None, 7, False, None, sso.Plan(create_user=True, join="viewer")),
        (False, None, 7, True, "editor", sso.Plan(create_user=True, join="editor")),
        (True, None, None, True, "admin", sso.Plan()),
        (True, None, 7, False, None, sso.Plan(join="viewer")),
        (True, None, 7, True, "admin", sso.Plan(join="admin")),
        (True, "editor", 7, False, None, sso.Plan()),
        (True, "editor", 7, True, "admin", sso.Plan(set_role="admin")),
        (True, "admin", 7, True, None, sso.Plan(set_role="viewer")),  # no mapped group left: the default
        (True, "admin", 7, True, "admin", sso.Plan()),
    ],
)
def test_plan(
    exists: bool, member: Any, account: int | None, mapped_groups: bool, mapped: Any, expected: object
) -> None:
    def run() -> sso.Plan:
        return sso.plan(
            user_exists=exists, member_role=member, account=account, groups_mapped=mapped_groups,
            mapped=mapped, default="viewer",
        )  # fmt: skip

    if isinstance(expected, str):
        with pytest.raises(DomainError) as refused:
            run()
        assert (refused.value.status, refused.value.code) == (403, expected)
    else:
        assert run() == expected


@pytest.mark.parametrize(
    ("address", "cidrs", "trusted"),
    [
        ("127.0.0.1", ["127.0.0.0/8"], True),
        ("127.0.0.1", ["10.0.0.0/8"], False),
        ("::ffff:10.1.2.3", ["10.0.0.0/8"], True),
        ("fd00::5", ["fd00::/8", "10.0.0.0/8"], True),
        ("fe80::1%eth0", ["fe80::/10"], True),
        (None, ["0.0.0.0/0"], False),
        ("not-an-address", ["0.0.0.0/0"], False),
    ],
)
def test_trusted_peer(address: str | None, cidrs: list[str], trusted: bool) -> None:
    assert sso.trusted_peer(address, cidrs) is trusted


@pytest.mark.parametrize(
    ("header", "email"),
    [(None, None), ("", None), (" ada@example.com ", "ada@example.com"), ("ada", None), ("a@b, c@d", None)],
)
def test_proxy_identity(header: str | None, email: str | None) -> None:
    found = sso.proxy_identity(header)
    assert (found.email if found else None) == email


def token(key: RSAKey = KEY, alg: str = "RS256", **claims: Any) -> str:
    from joserfc import jwt

    now = int(time.time())
    body = {"iss": ISSUER, "aud": CLIENT, "sub": "s1", "iat": now, "exp": now + 300, "nonce": NONCE, **claims}
    return str(jwt.encode({"alg": alg, "kid": "k1"}, {k: v for k, v in body.items() if v is not None}, key))


def unsigned(**claims: Any) -> str:
    def part(data: dict[str, Any]) -> str:
        import json

        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    now = int(time.time())
    claims = {"iss": ISSUER, "aud": CLIENT, "sub": "s", "iat": now, "exp": now + 60, "nonce": NONCE}
    return f"{part({'alg': 'none'})}.{part(claims)}."


@pytest.mark.parametrize(
    ("make", "code"),
    [
        (lambda: token(), None),
        (lambda: token(aud=["other", CLIENT], azp=CLIENT), None),
        (lambda: token(exp=int(time.time()) - 30), None),  # within the leeway
        (lambda: token(iss="https://evil.example"), "id_token_iss"),
        (lambda: token(aud="other-client"), "id_token_aud"),
        (lambda: token(aud=["other", CLIENT]), "id_token_azp"),
        (lambda: token(exp=int(time.time()) - 120), "id_token_expired"),
        (lambda: token(exp=None), "id_token_exp"),
        (lambda: token(iat=None), "id_token_iat"),
        (lambda: token(nonce="m" * 43), "id_token_nonce"),
        (lambda: token(nonce=None), "id_token_nonce"),
        (lambda: token(key=OTHER_KEY), "id_token_signature"),
        (lambda: unsigned(), "id_token_signature"),
        (lambda: "not.a.token", "id_token_invalid"),
    ],
)
def test_verify_id_token(make: Any, code: str | None) -> None:
    def run() -> dict[str, Any]:
        return oidc.verify_id_token(
            make(), KEYS, issuer=ISSUER, client_id=CLIENT, nonce=NONCE, algorithms={"RS256"}, now=time.time()
        )

    if code is None:
        assert run()["sub"] == "s1"
    else:
        with pytest.raises(oidc.OidcError) as refused:
            run()
        assert (refused.value.status, refused.value.code) == (400, code)


def test_an_hmac_token_signed_with_the_client_secret_is_refused() -> None:
    from joserfc import jwt
    from joserfc.jwk import OctKey

    secret = OctKey.import_key(b"the-client-secret-of-32-bytes!!!")
    forged = jwt.encode({"alg": "HS256"}, {"iss": ISSUER, "aud": CLIENT, "nonce": NONCE}, secret)
    keys = KeySet([*KEYS.keys, secret])
    with pytest.raises(oidc.OidcError) as refused:
        oidc.verify_id_token(
            forged,
            keys,
            issuer=ISSUER,
            client_id=CLIENT,
            nonce=NONCE,
            algorithms={"RS256", "HS256"},
            now=time.time(),
        )
    assert refused.value.code == "id_token_signature"


@pytest.mark.parametrize(
    ("doc", "code"),
    [
        ({"issuer": "https://other.example"}, "provider_issuer"),
        ({"issuer": ISSUER, "token_endpoint": "x", "jwks_uri": "x"}, "provider_document"),
        (
            {"issuer": ISSUER, "authorization_endpoint": f"{ISSUER}/a", "token_endpoint": f"{ISSUER}/t",
             "jwks_uri": f"{ISSUER}/k", "id_token_signing_alg_values_supported": ["HS256", "none"]},
            "provider_document",
        ),
    ],
)  # fmt: skip
def test_discovery_document_refused(doc: dict[str, Any], code: str) -> None:
    with pytest.raises(oidc.OidcError) as refused:
        oidc.Discovery.from_document(doc, ISSUER)
    assert (refused.value.status, refused.value.code) == (502, code)


def test_settings_for_sso() -> None:
    s = config.load(
        {
            "MONITOR_OIDC_ISSUER": ISSUER,
            "MONITOR_OIDC_CLIENT_ID": CLIENT,
            "MONITOR_PUBLIC_URL": "https://monitor.example/",
            "MONITOR_OIDC_GROUP_ROLES": "ops=editor, team=a=admin",
            "MONITOR_OIDC_SCOPES": "openid email groups",
        }
    )
    assert s.oidc_redirect == "https://monitor.example/api/v1/sso/callback"
    assert s.oidc_group_roles == {"ops": "editor", "team=a": "admin"}
    assert s.oidc_scopes == ["openid", "email", "groups"]
    refusals = [
        ({"MONITOR_OIDC_ISSUER": ISSUER}, "MONITOR_OIDC_CLIENT_ID"),
        (
            {
                "MONITOR_OIDC_ISSUER": "http://id.example",
                "MONITOR_OIDC_CLIENT_ID": CLIENT,
                "MONITOR_PUBLIC_URL": "https://m.example",
            },
            "must be https",
        ),
        ({"MONITOR_OIDC_ISSUER": ISSUER, "MONITOR_OIDC_CLIENT_ID": CLIENT}, "MONITOR_PUBLIC_URL"),
        ({"MONITOR_OIDC_GROUP_ROLES": "ops=boss"}, "MONITOR_OIDC_GROUP_ROLES"),
        ({"MONITOR_OIDC_GROUP_ROLES": "ops"}, "MONITOR_OIDC_GROUP_ROLES"),
        ({"MONITOR_TRUSTED_PROXY_HEADER": "Remote-Email"}, "MONITOR_TRUSTED_PROXY_CIDRS"),
        ({"MONITOR_TRUSTED_PROXY_CIDRS": "10.0.0.0/33"}, "MONITOR_TRUSTED_PROXY_CIDRS"),
    ]
    for environ, named in refusals:
        with pytest.raises(config.ConfigError, match=named):
            config.load(environ)
    assert "secret-value" not in repr(config.load({"MONITOR_OIDC_CLIENT_SECRET": "secret-value"}))


async def test_provider_fetches_discovery_and_keys_once_and_builds_the_pkce_request() -> None:
    fetched: list[str] = []

    async def trace(session: object, ctx: object, params: aiohttp.TraceRequestStartParams) -> None:
        fetched.append(params.url.path)

    tracing = aiohttp.TraceConfig()
    tracing.on_request_start.append(trace)
    async with OidcProvider() as idp, aiohttp.ClientSession(trace_configs=[tracing]) as http:
        client = oidc.Client(idp.issuer, idp.client_id, None, idp.redirect_uri)
        now = [0.0]
        provider = oidc.Provider(client, http, clock=lambda: now[0])
        url = await provider.authorization_url("s" * 43, NONCE, "v" * 64)
        q = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
        assert url.startswith(idp.issuer + "/authorize?")
        assert q["code_challenge"] == oidc.challenge("v" * 64) != "v" * 64
        assert (q["code_challenge_method"], q["response_type"]) == ("S256", "code")
        assert (q["state"], q["nonce"], q["redirect_uri"]) == ("s" * 43, NONCE, idp.redirect_uri)
        assert "v" * 64 not in url
        for _ in range(3):
            good = idp.id_token(NONCE, {"email": "a@example.com"})
            assert (await provider.verify(good, NONCE))["email"] == "a@example.com"
        forged = idp.sign({"iss": idp.issuer, "aud": idp.client_id, "nonce": NONCE}, OTHER_KEY)
        for _ in range(3):  # within a minute of the last fetch: no fetch again
            with pytest.raises(oidc.OidcError):
                await provider.verify(forged, NONCE)
        assert (fetched.count("/.well-known/openid-configuration"), fetched.count("/jwks")) == (1, 1)
        now[0] += 61
        idp.key = RSAKey.generate_key(2048, parameters={"kid": "test-2"})  # the provider rotated
        rotated = idp.id_token(NONCE, {"email": "b@example.com"})
        assert (await provider.verify(rotated, NONCE))["email"] == "b@example.com"
        with pytest.raises(oidc.OidcError):
            await provider.verify(forged, NONCE)
        assert (fetched.count("/.well-known/openid-configuration"), fetched.count("/jwks")) == (1, 2)
        now[0] += 3600  # past the cache: both fetched again
        assert (await provider.verify(rotated, NONCE))["email"] == "b@example.com"
        assert (fetched.count("/.well-known/openid-configuration"), fetched.count("/jwks")) == (2, 3)
