"""Invitations to an account and password resets, by e-mail: single use, expiring, hashed.

A token is 32 random bytes (``secrets.token_urlsafe``), stored only as its SHA-256 and sent
only in the e-mail's link, in the URL's fragment (``monitor/mailer.py``). Using it marks it used
in the transaction that does what it grants, so a second use, a use after
``MONITOR_INVITATION_HOURS`` / ``MONITOR_PASSWORD_RESET_MINUTES``, or an unknown token gets a
422 naming ``token``, and nothing is written.

An invitation is made by an admin or owner of the account (``roles``: members, write) with a
role no higher than theirs; the letter is sent inside the transaction that stores it, so a
letter the server refused leaves no invitation behind. Accepting it makes the user (with the
password given) or, for an existing user, only adds the membership.

A reset is asked for with an e-mail alone: the answer is the same whether or not a user has it,
and the letter is sent after the answer (``Issued.letter``, for the face to send in the
background), so neither the answer nor its time tells. A used reset ends every session of the
user. The operator's command line makes both without a letter when no SMTP server is set, and
prints the link.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import asyncpg

from monitor.domain import audit, credentials, signin
from monitor.domain.context import Actor, Deps
from monitor.domain.errors import DomainError, validated
from monitor.domain.roles import authorize, within
from monitor.domain.schemas.signin import InvitationAccept, InvitationCreate, ResetConfirm, ResetRequest
from monitor.mailer import DeliveryError, Letter, Mailer
from monitor.times import rfc3339

RESOURCE = "members"
# One reset letter per user per this many seconds: asking again sooner sends nothing.
RESET_EVERY_SECONDS = 60


@dataclass(frozen=True)
class Issued:
    answer: dict[str, Any]  # what the caller may be shown: never the token
    link: str | None  # the link with the token, for the operator's command line only
    letter: Letter | None = None  # to send after answering (resets)


def new_token() -> tuple[str, bytes]:
    token = secrets.token_urlsafe(32)
    return token, hash_token(token)


def hash_token(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def link(base_url: str, page: str, token: str) -> str:
    return f"{base_url.rstrip('/')}/{page}#{token}"


def invitation_letter(to: str, account: str, role: str, url: str, hours: float) -> Letter:
    return Letter(
        to,
        f"You are invited to {account} on monitor",
        f"You are invited to join the account {account} as {role}.\n\n"
        f"Accept within {hours:g} hours, once, at:\n{url}\n\n"
        "If you did not expect this, ignore this message.\n",
    )


def reset_letter(to: str, url: str, minutes: float) -> Letter:
    return Letter(
        to,
        "Reset your monitor password",
        f"Someone asked to reset the password of {to}.\n\n"
        f"Choose a new one within {minutes:g} minutes, once, at:\n{url}\n\n"
        "If it was not you, ignore this message: your password stays as it is.\n",
    )


async def _send(mailer: Mailer, letter: Letter) -> None:
    try:
        await mailer.send(letter)
    except DeliveryError as exc:
        raise DomainError(
            503, "mail_failed", f"the e-mail could not be sent: {exc}", headers={"Retry-After": "60"}
        ) from None


async def invite(
    deps: Deps, actor: Actor, body: Mapping[str, Any], *, base_url: str, mailer: Mailer | None
) -> Issued:
    """An invitation to the caller's account, e-mailed when there is a mailer (else the link is
    handed back, for the operator's command line)."""
    authorize(actor, RESOURCE, "write")
    spec = validated(InvitationCreate, body)
    within(actor, spec.role)
    token, hashed = new_token()
    hours = deps.settings.invitation_hours
    async with deps.pool.acquire() as conn, conn.transaction():
        member = await conn.fetchval(
            """SELECT 1 FROM memberships m JOIN users u ON u.id = m.user_id
               WHERE m.account_id = $1 AND lower(u.email) = lower($2)""",
            actor.account_id,
            spec.email,
        )
        if member:
            raise DomainError(409, "conflict", "email: is a member of the account already", "email")
        row = await conn.fetchrow(
            """INSERT INTO invitations (token_hash, account_id, email, role, invited_by, expires_at)
               VALUES ($1, $2, $3, $4, $5, now() + make_interval(secs => $6::float8))
               RETURNING id, email, role, expires_at, (SELECT name FROM accounts WHERE id = $2) AS account""",
            hashed,
            actor.account_id,
            spec.email,
            spec.role,
            actor.user_id,
            hours * 3600,
        )
        await audit.record(conn, actor, RESOURCE, "invite", row["id"], spec.model_fields_set)
        url = link(base_url, "invitation", token)
        if mailer is not None:
            await _send(mailer, invitation_letter(spec.email, row["account"], spec.role, url, hours))
    answer = {
        "id": row["id"],
        "email": row["email"],
        "role": row["role"],
        "expires_at": rfc3339(row["expires_at"]),
    }
    return Issued(answer, None if mailer is not None else url)


