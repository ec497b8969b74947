"""Single sign-on against a real api process and the local OpenID provider of
tests/support/oidc_provider.py on loopback: a good sign-in creates the user (then matches it,
and matches a user made with a password, by e-mail in any case) and gives a session; an ID
token from another issuer, for another client or expired, an e-mail not verified, a state
replayed or from another browser are refused with a 4xx that says which, and no session; the
groups claim sets the role; the proxy header is honoured only from its networks. At the end of
each test the api's log holds no client secret, code, token, state or session id.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import asyncpg
import pytest
from support import MonitorProcess, ProcessFactory, ensure_account, leaks
from support.oidc_provider import OidcProvider
from support.people import COOKIE, make_user

pytestmark = pytest.mark.e2e

STATE_COOKIE = "__Host-monitor_sso"
ADA = {"email": "ada@example.com", "email_verified": True, "name": "Ada Lovelace"}


@pytest.fixture
async def idp() -> AsyncIterator[OidcProvider]:
    async with OidcProvider() as provider:
        yield provider


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    # No cookie jar: the test carries the (Secure) cookies by hand, as tests/support/people.py does.
    async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as session:
        yield session


def cookie(response: aiohttp.ClientResponse, name: str) -> str | None:
    for line in response.headers.getall("Set-Cookie", []):
        key, _, rest = line.partition("=")
        if key == name:
            return rest.split(";", 1)[0] or None
    return None


@dataclass
class Flow:
    """One browser's way through a sign-in: what it was handed, and how it ended."""

    status: int = 0
    body: Any = None
    location: str | None = None
    session_id: str | None = None
    state: str | None = None
    callback_query: str = ""
    seen: list[str] = field(default_factory=list)


async def start(api: MonitorProcess, http: aiohttp.ClientSession, next_path: str = "/dash") -> Flow:
    """The login and the provider's answer: up to the redirect back to our callback."""
    flow = Flow()
    async with http.get(
        f"{api.base_url}/api/v1/sso/login", params={"next": next_path}, allow_redirects=False
    ) as r:
        assert r.status == 302, await r.text()
        flow.state = cookie(r, STATE_COOKIE)
        to_provider = r.headers["Location"]
        assert "Secure" in r.headers["Set-Cookie"] and "HttpOnly" in r.headers["Set-Cookie"]
    assert flow.state and flow.state in to_provider
    async with http.get(to_provider, allow_redirects=False) as r:
        assert r.status == 302, await r.text()
        back = urlsplit(r.headers["Location"])
    flow.callback_query = back.query
    flow.seen.append(flow.state)
    leaks.secret("SSO state", flow.state)
    return flow


async def finish(
    api: MonitorProcess, http: aiohttp.ClientSession, flow: Flow, state_cookie: str | None = None
) -> Flow:
    sent = state_cookie if state_cookie is not None else flow.state
    headers = {"Cookie": f"{STATE_COOKIE}={sent}"} if sent else {}
    url = f"{api.base_url}/api/v1/sso/callback?{flow.callback_query}"
    async with http.get(url, headers=headers, allow_redirects=False) as r:
        flow.status = r.status
        text = await r.text()
        flow.body = await r.json() if r.content_type == "application/json" else text
        flow.location = r.headers.get("Location")
        flow.session_id = cookie(r, COOKIE)
    if flow.session_id:
        flow.seen.append(flow.session_id)
        leaks.secret("session id", flow.session_id)
    return flow


async def sign_in(
    api: MonitorProcess, http: aiohttp.ClientSession, idp: OidcProvider, claims: dict[str, Any]
) -> Flow:
    idp.next_claims = claims
    return await finish(api, http, await start(api, http))


async def me(api: MonitorProcess, http: aiohttp.ClientSession, session_id: str) -> dict[str, Any]:
    async with http.get(f"{api.base_url}/api/v1/me", headers={"Cookie": f"{COOKIE}={session_id}"}) as r:
        assert r.status == 200, await r.text()
        body: dict[str, Any] = await r.json()
        return body


def assert_no_secret(api: MonitorProcess, idp: OidcProvider, flows: list[Flow]) -> None:
    text = api.log_text()
    assert text, "the api logged nothing"
    secrets = [idp.client_secret, *idp.handed_out, *(s for f in flows for s in f.seen)]
    for secret in secrets:
        assert secret not in text, f"a secret ({secret[:6]}...) is in the api's log"
    for f in flows:
        for secret in [idp.client_secret, *idp.handed_out]:
            assert secret not in str(f.body), "a secret is in an answer"


