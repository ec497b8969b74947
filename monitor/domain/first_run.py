"""The first run: a fresh installation's first owner and account, made by its first visitor.

While no user exists, anyone who can reach the dashboard could make themselves its owner, so
making the first one takes a setup token as well: one only the operator sees, printed by
``make run`` (``monitor setup-url``) and by the api's log at start (the one deliberate secret
in a log: ``dashboard.setup_token``, monitor/logging.py). A token is 32 random bytes
(``secrets.token_urlsafe``), stored only as its SHA-256 (table ``setup_tokens``, sql/024), valid
for ``TOKEN_HOURS``; several may be valid at once (each api start and each ``monitor setup-url``
makes one), and none is made once a user exists.

Making the first owner is one transaction under an advisory lock (``SETUP_LOCK``), so of two
visitors at once exactly one succeeds: 409 ``already_set_up`` once any user exists, else 403
``bad_setup_token`` unless the token is one of the valid ones (compared in constant time; the
same answer for a missing, expired or wrong one), else the user, the account, the owner's
membership and an audit row, all setup tokens deleted, and a session as a sign-in makes one.
Failed tokens are counted per client address as failed sign-ins are (``throttle.py``, scope
``setup``): after ``FREE_ATTEMPTS`` the sign-in delays apply, and an attempt made while
waiting is refused (429) unjudged.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import asyncpg

from monitor.domain import accounts, audit, members, signin, throttle, users
from monitor.domain.context import Actor, Deps
from monitor.domain.errors import DomainError, validated
from monitor.domain.schemas.first_run import FirstOwner

if TYPE_CHECKING:
    from monitor.config import Settings

TOKEN_HOURS = 24
# The advisory lock every first-run write takes ("setup" in ASCII).
SETUP_LOCK = 0x7365747570
# Wrong tokens from one address before the sign-in delays apply.
FREE_ATTEMPTS = 5
SCOPE = "setup"
# The dashboard's page that a setup link opens (the dashboard's to serve).
PAGE = "/setup"
BAD_TOKEN = (
    "the setup link is wrong or has expired: use the one `make run` or the api's log printed, "
    "or print a new one with `monitor setup-url`"
)


def hash_token(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def dashboard_url(settings: Settings, port: int | None = None) -> str:
    """Where the dashboard is: MONITOR_PUBLIC_URL, else the api's own address (a wildcard host
    as loopback, which is where the operator can open it). ``port``: the one actually bound,
    when MONITOR_API_PORT is 0."""
    if settings.public_url:
        return settings.public_url.rstrip("/")
    host = settings.api_host.strip("[]")
    host = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port or settings.api_port}"


def setup_url(base: str, token: str) -> str:
    """The link that opens the first-run page with ``token`` (URL-safe already)."""
    return f"{base.rstrip('/')}{PAGE}?token={token}"


async def needs_owner(deps: Deps) -> bool:
    """Whether no user exists at all (the first owner is still to be made)."""
    return not await _any_user(deps.pool)


async def _any_user(conn: asyncpg.Connection | asyncpg.Pool) -> bool:
    return bool(await conn.fetchval("SELECT EXISTS (SELECT 1 FROM users)"))


async def issue_token(deps: Deps) -> str | None:
    """A new setup token, valid for TOKEN_HOURS, while no user exists; None once one does.
    Deletes the tokens that expired."""
    token = secrets.token_urlsafe(32)
    async with deps.pool.acquire() as conn, conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", SETUP_LOCK)
        if await _any_user(conn):
            await conn.execute("DELETE FROM setup_tokens")
            return None
        await conn.execute("DELETE FROM setup_tokens WHERE expires_at <= now()")
        await conn.execute(
            """INSERT INTO setup_tokens (token_hash, expires_at)
               VALUES ($1, now() + make_interval(hours => $2))""",
            hash_token(token),
            TOKEN_HOURS,
        )
    return token


def _policy(deps: Deps, client: signin.Client) -> tuple[throttle.Key, throttle.Policy]:
    s = deps.settings
    key = throttle.Key(SCOPE, throttle.Key.address(client.address).key)
    return key, throttle.Policy(FREE_ATTEMPTS, s.signin_delay_seconds, s.signin_delay_max_seconds)


def _too_many(wait: float) -> DomainError:
    seconds = max(1, int(wait + 0.999))
    return DomainError(
        429,
        "too_many_attempts",
        f"too many wrong setup tokens; try again in {seconds} s",
        headers={"Retry-After": str(seconds)},
    )


async def _token_valid(conn: asyncpg.Connection, token: str) -> bool:
    """Whether ``token`` is one of the valid tokens: its hash compared with each of theirs in
    constant time, every one of them compared."""
    given = hash_token(token)
    rows = await conn.fetch("SELECT token_hash FROM setup_tokens WHERE expires_at > now()")
    found = False
    for row in rows:
        found |= hmac.compare_digest(bytes(row["token_hash"]), given)
    return found


async def create_owner(deps: Deps, body: Mapping[str, Any], client: signin.Client) -> signin.SignedIn:
    """The first user, owner of a new account, and their session: 422 naming the field at
    fault, 429 while the address waits, 409 ``already_set_up``, 403 ``bad_setup_token``."""
    spec = validated(FirstOwner, body)
    key, policy = _policy(deps, client)
    async with deps.pool.acquire() as conn:
        wait = await throttle.wait(conn, [(key, policy)])
        if wait > 0:
            raise _too_many(wait)
        done = None
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock($1)", SETUP_LOCK)
            if await _any_user(conn):
                raise DomainError(409, "already_set_up", "the first owner exists already: sign in instead")
            if await _token_valid(conn, spec.token):
                done = await _make_owner(deps, conn, spec, client)
        if done is None:  # counted outside the transaction, which wrote nothing
            await throttle.failed(conn, [key])
            raise DomainError(403, "bad_setup_token", BAD_TOKEN, "token")
    return done


async def _make_owner(
    deps: Deps, conn: asyncpg.Connection, spec: FirstOwner, client: signin.Client
) -> signin.SignedIn:
    user_id = await users.create(deps, {"email": spec.email, "display_name": spec.name}, spec.password, conn)
    account_id = await accounts.create(deps, spec.account_name, conn, field="account_name")
    owner = Actor(account_id, role="owner", user_id=user_id, address=client.address)
    await members.add_user(conn, owner, user_id, "owner", {"email"})
    await conn.execute("DELETE FROM setup_tokens")
    await audit.record(
        conn, owner, accounts.RESOURCE, "first_run", account_id, ("email", "name", "account_name")
    )
    return await signin.start_session(deps, conn, user_id, client)
