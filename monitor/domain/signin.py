"""Signing in and out: a session from an e-mail, a password and a second factor; the caller a
session cookie makes; signing out here or everywhere.

A sign-in, in order: the throttle (``throttle.py``; a wait still running refuses the attempt
unjudged), the password, verified against a dummy hash when the e-mail is unknown so that an
unknown e-mail costs the same time and gets the same answer as a wrong password, then the second
factor when the user has one (a code of the app, never one accepted before, or a recovery code,
deleted once used), then a new session. Each failure counts against the e-mail and the address.
The answers say only "the e-mail or password is wrong" until the password was right.

The session cookie makes an ``Actor`` for one account: the one named by the
``X-Monitor-Account`` header (its id), else the user's only account; a member of several who
names none gets 400, one who names an account they are not a member of 403. The role is the
membership's.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from monitor.domain import csrf, session_ids, throttle, totp
from monitor.domain.context import Actor, Deps
from monitor.domain.errors import DomainError, validated
from monitor.domain.schemas.signin import SignIn
from monitor.passwords import Busy
from monitor.times import rfc3339

ACCOUNT_HEADER = "X-Monitor-Account"
WRONG = "the e-mail or password is wrong"
USER_AGENT_MAX = 512
# One failed sign-in in this many also deletes what has run out everywhere: counts older than a
# day (an attacker spraying e-mails makes one row each) and sessions that expired.
SWEEP_SHARE = 0.01


@dataclass(frozen=True)
class Client:
    """Where a request came from, as the face saw it."""

    address: str | None
    user_agent: str | None = None


@dataclass(frozen=True)
class Session:
    """A live session, as the cookie's look-up finds it."""

    id_hash: bytes
    user_id: int
    email: str
    expires_at: datetime


@dataclass(frozen=True)
class SignedIn:
    session_id: str  # for the cookie only: never logged, never in a body
    session: Session
    max_age: int  # the cookie's Max-Age: seconds until the absolute expiry


def lifetime(deps: Deps) -> session_ids.Lifetime:
    s = deps.settings
    return session_ids.Lifetime(idle=s.session_idle_seconds, absolute=s.session_absolute_seconds)


def policies(deps: Deps, email: str, client: Client) -> list[tuple[throttle.Key, throttle.Policy]]:
    s = deps.settings
    delays = (s.signin_delay_seconds, s.signin_delay_max_seconds)
    return [
        (throttle.Key.email(email), throttle.Policy(s.signin_free_attempts, *delays)),
        (throttle.Key.address(client.address), throttle.Policy(s.signin_address_free_attempts, *delays)),
    ]


def too_many(wait: float) -> DomainError:
    seconds = max(1, int(wait + 0.999))
    return DomainError(
        429,
        "too_many_attempts",
        f"too many failed sign-ins; try again in {seconds} s",
        headers={"Retry-After": str(seconds)},
    )


def busy(exc: Busy) -> DomainError:
    return DomainError(503, "busy", "too many sign-ins at once; try again", headers={"Retry-After": "1"})


async def sign_in(deps: Deps, body: Mapping[str, Any], client: Client) -> SignedIn:
    spec = validated(SignIn, body)
    checks = policies(deps, spec.email, client)
    keys = [key for key, _ in checks]
    async with deps.pool.acquire() as conn:
        wait = await throttle.wait(conn, checks)
        if wait > 0:
            raise too_many(wait)
        user = await conn.fetchrow(
            "SELECT id, password_hash FROM users WHERE lower(email) = lower($1)", spec.email
        )
        try:
            verified = await deps.hasher.verify(user["password_hash"] if user else None, spec.password)
        except Busy as exc:
            raise busy(exc) from None
        if user is None or not verified.ok:
            await throttle.failed(conn, keys)
            if random.random() < SWEEP_SHARE:
                await sweep(conn)
            raise DomainError(401, "wrong_credentials", WRONG, "password")
        user_id = int(user["id"])
        if verified.rehash is not None:
            await conn.execute("UPDATE users SET password_hash = $2 WHERE id = $1", user_id, verified.rehash)
        if not await _second_factor(deps, conn, user_id, spec.totp, spec.recovery_code):
            await throttle.failed(conn, keys)
            raise DomainError(401, "wrong_code", "the one-time code is wrong or was used already", "totp")
        await throttle.succeeded(conn, keys[0])
        return await _new_session(deps, conn, user_id, client)


