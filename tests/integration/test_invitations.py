"""Invitations and password resets against a real local SMTP server (aiosmtpd, STARTTLS with a
throwaway CA): the token reaches only the mailbox, works once and not after it expired; a
refused password writes nothing; a reset answers alike for every e-mail and ends the user's
sessions; the command line prints the link when no server is set. The api's log and every
answer are read for the tokens and passwords: none is there.
"""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import asyncpg
import pytest
from support import FakeSmtp, MonitorProcess, ProcessFactory, clean_environ, ensure_account, leaks
from support.people import Browser, make_user

pytestmark = pytest.mark.e2e

PASSWORD = "Invite-Owner-Pass-93c1d0"
NEW_PASSWORD = "Invitee-Pass-5a7e2b41"
LINK = re.compile(r"https?://\S+/(invitation|reset-password)#([A-Za-z0-9_-]{43})")


@pytest.fixture
async def api_proc(
    procs: ProcessFactory, db: asyncpg.Connection, fake_smtp: FakeSmtp, tmp_path: Path
) -> MonitorProcess:
    return await procs.start(
        "api",
        env={
            "MONITOR_SMTP_HOST": "localhost",
            "MONITOR_SMTP_PORT": str(fake_smtp.port),
            "MONITOR_SMTP_SECURITY": "starttls",
            "MONITOR_SMTP_FROM": "monitor@example.com",
            "MONITOR_SMTP_USERNAME": fake_smtp.user or "",
            "MONITOR_SMTP_PASSWORD": fake_smtp.password,
            "MONITOR_CA_FILE": str(fake_smtp.write_ca(tmp_path / "ca.pem")),
            "MONITOR_PUBLIC_URL": "https://monitor.example.com",
        },
    )


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


def token_in(message_text: str | None, page: str) -> str:
    found = LINK.search(message_text or "")
    assert found is not None and found.group(1) == page, message_text
    leaks.secret(f"{page} token", found.group(2))
    return found.group(2)


def assert_not_logged(api_proc: MonitorProcess, *secrets: str) -> None:
    text = api_proc.log_text()
    for secret in secrets:
        assert secret not in text, f"a secret ({secret[:4]}...) is in the api's log"


async def test_an_invitation_by_email_works_once_and_not_after_it_expired(
    api_proc: MonitorProcess, http: aiohttp.ClientSession, db: asyncpg.Connection, fake_smtp: FakeSmtp
) -> None:
    account = await ensure_account(db)
    await make_user(db, "owner@example.com", PASSWORD, account, "owner")
    await make_user(db, "viewer@example.com", PASSWORD, account, "viewer")
    owner, viewer = Browser(api_proc.base_url, http), Browser(api_proc.base_url, http)
    assert (await owner.sign_in("owner@example.com", PASSWORD)).status == 201
    assert (await viewer.sign_in("viewer@example.com", PASSWORD)).status == 201

    refused = await viewer.call("POST", "/api/v1/invitations", {"email": "new@example.com", "role": "viewer"})
    assert refused.status == 403
    made = await owner.call("POST", "/api/v1/invitations", {"email": "new@example.com", "role": "editor"})
    assert made.status == 201, made.body
    assert set(made.body) == {"id", "email", "role", "expires_at"}
    (letter,) = await fake_smtp.wait_messages(1, to="new@example.com")
    assert letter.tls and letter.user == fake_smtp.user and letter.mail_from == "monitor@example.com"
    token = token_in(letter.text, "invitation")
    assert token not in str(made.body)
    stored = await db.fetchval("SELECT token_hash FROM invitations")
    assert bytes(stored) != token.encode() and token not in bytes(stored).hex()

    stranger = Browser(api_proc.base_url, http)
    weak = await stranger.call("POST", "/api/v1/invitations/accept", {"token": token, "password": "short"})
    assert (weak.status, weak.body["error"]["field"]) == (422, "password")
    assert (
        await db.fetchval("SELECT count(*) FROM users WHERE email = 'new@example.com'") == 0
    )  # nothing written
    joined = await stranger.call(
        "POST", "/api/v1/invitations/accept", {"token": token, "password": NEW_PASSWORD}
    )
    assert (joined.status, joined.body) == (
        200,
        {"account_id": account, "role": "editor", "email": "new@example.com"},
    )
    again = await stranger.call(
        "POST", "/api/v1/invitations/accept", {"token": token, "password": NEW_PASSWORD}
    )
    assert (again.status, again.body["error"]["field"]) == (422, "token")
    assert "used" in again.body["error"]["message"]

    signed = await stranger.sign_in("new@example.com", NEW_PASSWORD)
    assert signed.status == 201
    assert signed.body["memberships"] == [{"account_id": account, "account": "test", "role": "editor"}]

    late = await owner.call("POST", "/api/v1/invitations", {"email": "late@example.com", "role": "viewer"})
    assert late.status == 201
    (late_letter,) = await fake_smtp.wait_messages(1, to="late@example.com")
    await db.execute(
        "UPDATE invitations SET expires_at = now() - interval '1 second' WHERE id = $1", late.body["id"]
    )
    expired = await stranger.call(
        "POST",
        "/api/v1/invitations/accept",
        {"token": token_in(late_letter.text, "invitation"), "password": NEW_PASSWORD},
    )
    assert (expired.status, expired.body["error"]["field"]) == (422, "token")
    assert "expired" in expired.body["error"]["message"]
    assert_not_logged(
        api_proc, token, fake_smtp.password, PASSWORD, NEW_PASSWORD, *owner.seen, *stranger.seen
    )