async def _take(conn: asyncpg.Connection, table: str, token: str) -> asyncpg.Record:
    """The row of a token not used nor expired, locked and marked used; else a 422 on ``token``."""
    row = await conn.fetchrow(
        f"SELECT *, expires_at <= now() AS expired FROM {table} WHERE token_hash = $1 FOR UPDATE",
        hash_token(token),
    )
    what = "invitation" if table == "invitations" else "reset"
    if row is None:
        raise DomainError(422, "invalid", f"token: no such {what}", "token")
    if row["used_at"] is not None:
        raise DomainError(422, "invalid", f"token: the {what} was used already", "token")
    if row["expired"]:
        raise DomainError(422, "invalid", f"token: the {what} has expired", "token")
    await conn.execute(f"UPDATE {table} SET used_at = now() WHERE id = $1", row["id"])
    return row


async def accept(deps: Deps, body: Mapping[str, Any]) -> dict[str, Any]:
    """Join the account of an invitation: a new user with the password given, or an existing one."""
    spec = validated(InvitationAccept, body)
    async with deps.pool.acquire() as conn, conn.transaction():
        row = await _take(conn, "invitations", spec.token)
        user = await conn.fetchrow(
            "SELECT id, password_hash FROM users WHERE lower(email) = lower($1) FOR UPDATE", row["email"]
        )
        if user is None:
            user_id = int(
                await conn.fetchval(
                    "INSERT INTO users (email, display_name) VALUES ($1, $2) RETURNING id",
                    row["email"],
                    spec.display_name,
                )
            )
        else:
            user_id = int(user["id"])
        if user is None or user["password_hash"] is None:
            if spec.password is None:
                raise DomainError(422, "invalid", "password: field required", "password")
            await credentials.set_password(conn, deps, user_id, spec.password, "password")
        await conn.execute(
            """INSERT INTO memberships (account_id, user_id, role) VALUES ($1, $2, $3)
               ON CONFLICT (account_id, user_id) DO NOTHING""",
            row["account_id"],
            user_id,
            row["role"],
        )
        joined = Actor(row["account_id"], role=row["role"], user_id=user_id)
        await audit.record(conn, joined, RESOURCE, "accept", user_id, ())
    return {"account_id": row["account_id"], "role": row["role"], "email": row["email"]}


async def request_reset(
    deps: Deps, body: Mapping[str, Any], *, base_url: str, with_link: bool = False
) -> Issued:
    """A reset of the password of the user with this e-mail, if there is one; the same answer
    either way. The letter (``Issued.letter``) is the face's to send, after answering."""
    spec = validated(ResetRequest, body)
    token, hashed = new_token()
    minutes = deps.settings.password_reset_minutes
    row = await deps.pool.fetchrow(
        """WITH u AS (SELECT id, email FROM users WHERE lower(email) = lower($1)),
                made AS (
                    INSERT INTO password_resets (token_hash, user_id, expires_at)
                    SELECT $2, u.id, now() + make_interval(secs => $3::float8) FROM u
                    WHERE $4 OR NOT EXISTS (
                        SELECT 1 FROM password_resets r WHERE r.user_id = u.id
                        AND r.created_at > now() - make_interval(secs => $5::float8))
                    RETURNING user_id)
           SELECT u.email FROM u JOIN made ON made.user_id = u.id""",
        spec.email,
        hashed,
        minutes * 60,
        with_link,
        RESET_EVERY_SECONDS,
    )
    answer = {"email": spec.email}
    if row is None:
        return Issued(answer, None)
    url = link(base_url, "reset-password", token)
    return Issued(answer, url if with_link else None, reset_letter(row["email"], url, minutes))


async def confirm_reset(deps: Deps, body: Mapping[str, Any]) -> int:
    """A new password from a reset; every session of the user ends: how many."""
    spec = validated(ResetConfirm, body)
    async with deps.pool.acquire() as conn, conn.transaction():
        row = await _take(conn, "password_resets", spec.token)
        await credentials.set_password(conn, deps, row["user_id"], spec.password, "password")
        await conn.execute(
            "DELETE FROM password_resets WHERE user_id = $1 AND used_at IS NULL", row["user_id"]
        )
        return await signin.end_other_sessions(conn, row["user_id"], None)