async def _second_factor(
    deps: Deps, conn: asyncpg.Connection, user_id: int, code: str | None, recovery: str | None
) -> bool:
    """Whether the second factor holds: true without one; else the code or the recovery code."""
    row = await conn.fetchrow(
        "SELECT secret, last_step FROM user_totp WHERE user_id = $1 AND confirmed_at IS NOT NULL", user_id
    )
    if row is None:
        return True
    if recovery is not None:
        hashed = totp.hash_recovery_code(recovery)
        used = hashed is not None and await conn.fetchval(
            "DELETE FROM recovery_codes WHERE user_id = $1 AND code_hash = $2 RETURNING 1", user_id, hashed
        )
        return bool(used)
    if code is None:
        raise DomainError(401, "code_required", "this user signs in with a one-time code too", "totp")
    accepted = totp.verify(deps.secret_box.open(row["secret"]), code, row["last_step"])
    if accepted is None:
        return False
    # Only one request may take a step: two racing with the same code cannot both pass.
    taken = await conn.fetchval(
        """UPDATE user_totp SET last_step = $2
           WHERE user_id = $1 AND (last_step IS NULL OR last_step < $2) RETURNING 1""",
        user_id,
        accepted.step,
    )
    return bool(taken)


async def _new_session(deps: Deps, conn: asyncpg.Connection, user_id: int, client: Client) -> SignedIn:
    life = lifetime(deps)
    session_id = session_ids.new_id()
    id_hash = session_ids.hash_id(session_id)
    assert id_hash is not None
    row = await conn.fetchrow(
        """WITH gone AS (DELETE FROM sessions WHERE user_id = $2 AND expires_at <= now())
           INSERT INTO sessions (id_hash, user_id, expires_at, address, user_agent)
           VALUES ($1, $2, now() + make_interval(secs => least($3::float8, $4::float8)), $5, $6)
           RETURNING expires_at, (SELECT email FROM users WHERE id = $2) AS email""",
        id_hash,
        user_id,
        life.idle,
        life.absolute,
        client.address,
        (client.user_agent or "")[:USER_AGENT_MAX] or None,
    )
    session = Session(id_hash, user_id, row["email"], row["expires_at"])
    return SignedIn(session_id, session, int(life.absolute))


async def session_for(deps: Deps, session_id: str) -> Session | None:
    """The live session of a cookie's id; None for an unknown, malformed or expired one. Marks
    it seen (moving its idle expiry) at most once per ``Lifetime.touch_interval``."""
    id_hash = session_ids.hash_id(session_id)
    if id_hash is None:
        return None
    life = lifetime(deps)
    row = await deps.pool.fetchrow(
        """SELECT s.user_id, s.created_at, s.last_seen_at, s.expires_at, u.email, now() AS now
           FROM sessions s JOIN users u ON u.id = s.user_id
           WHERE s.id_hash = $1 AND s.expires_at > now()""",
        id_hash,
    )
    if row is None:
        return None
    expires_at = row["expires_at"]
    if life.needs_touch(row["now"], row["last_seen_at"]):
        expires_at = await deps.pool.fetchval(
            """UPDATE sessions SET last_seen_at = now(),
                   expires_at = least(now() + make_interval(secs => $2::float8),
                                      created_at + make_interval(secs => $3::float8))
               WHERE id_hash = $1 RETURNING expires_at""",
            id_hash,
            life.idle,
            life.absolute,
        )
        if expires_at is None:  # signed out meanwhile
            return None
    return Session(id_hash, int(row["user_id"]), row["email"], expires_at)