async def test_sign_in_creates_then_matches_and_a_state_works_once(
    procs: ProcessFactory, db: asyncpg.Connection, idp: OidcProvider, http: aiohttp.ClientSession
) -> None:
    account = await ensure_account(db)
    bob = await make_user(db, "bob@example.com", "Bob-Password-9f8e7d6c", account, "editor")
    api = await procs.start("api", env=idp.env(MONITOR_SSO_ACCOUNT=str(account)))

    first = await sign_in(api, http, idp, ADA)
    assert (first.status, first.location) == (303, "/dash"), first.body
    assert first.session_id
    who = await me(api, http, first.session_id)
    assert (who["email"], who["display_name"]) == ("ada@example.com", "Ada Lovelace")
    assert [(m["account_id"], m["role"]) for m in who["memberships"]] == [(account, "viewer")]
    ada = await db.fetchrow("SELECT id, password_hash FROM users WHERE email = 'ada@example.com'")
    assert ada["password_hash"] is None  # signs in by SSO; a reset can give a password
    added = "SELECT count(*) FROM audit_log WHERE resource = 'members' AND operation = 'add' AND user_id = $1"
    assert await db.fetchval(added, ada["id"]) == 1

    again = await sign_in(api, http, idp, {**ADA, "email": "ADA@example.com"})
    assert again.status == 303 and again.session_id and again.session_id != first.session_id
    assert (await me(api, http, again.session_id))["id"] == ada["id"]  # matched, not made twice
    assert await db.fetchval("SELECT count(*) FROM users") == 2

    matched = await sign_in(api, http, idp, {"email": "Bob@Example.com", "email_verified": True})
    assert matched.status == 303 and matched.session_id
    who = await me(api, http, matched.session_id)
    assert who["id"] == bob and [m["role"] for m in who["memberships"]] == ["editor"]

    # The same state again (the browser's back button, an attacker who saw the URL): refused
    # before any code is exchanged.
    exchanged = idp.token_requests
    replayed = await finish(api, http, again)
    assert (replayed.status, replayed.body["error"]["code"]) == (400, "state_unknown")
    assert replayed.session_id is None and idp.token_requests == exchanged

    # A callback with another browser's state cookie, or none.
    idp.next_claims = ADA
    flow = await start(api, http)
    other = await start(api, http)
    foreign = await finish(api, http, flow, state_cookie=other.state)
    assert (foreign.status, foreign.body["error"]["code"]) == (400, "state_mismatch")
    assert (await finish(api, http, flow, state_cookie="")).status == 400
    assert (await finish(api, http, flow)).status == 303  # the rightful browser still can
    assert_no_secret(api, idp, [first, again, matched, replayed, foreign, flow, other])


async def test_wrong_issuer_audience_expiry_or_unverified_email_are_refused(
    procs: ProcessFactory, db: asyncpg.Connection, idp: OidcProvider, http: aiohttp.ClientSession
) -> None:
    account = await ensure_account(db)
    api = await procs.start("api", env=idp.env(MONITOR_SSO_ACCOUNT=str(account)))
    cases: list[tuple[dict[str, Any], dict[str, Any], int, str]] = [
        ({"iss": "http://127.0.0.1:1"}, ADA, 400, "id_token_iss"),
        ({"aud": "another-client"}, ADA, 400, "id_token_aud"),
        ({"exp": int(time.time()) - 3600}, ADA, 400, "id_token_expired"),
        ({}, {**ADA, "email_verified": False}, 403, "email_unverified"),
        ({}, {"email_verified": True}, 403, "no_email"),
    ]
    flows = []
    for overrides, claims, status, code in cases:
        idp.overrides = overrides
        flow = await sign_in(api, http, idp, claims)
        flows.append(flow)
        assert (flow.status, flow.body["error"]["code"]) == (status, code), (overrides, flow.body)
        assert flow.session_id is None
    assert await db.fetchval("SELECT count(*) FROM users") == 0
    assert await db.fetchval("SELECT count(*) FROM sessions") == 0
    idp.overrides = {}
    assert (await sign_in(api, http, idp, ADA)).status == 303  # the same provider, a good token
    # The provider gone between its redirect and our code exchange: 502, and the login is spent.
    idp.next_claims = ADA
    flow = await start(api, http)
    await idp.close()
    gone = await finish(api, http, flow)
    assert (gone.status, gone.body["error"]["code"]) == (502, "provider_unreachable")
    assert (await finish(api, http, flow)).body["error"]["code"] == "state_unknown"
    assert_no_secret(api, idp, [*flows, flow, gone])


