"""Single sign-on's operations: a login started (the provider's URL, the login stored), its
callback (the state taken once, the code exchanged, the ID token checked, the person matched or
created, a session), and the trusted proxy's header made into a session.

The rules are ``sso.py``'s, the protocol ``monitor/oidc.py``'s; here is what they read and
write. A session made here is like a password's (``signin.start_session``): the provider's own
second factor stands for ours, so a user's TOTP is not asked. A membership that SSO adds or
whose role it changes is in the audit log, made by the user themself, ``fields`` ``role``.
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from monitor import oidc
from monitor.domain import audit, signin, sso
from monitor.domain.context import Actor, Deps, Role
from monitor.domain.errors import DomainError
from monitor.secrets import SecretKeyError

RESOURCE = "members"


@dataclass(frozen=True)
class Begun:
    url: str  # the provider's authorization URL, where the browser goes
    state: str  # for the browser's cookie only
    max_age: int


@dataclass(frozen=True)
class Finished:
    signed_in: signin.SignedIn
    return_to: str


def refused(exc: oidc.OidcError) -> DomainError:
    return DomainError(exc.status, exc.code, exc.message)


def not_configured() -> DomainError:
    return DomainError(404, "sso_not_configured", "single sign-on is not set up here (MONITOR_OIDC_ISSUER)")


async def begin(deps: Deps, provider: oidc.Provider | None, return_to: str | None) -> Begun:
    if provider is None:
        raise not_configured()
    login = sso.new_login()
    try:
        url = await provider.authorization_url(login.state, login.nonce, login.verifier)
    except oidc.OidcError as exc:
        raise refused(exc) from None
    await deps.pool.execute(
        """WITH gone AS (DELETE FROM sso_logins WHERE expires_at <= now())
           INSERT INTO sso_logins (state_hash, nonce, verifier, return_to, expires_at)
           VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5))""",
        sso.state_hash(login.state),
        login.nonce,
        deps.secret_box.seal(login.verifier),
        sso.return_path(return_to),
        float(sso.LOGIN_SECONDS),
    )
    return Begun(url, login.state, sso.LOGIN_SECONDS)


async def finish(
    deps: Deps,
    provider: oidc.Provider | None,
    *,
    state: str | None,
    cookie_state: str | None,
    code: str | None,
    error: str | None,
    client: signin.Client,
) -> Finished:
    """The callback: 400 for a state not this browser's, unknown, used or expired, for the
    provider's refusal (``error``), and for an ID token any check refuses."""
    if provider is None:
        raise not_configured()
    if not sso.same_browser(state, cookie_state):
        raise DomainError(
            400, "state_mismatch", "this sign-in was not started in this browser; start again", "state"
        )
    hashed = sso.state_hash(state)
    if hashed is None:
        raise DomainError(400, "state_unknown", "this sign-in is unknown; start again", "state")
    row = await deps.pool.fetchrow(
        """DELETE FROM sso_logins WHERE state_hash = $1
           RETURNING nonce, verifier, return_to, expires_at > now() AS live""",
        hashed,
    )
    if row is None:
        raise DomainError(
            400, "state_unknown", "this sign-in was used already or never started; start again", "state"
        )
    if not row["live"]:
        raise DomainError(400, "state_expired", "this sign-in took too long; start again", "state")
    if error is not None:
        reason = (
            error if error.isascii() and error.replace("_", "").isalnum() and len(error) <= 64 else "error"
        )
        raise DomainError(400, "sso_refused", f"the identity provider refused the sign-in ({reason})")
    if not code:
        raise DomainError(400, "invalid", "code: the identity provider sent no code", "code")
    try:
        verifier = deps.secret_box.open(row["verifier"])
    except SecretKeyError:
        raise DomainError(
            400, "state_expired", "this sign-in cannot be finished; start again", "state"
        ) from None
    try:
        token = await provider.exchange(code, verifier)
        claims = await provider.verify(token, row["nonce"])
    except oidc.OidcError as exc:
        raise refused(exc) from None
    s = deps.settings
    who = sso.identity(claims, s.oidc_groups_claim)
    done = await sign_in_identity(deps, who, client, groups_mapped=bool(s.oidc_group_roles))
    return Finished(done, row["return_to"])


