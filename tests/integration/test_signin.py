"""Signing in to a real api process: passwords, two factors (right, wrong, replayed, recovery
codes), the lockout and its end, idle and absolute expiry, signing out here and everywhere, a
password change ending the other sessions, CSRF refusals, and the caller's role in the account
named. At the end of each test, the api's whole log is read: no password, session id, CSRF
token, TOTP secret or recovery code appears in it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import aiohttp
import asyncpg
import pytest
from support import MonitorProcess, ProcessFactory, ensure_account, wait_for
from support.people import Browser, make_user

from monitor.domain import totp

pytestmark = pytest.mark.e2e

PASSWORD = "Signin-Pass-7f3c1e9a2b"
ENV = {
    "MONITOR_SESSION_IDLE_SECONDS": "3",
    "MONITOR_SESSION_ABSOLUTE_SECONDS": "8",
    "MONITOR_SIGNIN_FREE_ATTEMPTS": "3",
    "MONITOR_SIGNIN_ADDRESS_FREE_ATTEMPTS": "1000",
    "MONITOR_SIGNIN_DELAY_SECONDS": "1",
    "MONITOR_SIGNIN_DELAY_MAX_SECONDS": "2",
}


@pytest.fixture
async def api_proc(procs: ProcessFactory, db: asyncpg.Connection) -> MonitorProcess:
    return await procs.start("api", env=ENV)


@pytest.fixture
async def secrets_seen(api_proc: MonitorProcess) -> AsyncIterator[list[str]]:
    """What must never be logged; the test adds to it, the log is read at the end."""
    seen = [PASSWORD]
    yield seen
    text = api_proc.log_text()
    assert text, "the api logged nothing"
    for secret in seen:
        assert secret not in text, f"a secret ({secret[:4]}...) is in the api's log"


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


def browser(api_proc: MonitorProcess, http: aiohttp.ClientSession) -> Browser:
    return Browser(api_proc.base_url, http)


async def test_sign_in_me_csrf_and_sign_out(
    api_proc: MonitorProcess, http: aiohttp.ClientSession, db: asyncpg.Connection, secrets_seen: list[str]
) -> None:
    account = await ensure_account(db)
    await make_user(db, "ada@example.com", PASSWORD, account, "editor")
    b = browser(api_proc, http)
    wrong = await b.sign_in("ada@example.com", PASSWORD + "x")
    unknown = await b.sign_in("nobody@example.com", PASSWORD)
    assert (wrong.status, unknown.status) == (401, 401)
    assert wrong.body == unknown.body  # the same answer whether the e-mail exists or not
    assert not wrong.cookies and not unknown.cookies

    done = await b.sign_in("ADA@example.com", PASSWORD)  # the e-mail's case does not matter
    assert done.status == 201, done.body
    (line,) = done.cookies
    attributes = {part.strip().split("=")[0].lower() for part in line.split(";")[1:]}
    assert {"secure", "httponly", "path", "max-age", "samesite"} <= attributes
    assert "samesite=lax" in line.lower() and "path=/" in line.lower() and "domain" not in attributes
    assert b.session_id and b.session_id not in str(done.body)
    secrets_seen.extend(b.seen)
    stored = await db.fetchval("SELECT count(*) FROM sessions WHERE id_hash = sha256(decode($1, 'base64'))",
                               b.session_id.replace("-", "+").replace("_", "/") + "=")  # fmt: skip
    assert stored == 1  # only its hash is kept

    me = await b.call("GET", "/api/v1/me")
    assert me.status == 200 and me.body["email"] == "ada@example.com"
    assert me.body["memberships"] == [{"account_id": account, "account": "test", "role": "editor"}]
    listed = await b.call("GET", "/api/v1/monitors")
    assert listed.status == 200, listed.body

    body = {"name": "Home", "url": "https://example.com/", "interval_seconds": 60}
    refused = await b.call("POST", "/api/v1/monitors", body, csrf=False)
    assert (refused.status, refused.body["error"]["code"]) == (403, "csrf")
    other_site = await b.call("POST", "/api/v1/monitors", body, headers={"Origin": "https://evil.example"})
    assert (other_site.status, other_site.body["error"]["code"]) == (403, "csrf")
    made = await b.call("POST", "/api/v1/monitors", body)
    assert made.status == 201, made.body
    same_site = await b.call("DELETE", f"/api/v1/monitors/{made.body['id']}", csrf=False,
                             headers={"Origin": api_proc.base_url})  # fmt: skip
    assert same_site.status == 204, same_site.body

    out = await b.call("DELETE", "/api/v1/session")
    assert out.status == 204
    after = await b.call("GET", "/api/v1/me")
    assert (after.status, after.body["error"]["code"]) == (401, "unauthorized")


async def test_an_account_is_named_when_the_user_has_several(
    api_proc: MonitorProcess, http: aiohttp.ClientSession, db: asyncpg.Connection, secrets_seen: list[str]
) -> None:
    first, second = await ensure_account(db), await ensure_account(db, "other")
    user = await make_user(db, "bo@example.com", PASSWORD, first, "viewer")
    await db.execute(
        "INSERT INTO memberships (account_id, user_id, role) VALUES ($1, $2, 'owner')", second, user
    )
    b = browser(api_proc, http)
    assert (await b.sign_in("bo@example.com", PASSWORD)).status == 201
    secrets_seen.extend(b.seen)
    unnamed = await b.call("GET", "/api/v1/monitors")
    assert (unnamed.status, unnamed.body["error"]["code"]) == (400, "account_required")
    named = await b.call("GET", "/api/v1/monitors", headers={"X-Monitor-Account": str(second)})
    assert named.status == 200
    foreign = await b.call("GET", "/api/v1/monitors", headers={"X-Monitor-Account": "999999"})
    assert foreign.status == 403


async def test_two_factors_right_wrong_replayed_and_recovery(
    api_proc: MonitorProcess, http: aiohttp.ClientSession, db: asyncpg.Connection, secrets_seen: list[str]
) -> None:
    account = await ensure_account(db)
    await make_user(db, "cy@example.com", PASSWORD, account)
    b = browser(api_proc, http)
    assert (await b.sign_in("cy@example.com", PASSWORD)).status == 201
    enrolled = await b.call("POST", "/api/v1/me/totp")
    assert enrolled.status == 201
    secret = enrolled.body["secret"]
    secrets_seen.append(secret)
    assert await db.fetchval("SELECT secret LIKE 'enc:v1:%' FROM user_totp") is True
    confirmed = await b.call("POST", "/api/v1/me/totp/confirm", {"code": totp.code_at(secret, time.time())})
    assert confirmed.status == 200, confirmed.body
    codes = confirmed.body["recovery_codes"]
    secrets_seen.extend(codes)

    other = browser(api_proc, http)
    missing = await other.sign_in("cy@example.com", PASSWORD)
    assert (missing.status, missing.body["error"]["code"]) == (401, "code_required")
    wrong = await other.sign_in("cy@example.com", PASSWORD, totp="000000" if secret else "")
    assert (wrong.status, wrong.body["error"]["code"]) == (401, "wrong_code")
    # The step after the confirmed one (the window allows one ahead): accepted once, then refused.
    code = totp.code_at(secret, time.time() + totp.STEP)
    assert (await other.sign_in("cy@example.com", PASSWORD, totp=code)).status == 201
    secrets_seen.extend(other.seen)
    third = browser(api_proc, http)
    replayed = await third.sign_in("cy@example.com", PASSWORD, totp=code)
    assert (replayed.status, replayed.body["error"]["code"]) == (401, "wrong_code")
    await db.execute("DELETE FROM signin_throttle")  # two failures so far; the lockout has its own test

    recovered = await third.sign_in("cy@example.com", PASSWORD, recovery_code=codes[0].lower())
    assert recovered.status == 201
    secrets_seen.extend(third.seen)
    again = await browser(api_proc, http).sign_in("cy@example.com", PASSWORD, recovery_code=codes[0])
    assert again.status == 401  # a recovery code works once

    off = await b.call("POST", "/api/v1/me/totp/disable", {"password": PASSWORD})
    assert off.status == 204
    assert (await browser(api_proc, http).sign_in("cy@example.com", PASSWORD)).status == 201


async def test_lockout_and_its_end_whether_the_email_exists_or_not(
    api_proc: MonitorProcess, http: aiohttp.ClientSession, db: asyncpg.Connection, secrets_seen: list[str]
) -> None:
    await make_user(db, "di@example.com", PASSWORD, await ensure_account(db))
    b = browser(api_proc, http)
    for email in ("di@example.com", "ghost@example.com"):
        for _ in range(3):  # MONITOR_SIGNIN_FREE_ATTEMPTS
            assert (await b.sign_in(email, "not the password")).status == 401
        locked = await b.sign_in(email, PASSWORD)
        assert (locked.status, locked.body["error"]["code"]) == (429, "too_many_attempts")
        assert int(locked.headers["Retry-After"]) >= 1

    async def unlocked() -> bool:
        answer = await b.sign_in("di@example.com", PASSWORD)
        assert answer.status in (201, 429), answer.body
        return answer.status == 201

    started = time.monotonic()
    await wait_for(unlocked, timeout=10, interval=0.2)
    assert time.monotonic() - started < 5  # MONITOR_SIGNIN_DELAY_SECONDS: 1
    secrets_seen.extend(b.seen)


async def test_idle_and_absolute_expiry(
    api_proc: MonitorProcess, http: aiohttp.ClientSession, db: asyncpg.Connection, secrets_seen: list[str]
) -> None:
    await make_user(db, "ed@example.com", PASSWORD, await ensure_account(db))
    idle, busy = browser(api_proc, http), browser(api_proc, http)
    assert (await idle.sign_in("ed@example.com", PASSWORD)).status == 201
    assert (await busy.sign_in("ed@example.com", PASSWORD)).status == 201
    signed_in = time.monotonic()
    secrets_seen.extend(idle.seen + busy.seen)

    async def ended(b: Browser) -> bool:
        return (await b.call("GET", "/api/v1/me")).status == 401

    # The idle one ends 3 s after its last request (asking whether it ended is a request: it is
    # asked once); the busy one, seen every half second, lasts until the absolute expiry, 8 s
    # after sign-in.
    while time.monotonic() - signed_in < 3.5:
        assert not await ended(busy)
        await asyncio.sleep(0.5)
    assert await ended(idle)
    await wait_for(lambda: ended(busy), timeout=12, interval=0.5)
    assert time.monotonic() - signed_in >= 7.5


async def test_sign_out_everywhere_and_a_password_change(
    api_proc: MonitorProcess, http: aiohttp.ClientSession, db: asyncpg.Connection, secrets_seen: list[str]
) -> None:
    await make_user(db, "fa@example.com", PASSWORD, await ensure_account(db))
    one, two, three = (browser(api_proc, http) for _ in range(3))
    for b in (one, two, three):
        assert (await b.sign_in("fa@example.com", PASSWORD)).status == 201
    new_password = "Changed-Pass-0b5d8e4c61"
    secrets_seen.append(new_password)
    weak = await one.call(
        "POST", "/api/v1/me/password", {"current_password": PASSWORD, "new_password": "short"}
    )
    assert (weak.status, weak.body["error"]["field"]) == (422, "new_password")
    changed = await one.call(
        "POST", "/api/v1/me/password", {"current_password": PASSWORD, "new_password": new_password}
    )
    assert (changed.status, changed.body) == (200, {"ended": 2})
    assert (await two.call("GET", "/api/v1/me")).status == 401
    assert (await one.call("GET", "/api/v1/me")).status == 200
    assert (await browser(api_proc, http).sign_in("fa@example.com", PASSWORD)).status == 401
    assert (await two.sign_in("fa@example.com", new_password)).status == 201
    secrets_seen.extend(one.seen + two.seen + three.seen)

    everywhere = await two.call("DELETE", "/api/v1/sessions")
    assert (everywhere.status, everywhere.body) == (200, {"ended": 2})
    for b in (one, two):
        assert (await b.call("GET", "/api/v1/me")).status == 401


async def test_a_key_is_not_a_person(
    api_proc: MonitorProcess, http: aiohttp.ClientSession, api_key: str
) -> None:
    async with http.get(
        api_proc.base_url + "/api/v1/me", headers={"Authorization": f"Bearer {api_key}"}
    ) as r:
        assert r.status == 401
    async with http.get(
        api_proc.base_url + "/api/v1/monitors", headers={"Authorization": f"Bearer {api_key}"}
    ) as r:
        assert r.status == 200  # keys are not held to the CSRF rule