async def test_groups_claim_sets_the_role_and_the_last_owner_stays(
    procs: ProcessFactory, db: asyncpg.Connection, idp: OidcProvider, http: aiohttp.ClientSession
) -> None:
    account = await ensure_account(db)
    await make_user(db, "olga@example.com", None, account, "owner")
    env = idp.env(
        MONITOR_SSO_ACCOUNT=str(account),
        MONITOR_SSO_ROLE="viewer",
        MONITOR_OIDC_GROUP_ROLES="ops=editor,sre=admin",
    )
    api = await procs.start("api", env=env)

    async def role_after(claims: dict[str, Any]) -> str:
        flow = await sign_in(api, http, idp, claims)
        assert flow.status == 303 and flow.session_id, flow.body
        (membership,) = (await me(api, http, flow.session_id))["memberships"]
        return str(membership["role"])

    assert await role_after({**ADA, "groups": ["ops", "unmapped"]}) == "editor"  # created as editor
    assert await role_after({**ADA, "groups": ["ops", "sre"]}) == "admin"  # the highest group
    assert await role_after({**ADA, "groups": []}) == "viewer"  # no mapped group: the default
    olga = {"email": "olga@example.com", "email_verified": True, "groups": ["ops"]}
    assert await role_after(olga) == "owner"  # the account's last owner is never demoted by groups
    changes = await db.fetch("SELECT operation FROM audit_log WHERE resource = 'members' ORDER BY id")
    assert [r["operation"] for r in changes] == ["add", "change_role", "change_role"]


async def test_proxy_header_only_from_its_networks(
    procs: ProcessFactory, db: asyncpg.Connection, http: aiohttp.ClientSession
) -> None:
    account = await ensure_account(db)
    header = {"MONITOR_TRUSTED_PROXY_HEADER": "X-Forwarded-Email"}
    trusted = await procs.start(
        "api",
        env={**header, "MONITOR_TRUSTED_PROXY_CIDRS": "127.0.0.0/8", "MONITOR_SSO_ACCOUNT": str(account)},
    )
    slow = {"MONITOR_API_RATE_PER_SECOND": "0.01", "MONITOR_API_RATE_BURST": "4"}
    untrusted = await procs.start(
        "api", env={**header, **slow, "MONITOR_TRUSTED_PROXY_CIDRS": "10.0.0.0/8,fd00::/8"}
    )

    async def proxy(api: MonitorProcess, headers: dict[str, str]) -> tuple[int, Any, str | None]:
        url = f"{api.base_url}/api/v1/sso/proxy?next=/status"
        async with http.get(url, headers=headers, allow_redirects=False) as r:
            body = await r.json() if r.content_type == "application/json" else None
            return (
                r.status,
                (body or {}).get("error", {}).get("code") or r.headers.get("Location"),
                cookie(r, COOKIE),
            )

    status, where, session_id = await proxy(trusted, {"X-Forwarded-Email": "carol@example.com"})
    assert (status, where) == (303, "/status") and session_id
    who = await me(trusted, http, session_id)
    assert who["email"] == "carol@example.com" and who["memberships"][0]["role"] == "viewer"
    assert (await proxy(trusted, {}))[:2] == (401, "unauthorized")
    assert (await proxy(trusted, {"X-Forwarded-Email": "not an e-mail"}))[:2] == (401, "unauthorized")
    # A forwarded-for header does not make a peer trusted: only the connection's own address.
    forged = {
        "X-Forwarded-Email": "carol@example.com",
        "X-Forwarded-For": "10.1.2.3",
        "Forwarded": "for=10.1.2.3",
    }
    assert await proxy(untrusted, forged) == (403, "untrusted_proxy", None)
    # Nothing else of single sign-on is set up on the second: no OIDC, and nobody is created.
    async with http.get(f"{untrusted.base_url}/api/v1/sso/login", allow_redirects=False) as r:
        assert r.status == 404 and (await r.json())["error"]["code"] == "sso_not_configured"
    assert await db.fetchval("SELECT count(*) FROM users") == 1
    # These routes need no credentials, and each login writes a row: a bucket per client address.
    statuses = []
    for _ in range(3):
        async with http.get(f"{untrusted.base_url}/api/v1/sso/login", allow_redirects=False) as r:
            statuses.append(r.status)
    assert statuses == [404, 404, 429]
    assert session_id not in trusted.log_text()
