"""The first run's operations called directly (monitor/domain/first_run.py): a setup token only
while no user exists, the first owner made with a valid one (user, account, owner membership,
audit row and session, every token gone), and refused otherwise with nothing written: a wrong,
expired or used token (403, one message), a second owner (409), too many wrong tokens from one
address (429), two visitors at once (exactly one succeeds)."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
import pytest
from support import leaks
from support.domain import count, deps_fixture  # noqa: F401

from monitor.domain import first_run, signin
from monitor.domain.context import Deps
from monitor.domain.errors import DomainError

PASSWORD = "first-owner-Pass-4d8e2a"
CLIENT = signin.Client("192.0.2.7", "test-agent")


def body(given: str, **changes: Any) -> dict[str, Any]:
    leaks.secret("password", PASSWORD)
    leaks.secret("setup token", given)
    made = {"token": given, "email": "ada@example.com", "name": "Ada", "password": PASSWORD,
            "account_name": "acme"}  # fmt: skip
    made.update(changes)
    return made


async def issued(deps: Deps) -> str:
    token = await first_run.issue_token(deps)
    assert token is not None
    leaks.secret("setup token", token)
    return token


async def refused(deps: Deps, sent: dict[str, Any], client: signin.Client = CLIENT) -> DomainError:
    with pytest.raises(DomainError) as caught:
        await first_run.create_owner(deps, sent, client)
    return caught.value


async def nothing_written(db: asyncpg.Connection) -> None:
    for table in ("users", "accounts", "memberships", "sessions", "audit_log"):
        assert await count(db, table) == 0, table


async def test_the_first_owner_is_made_with_a_valid_token(deps: Deps, db: asyncpg.Connection) -> None:
    assert await first_run.needs_owner(deps)
    token = await issued(deps)
    other = await issued(deps)  # several may be valid: each api start makes one
    stored = [bytes(r["token_hash"]) for r in await db.fetch("SELECT token_hash FROM setup_tokens")]
    assert sorted(stored) == sorted([first_run.hash_token(token), first_run.hash_token(other)])
    assert all(token.encode() not in h for h in stored)  # the hash only

    done = await first_run.create_owner(deps, body(token), CLIENT)
    leaks.secret("session id", done.session_id)
    assert done.session.email == "ada@example.com" and done.max_age > 0
    user = await db.fetchrow("SELECT id, email, display_name, password_hash FROM users")
    assert (user["email"], user["display_name"]) == ("ada@example.com", "Ada")
    assert user["password_hash"].startswith("$argon2id$") and PASSWORD not in user["password_hash"]
    account = await db.fetchval("SELECT id FROM accounts WHERE name = 'acme'")
    member = await db.fetchrow("SELECT user_id, role FROM memberships WHERE account_id = $1", account)
    assert (member["user_id"], member["role"]) == (user["id"], "owner")
    # The session is a sign-in's: the cookie's look-up finds it, and it acts as the owner.
    session = await signin.session_for(deps, done.session_id)
    assert session is not None and session.user_id == user["id"]
    actor = await signin.actor_for(deps, session, None, CLIENT)
    assert (actor.account_id, actor.role) == (account, "owner")
    audited = await db.fetch("SELECT resource, operation, user_id, address FROM audit_log ORDER BY id")
    operations = [(r["resource"], r["operation"]) for r in audited]
    assert operations == [("members", "add"), ("accounts", "first_run")]
    assert {(r["user_id"], r["address"]) for r in audited} == {(user["id"], CLIENT.address)}

    assert await count(db, "setup_tokens") == 0  # every token, the unused one too
    assert not await first_run.needs_owner(deps)
    assert await first_run.issue_token(deps) is None
    again = await refused(deps, body(other, email="eve@example.com", account_name="evil"))
    assert (again.status, again.code) == (409, "already_set_up")
    assert await count(db, "users") == 1 and await count(db, "accounts") == 1


async def test_a_used_token_no_longer_works(deps: Deps, db: asyncpg.Connection) -> None:
    token = await issued(deps)
    await first_run.create_owner(deps, body(token), CLIENT)
    # Were every user gone again, the token would still not work: it was deleted.
    await db.execute("TRUNCATE users, accounts CASCADE")
    error = await refused(deps, body(token))
    assert (error.status, error.code, error.field) == (403, "bad_setup_token", "token")
    await nothing_written(db)


@pytest.mark.parametrize("which", ["wrong", "expired", "unknown shape"])
async def test_a_bad_token_writes_nothing_and_says_the_same(
    deps: Deps, db: asyncpg.Connection, which: str
) -> None:
    token = await issued(deps)
    if which == "expired":
        await db.execute("UPDATE setup_tokens SET created_at = now() - interval '2 days', "
                         "expires_at = now() - interval '1 day'")  # fmt: skip
        sent = token
    else:
        sent = token[:-1] + ("A" if token[-1] != "A" else "B") if which == "wrong" else "x"
    error = await refused(deps, body(sent))
    assert (error.status, error.code, error.field, error.message) == (
        403, "bad_setup_token", "token", first_run.BAD_TOKEN
    )  # fmt: skip
    await nothing_written(db)
    assert await db.fetchval("SELECT failures FROM signin_throttle WHERE scope = 'setup'") == 1


async def test_issuing_a_token_deletes_the_expired_ones(deps: Deps, db: asyncpg.Connection) -> None:
    await issued(deps)
    await db.execute("UPDATE setup_tokens SET created_at = now() - interval '2 days', "
                     "expires_at = now() - interval '1 day'")  # fmt: skip
    fresh = await issued(deps)
    stored = await db.fetch("SELECT token_hash, expires_at - created_at AS life FROM setup_tokens")
    assert [bytes(r["token_hash"]) for r in stored] == [first_run.hash_token(fresh)]
    assert stored[0]["life"].total_seconds() == first_run.TOKEN_HOURS * 3600


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"password": "short"}, "password"),
        ({"password": "password1234"}, "password"),  # a common one
        ({"email": "not-an-address"}, "email"),
        ({"account_name": "\u202eevil"}, "account_name"),
        ({"account_name": ""}, "account_name"),
        ({"name": "\x07"}, "name"),
        ({"token": ""}, "token"),
        ({"role": "owner"}, "role"),
    ],
)
async def test_a_bad_body_names_its_field_and_writes_nothing(
    deps: Deps, db: asyncpg.Connection, changes: dict[str, Any], field: str
) -> None:
    token = await issued(deps)
    error = await refused(deps, {**body(token), **changes})
    assert (error.status, error.field) == (422, field), error.message
    await nothing_written(db)
    assert await count(db, "setup_tokens") == 1  # still valid
    assert await count(db, "signin_throttle") == 0  # not a wrong token


async def test_a_taken_account_name_rolls_the_user_back(deps: Deps, db: asyncpg.Connection) -> None:
    # An account made by the operator before any user (monitor accounts create).
    await db.execute("INSERT INTO accounts (name) VALUES ('acme')")
    token = await issued(deps)
    error = await refused(deps, body(token))
    assert (error.status, error.field) == (409, "account_name")
    assert await count(db, "users") == 0 and await count(db, "setup_tokens") == 1
    done = await first_run.create_owner(deps, body(token, account_name="acme 2"), CLIENT)
    leaks.secret("session id", done.session_id)
    assert await count(db, "users") == 1


async def test_wrong_tokens_from_one_address_are_throttled(deps: Deps, db: asyncpg.Connection) -> None:
    token = await issued(deps)
    for _ in range(first_run.FREE_ATTEMPTS):
        assert (await refused(deps, body("wrong-token"))).status == 403
    # Waiting now: even the right token is refused unjudged, and nothing is counted.
    error = await refused(deps, body(token))
    assert (error.status, error.code) == (429, "too_many_attempts")
    assert int(error.headers["Retry-After"]) >= 1
    assert await db.fetchval("SELECT failures FROM signin_throttle") == first_run.FREE_ATTEMPTS
    # Another address is not held back by it.
    done = await first_run.create_owner(deps, body(token), signin.Client("198.51.100.9"))
    leaks.secret("session id", done.session_id)


async def test_two_visitors_at_once_make_exactly_one_owner(deps: Deps, db: asyncpg.Connection) -> None:
    first, second = await issued(deps), await issued(deps)
    results = await asyncio.gather(
        first_run.create_owner(deps, body(first), CLIENT),
        first_run.create_owner(deps, body(second, email="bo@example.com", account_name="bo's"), CLIENT),
        return_exceptions=True,
    )
    made = [r for r in results if isinstance(r, signin.SignedIn)]
    failed = [r for r in results if isinstance(r, DomainError)]
    assert len(made) == 1 and [(e.status, e.code) for e in failed] == [(409, "already_set_up")], results
    leaks.secret("session id", made[0].session_id)
    assert await count(db, "users") == 1 and await count(db, "accounts") == 1
    assert await count(db, "memberships") == 1 and await count(db, "setup_tokens") == 0