async def actor_for(deps: Deps, session: Session, account_header: str | None, client: Client) -> Actor:
    """The caller a session makes in the account it names (``ACCOUNT_HEADER``) or its only one."""
    rows = await deps.pool.fetch(
        "SELECT account_id, role FROM memberships WHERE user_id = $1 ORDER BY account_id", session.user_id
    )
    return actor_among(rows, session, account_header, client)


def actor_among(
    rows: Sequence[Mapping[str, Any]], session: Session, account_header: str | None, client: Client
) -> Actor:
    """``actor_for``'s choice among the user's memberships (``account_id`` and ``role`` each,
    by account), for a face that read them already (``me``'s)."""
    if account_header is not None and account_header.strip():
        text = account_header.strip()
        if not text.isdigit() or len(text) > 19:
            raise DomainError(400, "invalid", f"{ACCOUNT_HEADER}: must be an account id", ACCOUNT_HEADER)
        found = [r for r in rows if r["account_id"] == int(text)]
        if not found:
            raise DomainError(
                403, "forbidden", f"you are not a member of account {int(text)}", ACCOUNT_HEADER
            )
        row = found[0]
    elif len(rows) == 1:
        row = rows[0]
    elif not rows:
        raise DomainError(403, "forbidden", "you are not a member of any account")
    else:
        raise DomainError(
            400,
            "account_required",
            f"you are a member of {len(rows)} accounts: name one with the {ACCOUNT_HEADER} header (its id)",
            ACCOUNT_HEADER,
        )
    return Actor(int(row["account_id"]), role=row["role"], user_id=session.user_id, address=client.address)


async def sweep(conn: asyncpg.Connection) -> None:
    await throttle.sweep(conn)
    await conn.execute("DELETE FROM sessions WHERE expires_at <= now()")


async def sign_out(deps: Deps, session: Session) -> None:
    await deps.pool.execute("DELETE FROM sessions WHERE id_hash = $1", session.id_hash)


async def sign_out_everywhere(deps: Deps, session: Session) -> int:
    """End every session of the user, this one too: how many."""
    done: str = await deps.pool.execute("DELETE FROM sessions WHERE user_id = $1", session.user_id)
    return int(done.split()[-1])


async def end_other_sessions(conn: asyncpg.Connection, user_id: int, keep: bytes | None) -> int:
    done: str = await conn.execute(
        "DELETE FROM sessions WHERE user_id = $1 AND ($2::bytea IS NULL OR id_hash <> $2)", user_id, keep
    )
    return int(done.split()[-1])


async def me(deps: Deps, session: Session, session_id: str) -> dict[str, Any]:
    """The signed-in user, their accounts and roles, and the session's CSRF token."""
    user = await deps.pool.fetchrow(
        """SELECT u.id, u.email, u.display_name,
                  EXISTS (SELECT 1 FROM user_totp t
                          WHERE t.user_id = u.id AND t.confirmed_at IS NOT NULL) AS totp
           FROM users u WHERE u.id = $1""",
        session.user_id,
    )
    rows = await deps.pool.fetch(
        """SELECT m.account_id, a.name, m.role FROM memberships m JOIN accounts a ON a.id = m.account_id
           WHERE m.user_id = $1 ORDER BY m.account_id""",
        session.user_id,
    )
    return {
        "id": user["id"],
        "email": user["email"],
        "display_name": user["display_name"],
        "totp_enabled": user["totp"],
        "memberships": [
            {"account_id": r["account_id"], "account": r["name"], "role": r["role"]} for r in rows
        ],
        "csrf_token": csrf.token(session_id),
        "session_expires_at": rfc3339(session.expires_at),
    }


async def start_session(deps: Deps, conn: asyncpg.Connection, user_id: int, client: Client) -> SignedIn:
    """A session for a user proven otherwise: by single sign-on or a trusted proxy's header
    (monitor/domain/sso_signin.py), in the caller's transaction."""
    return await _new_session(deps, conn, user_id, client)