async def test_a_reset_answers_alike_sends_once_and_ends_every_session(
    api_proc: MonitorProcess, http: aiohttp.ClientSession, db: asyncpg.Connection, fake_smtp: FakeSmtp
) -> None:
    await make_user(db, "ada@example.com", PASSWORD, await ensure_account(db))
    before = Browser(api_proc.base_url, http)
    assert (await before.sign_in("ada@example.com", PASSWORD)).status == 201
    anyone = Browser(api_proc.base_url, http)
    unknown = await anyone.call("POST", "/api/v1/password-resets", {"email": "nobody@example.com"})
    known = await anyone.call("POST", "/api/v1/password-resets", {"email": "ADA@example.com"})
    assert (unknown.status, unknown.body) == (known.status, known.body) == (202, None)
    (letter,) = await fake_smtp.wait_messages(1, to="ada@example.com")
    assert fake_smtp.messages_to("nobody@example.com") == []
    token = token_in(letter.text, "reset-password")
    assert letter.text and "https://monitor.example.com/reset-password#" in letter.text

    weak = await anyone.call(
        "POST", "/api/v1/password-resets/confirm", {"token": token, "password": "password123"}
    )
    assert (weak.status, weak.body["error"]["field"]) == (422, "password")
    done = await anyone.call(
        "POST", "/api/v1/password-resets/confirm", {"token": token, "password": NEW_PASSWORD}
    )
    assert (done.status, done.body) == (200, {"ended": 1})
    assert (await before.call("GET", "/api/v1/me")).status == 401
    assert (await Browser(api_proc.base_url, http).sign_in("ada@example.com", PASSWORD)).status == 401
    after = Browser(api_proc.base_url, http)
    assert (await after.sign_in("ada@example.com", NEW_PASSWORD)).status == 201
    reused = await anyone.call(
        "POST", "/api/v1/password-resets/confirm", {"token": token, "password": NEW_PASSWORD}
    )
    assert (reused.status, reused.body["error"]["field"]) == (422, "token")
    assert_not_logged(api_proc, token, PASSWORD, NEW_PASSWORD, *before.seen, *after.seen)


async def cli(migrated: str, *argv: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "monitor", *argv,
        env=clean_environ() | {"MONITOR_DATABASE_URL": migrated, "MONITOR_PUBLIC_URL": "https://m.example.com"},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_the_command_line_prints_the_link_without_a_mail_server(
    db: asyncpg.Connection, migrated: str
) -> None:
    await ensure_account(db)
    await make_user(db, "cy@example.com", PASSWORD)
    code, out, err = await cli(
        migrated, "users", "invite", "dee@example.com", "--account", "test", "--role", "admin"
    )
    assert code == 0, err
    assert "invited dee@example.com to 'test' as admin" in out
    assert LINK.search(out) is not None and "https://m.example.com/invitation#" in out
    code, out, err = await cli(migrated, "users", "reset-password", "cy@example.com")
    assert code == 0, err
    assert "https://m.example.com/reset-password#" in out
    code, out, err = await cli(migrated, "users", "reset-password", "nobody@example.com")
    assert code == 1 and "no user has the e-mail" in err
    assert await db.fetchval("SELECT count(*) FROM password_resets") == 1