async def from_proxy(deps: Deps, header: str | None, client: signin.Client) -> signin.SignedIn:
    """A session for the person a trusted proxy names: 404 when no header is configured, 403
    from a peer outside MONITOR_TRUSTED_PROXY_CIDRS (whatever it sends), 401 without the header."""
    s = deps.settings
    if s.trusted_proxy_header is None:
        raise DomainError(404, "proxy_not_configured", "no trusted proxy header is set up here")
    if not sso.trusted_peer(client.address, s.trusted_proxy_cidrs):
        raise DomainError(403, "untrusted_proxy", "this address is not a trusted proxy")
    who = sso.proxy_identity(header)
    if who is None:
        raise DomainError(401, "unauthorized", f"the proxy sent no e-mail in {s.trusted_proxy_header}")
    return await sign_in_identity(deps, who, client, groups_mapped=False)


async def sign_in_identity(
    deps: Deps, who: sso.Identity, client: signin.Client, *, groups_mapped: bool
) -> signin.SignedIn:
    """The user of ``who`` (matched by e-mail in any case, or created), their membership of the
    SSO account as ``sso.plan`` says, and a new session, in one transaction."""
    s = deps.settings
    account = s.sso_account
    async with deps.pool.acquire() as conn, conn.transaction():
        user_id = await conn.fetchval(
            "SELECT id FROM users WHERE lower(email) = lower($1) FOR UPDATE", who.email
        )
        member: Role | None = None
        if user_id is not None and account is not None:
            member = await conn.fetchval(
                "SELECT role FROM memberships WHERE account_id = $1 AND user_id = $2 FOR UPDATE",
                account,
                user_id,
            )
        todo = sso.plan(
            user_exists=user_id is not None,
            member_role=member,
            account=account,
            groups_mapped=groups_mapped,
            mapped=sso.role_for(who.groups, s.oidc_group_roles),
            default=s.sso_role,
        )
        if todo.create_user:
            user_id = await _create(conn, who)
        assert user_id is not None
        if todo.join is not None and account is not None:
            await _join(conn, account, int(user_id), todo.join, client)
        if todo.set_role is not None and account is not None:
            await _set_role(conn, account, int(user_id), member, todo.set_role, client)
        return await signin.start_session(deps, conn, int(user_id), client)


async def _create(conn: asyncpg.Connection, who: sso.Identity) -> int:
    """A user without a password (they sign in by SSO; a reset can give them one)."""
    user_id = await conn.fetchval(
        """INSERT INTO users (email, display_name) VALUES ($1, $2)
           ON CONFLICT (lower(email)) DO NOTHING RETURNING id""",
        who.email,
        who.display_name,
    )
    if user_id is None:  # made by a concurrent sign-in since our look-up
        user_id = await conn.fetchval("SELECT id FROM users WHERE lower(email) = lower($1)", who.email)
    return int(user_id)


async def _join(
    conn: asyncpg.Connection, account: int, user_id: int, role: Role, client: signin.Client
) -> None:
    added = await conn.fetchval(
        """INSERT INTO memberships (account_id, user_id, role) SELECT $1, $2, $3
           WHERE EXISTS (SELECT 1 FROM accounts WHERE id = $1)
           ON CONFLICT DO NOTHING RETURNING user_id""",
        account,
        user_id,
        role,
    )
    if added is None and not await conn.fetchval("SELECT 1 FROM accounts WHERE id = $1", account):
        raise DomainError(
            503, "sso_account_missing", "MONITOR_SSO_ACCOUNT names no account; tell the operator"
        )
    if added is not None:
        actor = Actor(account, role=role, user_id=user_id, address=client.address)
        await audit.record(conn, actor, RESOURCE, "add", user_id, {"role"})


async def _set_role(
    conn: asyncpg.Connection, account: int, user_id: int, was: Role | None, role: Role, client: signin.Client
) -> None:
    if was == "owner":
        owners = await conn.fetchval(
            "SELECT count(*) FROM memberships WHERE account_id = $1 AND role = 'owner'", account
        )
        if owners <= 1:
            return  # the account's last owner stays one, whatever the groups say
    await conn.execute(
        "UPDATE memberships SET role = $3 WHERE account_id = $1 AND user_id = $2", account, user_id, role
    )
    actor = Actor(account, role=role, user_id=user_id, address=client.address)
    await audit.record(conn, actor, RESOURCE, "change_role", user_id, {"role"})
