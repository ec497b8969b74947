"""One's profile in the dashboard: the password changed (the wrong current one and a weak new
one shown next to their fields, never echoed; other sessions end), two-factor sign-in turned
on (the secret and its otpauth URI shown once, a wrong code next to its field, the recovery
codes shown once) and off, and signing out everywhere.
"""

from __future__ import annotations

import time

import aiohttp
import asyncpg
from support import ensure_account, leaks
from support.dashboard import Page, Person, base_url_fixture, http_fixture  # noqa: F401
from support.inprocess import InProcessFactory, inprocess_api_fixture  # noqa: F401
from support.people import make_user

from monitor.domain import totp

PASSWORD = "Dashboard-Pass-4e1b7c"
NEW_PASSWORD = "Another-Long-Pass-93ab1"


def error_of(page: Page, name: str) -> str:
    found = [p for p in page.tree.find_all("p", "error-text") if p.attrs.get("id") == f"f-{name}-error"]
    assert found, f"no error next to {name}: {page.text[:300]}"
    return found[0].text()


def value_of(page: Page, element_id: str) -> str:
    return next(e for e in page.tree.iter() if e.attrs.get("id") == element_id).attrs.get("value", "")


async def test_password_change(db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession):
    account = await ensure_account(db)
    await make_user(db, "me@example.com", PASSWORD, account, "viewer")
    person = await Person.sign_in(base_url, http, "me@example.com", PASSWORD)
    other = await Person.sign_in(base_url, http, "me@example.com", PASSWORD)
    assert (await person.get("/profile")).status == 200

    wrong = await person.post(
        "/profile/password", {"current_password": "not-the-password-1", "new_password": NEW_PASSWORD}
    )
    assert wrong.status == 403 and "current password" in error_of(wrong, "current_password")
    assert "not-the-password-1" not in wrong.text and NEW_PASSWORD not in wrong.text
    weak = await person.post("/profile/password", {"current_password": PASSWORD, "new_password": "short"})
    assert weak.status == 422 and error_of(weak, "new_password")

    done = await person.post(
        "/profile/password", {"current_password": PASSWORD, "new_password": NEW_PASSWORD}
    )
    assert done.status == 303 and done.location == "/profile?done=password"
    assert (await person.get("/profile")).status == 200
    assert (await other.get("/profile")).status == 303  # signed out
    await Person.sign_in(base_url, http, "me@example.com", NEW_PASSWORD)


async def test_two_factors_on_and_off(db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession):
    account = await ensure_account(db)
    await make_user(db, "me@example.com", PASSWORD, account, "viewer")
    person = await Person.sign_in(base_url, http, "me@example.com", PASSWORD)

    enrolled = await person.post("/profile/totp", {})
    assert enrolled.status == 200
    secret = value_of(enrolled, "totp-secret")
    leaks.secret("TOTP secret", secret)
    assert value_of(enrolled, "totp-uri").startswith("otpauth://totp/") and secret in value_of(
        enrolled, "totp-uri"
    )

    wrong = await person.post(
        "/profile/totp/confirm",
        {"code": "000000" if totp.code_at(secret, time.time()) != "000000" else "111111"},
    )
    assert wrong.status == 422 and error_of(wrong, "code") and secret not in wrong.text
    confirmed = await person.post("/profile/totp/confirm", {"code": totp.code_at(secret, time.time())})
    assert confirmed.status == 200, confirmed.text[:300]
    codes = (
        next(e for e in confirmed.tree.find_all("pre") if e.attrs.get("id") == "recovery-codes")
        .text()
        .split()
    )
    assert len(codes) >= 8
    later = (await person.get("/profile")).text
    assert not any(c in later for c in codes) and "On" in later

    # Signing in now asks for the second factor; a recovery code does.
    assert (
        await Person(base_url, http).post("/signin", {"email": "me@example.com", "password": PASSWORD})
    ).status != 303
    await Person.sign_in(base_url, http, "me@example.com", PASSWORD, recovery_code=codes[0])

    bad = await person.post("/profile/totp/disable", {"password": "not-the-password-1"})
    assert bad.status == 403 and error_of(bad, "password")
    off = await person.post("/profile/totp/disable", {"password": PASSWORD})
    assert off.status == 303 and off.location == "/profile?done=totp_off"
    await Person.sign_in(base_url, http, "me@example.com", PASSWORD)


async def test_sign_out_everywhere(db: asyncpg.Connection, base_url: str, http: aiohttp.ClientSession):
    account = await ensure_account(db)
    await make_user(db, "me@example.com", PASSWORD, account, "viewer")
    person = await Person.sign_in(base_url, http, "me@example.com", PASSWORD)
    other = await Person.sign_in(base_url, http, "me@example.com", PASSWORD)
    out = await person.post("/profile/sessions/end", {})
    assert out.status == 303 and out.location == "/signin"
    assert (await person.get("/profile")).status == 303 and (await other.get("/profile")).status == 303
