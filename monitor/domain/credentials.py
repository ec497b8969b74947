"""A signed-in user's own credentials: two factors turned on and off, the password changed.

Two factors go on in two steps: ``enrol`` makes a secret (sealed with ``MONITOR_SECRET_KEY``
before it is stored) and shows it once, for the app; ``confirm`` takes the app's first right
code, turns them on and shows the recovery codes once (stored as hashes). Turning them off, and
changing the password, need the current password, judged as a sign-in is (the throttle counts a
wrong one against the e-mail and the address), so a session left open is not enough to take
over the account. A new password ends every other session of the user.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import asyncpg

from monitor import passwords
from monitor.domain import signin, throttle, totp
from monitor.domain.context import Deps
from monitor.domain.errors import DomainError, validated
from monitor.domain.schemas.signin import PasswordChange, TotpConfirm, TotpDisable


async def _password_holds(
    deps: Deps,
    conn: asyncpg.Connection,
    session: signin.Session,
    password: str,
    client: signin.Client,
    field: str = "password",
) -> None:
    """Return when ``password`` is the user's; else a 403 (and one failure counted)."""
    checks = signin.policies(deps, session.email, client)
    wait = await throttle.wait(conn, checks)
    if wait > 0:
        raise signin.too_many(wait)
    stored = await conn.fetchval("SELECT password_hash FROM users WHERE id = $1", session.user_id)
    try:
        verified = await deps.hasher.verify(stored, password)
    except passwords.Busy as exc:
        raise signin.busy(exc) from None
    if not verified.ok:
        await throttle.failed(conn, [key for key, _ in checks])
        raise DomainError(403, "wrong_password", f"{field}: is not the current password", field)


async def enrol(deps: Deps, session: signin.Session) -> dict[str, Any]:
    """A new secret for the app (shown once), replacing one not yet confirmed."""
    secret = totp.new_secret()
    done = await deps.pool.fetchval(
        """INSERT INTO user_totp (user_id, secret) VALUES ($1, $2)
           ON CONFLICT (user_id) DO UPDATE SET secret = EXCLUDED.secret, created_at = now(), last_step = NULL
               WHERE user_totp.confirmed_at IS NULL
           RETURNING 1""",
        session.user_id,
        deps.secret_box.seal(secret),
    )
    if done is None:
        raise DomainError(409, "conflict", "two factors are on already; turn them off first")
    return {"secret": secret, "otpauth_uri": totp.provisioning_uri(secret, session.email)}


async def confirm(deps: Deps, session: signin.Session, body: Mapping[str, Any]) -> dict[str, Any]:
    """Two factors on, once the app's code is right: the recovery codes, shown once."""
    spec = validated(TotpConfirm, body)
    codes = totp.new_recovery_codes()
    async with deps.pool.acquire() as conn, conn.transaction():
        row = await conn.fetchrow(
            "SELECT secret, confirmed_at FROM user_totp WHERE user_id = $1 FOR UPDATE", session.user_id
        )
        if row is None or row["confirmed_at"] is not None:
            raise DomainError(409, "conflict", "nothing to confirm: start with POST /api/v1/me/totp")
        accepted = totp.verify(deps.secret_box.open(row["secret"]), spec.code, None)
        if accepted is None:
            raise DomainError(422, "invalid", "code: is not the app's current code", "code")
        await conn.execute(
            "UPDATE user_totp SET confirmed_at = now(), last_step = $2 WHERE user_id = $1",
            session.user_id,
            accepted.step,
        )
        await conn.execute("DELETE FROM recovery_codes WHERE user_id = $1", session.user_id)
        await conn.executemany(
            "INSERT INTO recovery_codes (user_id, code_hash) VALUES ($1, $2)",
            [(session.user_id, totp.hash_recovery_code(code)) for code in codes],
        )
    return {"recovery_codes": codes}


async def disable(
    deps: Deps, session: signin.Session, body: Mapping[str, Any], client: signin.Client
) -> None:
    spec = validated(TotpDisable, body)
    async with deps.pool.acquire() as conn:
        await _password_holds(deps, conn, session, spec.password, client)
        async with conn.transaction():
            await conn.execute("DELETE FROM user_totp WHERE user_id = $1", session.user_id)
            await conn.execute("DELETE FROM recovery_codes WHERE user_id = $1", session.user_id)


async def set_password(conn: asyncpg.Connection, deps: Deps, user_id: int, password: str, field: str) -> None:
    """Store a new password (judged first: a 422 naming ``field``)."""
    problem = passwords.problem(password)
    if problem is not None:
        raise DomainError(422, "invalid", f"{field}: {problem}", field)
    try:
        hashed = await deps.hasher.hash(password)
    except passwords.Busy as exc:
        raise signin.busy(exc) from None
    await conn.execute("UPDATE users SET password_hash = $2 WHERE id = $1", user_id, hashed)


async def change_password(
    deps: Deps, session: signin.Session, body: Mapping[str, Any], client: signin.Client
) -> dict[str, Any]:
    """A new password; every other session of the user ends (this one stays)."""
    spec = validated(PasswordChange, body)
    problem = passwords.problem(spec.new_password)
    if problem is not None:
        raise DomainError(422, "invalid", f"new_password: {problem}", "new_password")
    async with deps.pool.acquire() as conn:
        await _password_holds(deps, conn, session, spec.current_password, client, "current_password")
        async with conn.transaction():
            await set_password(conn, deps, session.user_id, spec.new_password, "new_password")
            ended = await signin.end_other_sessions(conn, session.user_id, session.id_hash)
    return {"ended": ended}
