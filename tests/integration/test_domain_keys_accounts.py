"""API keys and accounts through the domain's operations, with no HTTP in between: what the API
and the operator's command line get alike."""

from __future__ import annotations

import asyncpg
import pytest
from support import insert_monitor
from support.domain import Callers, callers_fixture, count, deps_fixture  # noqa: F401

from monitor.domain import accounts, keys
from monitor.domain.context import Actor, Deps
from monitor.domain.errors import DomainError


async def test_a_key_is_made_listed_and_revoked(deps: Deps, callers: Callers, db: asyncpg.Connection) -> None:
    made = await keys.create(deps, callers.owner, {"name": "  deploy  "})
    assert made["name"] == "deploy" and made["key"].startswith(made["prefix"] + "_")
    assert await keys.account_for_key(deps.pool, made["key"]) == (callers.owner.account_id, made["id"])
    assert str(made["key"]) not in str(await db.fetch("SELECT * FROM api_keys"))  # only its hash
    listed = await keys.listing(deps, callers.owner)
    assert listed["items"][0]["last_used_at"] is not None  # account_for_key used it
    assert listed == {
        "items": [
            {
                **{k: v for k, v in made.items() if k != "key"},
                "last_used_at": listed["items"][0]["last_used_at"],
            }
        ],
        "next_cursor": None,
    }
    assert "key" not in listed["items"][0]

    revoked = await keys.revoke(deps, callers.owner, made["id"])
    assert revoked.newly and revoked.key.revoked_at is not None and revoked.key.account == "test"
    assert await keys.account_for_key(deps.pool, made["key"]) is None
    again = await keys.revoke(deps, callers.owner, made["id"])
    assert not again.newly and again.key.revoked_at == revoked.key.revoked_at


async def test_another_accounts_key_is_not_found(deps: Deps, callers: Callers) -> None:
    made = await keys.create(deps, callers.owner, {})
    with pytest.raises(DomainError) as caught:
        await keys.revoke(deps, callers.other, made["id"])
    assert (caught.value.status, caught.value.message) == (404, "key not found")
    assert (await keys.listing(deps, callers.other))["items"] == []
    assert await keys.account_for_key(deps.pool, made["key"]) is not None


@pytest.mark.parametrize(("body", "field"), [({"name": "x" * 101}, "name"), ({"scope": "all"}, "scope")])
async def test_an_invalid_key_names_the_field_and_writes_nothing(
    deps: Deps, callers: Callers, db: asyncpg.Connection, body: dict[str, str], field: str
) -> None:
    with pytest.raises(DomainError) as caught:
        await keys.create(deps, callers.owner, body)
    assert (caught.value.status, caught.value.field) == (422, field)
    assert await count(db, "api_keys") == 0


async def test_keys_are_an_admins_business(deps: Deps, callers: Callers) -> None:
    editor = Actor(callers.owner.account_id, role="editor")
    for call in (keys.create(deps, editor, {}), keys.listing(deps, editor), keys.revoke(deps, editor, 1)):
        with pytest.raises(DomainError) as caught:
            await call
        assert caught.value.status == 403


async def test_the_operator_lists_every_key_and_finds_a_keys_account(deps: Deps, callers: Callers) -> None:
    mine = await keys.create(deps, callers.owner, {"name": "a"})
    theirs = await keys.create(deps, callers.other, {"name": "b"})
    assert [(k.id, k.account) for k in await keys.every(deps)] == [
        (mine["id"], "test"),
        (theirs["id"], "other"),
    ]
    assert [k.id for k in await keys.every(deps, callers.other.account_id)] == [theirs["id"]]
    assert await keys.account_of(deps, theirs["id"]) == callers.other.account_id
    assert await keys.account_of(deps, 999) is None


async def test_an_account_is_made_found_listed_and_deleted_with_what_it_holds(
    deps: Deps, db: asyncpg.Connection
) -> None:
    ops = await accounts.create(deps, "ops")
    web = await accounts.create(deps, "web")
    assert await accounts.find(deps, "ops") == ops and await accounts.find(deps, "nobody") is None
    await insert_monitor(db, url="http://127.0.0.1:9/", account_id=ops)
    await keys.create(deps, Actor(ops), {})
    assert [(a.name, a.monitors, a.active_keys) for a in await accounts.every(deps)] == [
        ("ops", 1, 1),
        ("web", 0, 0),
    ]
    held = await accounts.contents(deps, Actor(ops))
    assert held.summary() == "1 monitor, 0 channels, 1 API key, 0 status pages, 0 maintenance windows"
    assert await accounts.delete(deps, Actor(ops)) == held
    assert [a.id for a in await accounts.every(deps)] == [web]
    assert await count(db, "monitors") == 0
    for call in (accounts.contents(deps, Actor(ops)), accounts.delete(deps, Actor(ops))):
        with pytest.raises(DomainError) as caught:
            await call
        assert caught.value.status == 404


@pytest.mark.parametrize(("name", "status", "says"), [
    ("", 422, "an account name must contain at least one visible character"),
    ("a" * 101, 422, "an account name has at most 100 characters (101 given)"),
    ("taken", 409, "an account named 'taken' exists already"),
])  # fmt: skip
async def test_a_bad_account_name_names_the_field_and_writes_nothing(
    deps: Deps, db: asyncpg.Connection, name: str, status: int, says: str
) -> None:
    await accounts.create(deps, "taken")
    with pytest.raises(DomainError) as caught:
        await accounts.create(deps, name)
    assert (caught.value.status, caught.value.field, caught.value.message) == (status, "name", says)
    assert await count(db, "accounts") == 1


async def test_only_an_owner_deletes_an_account(deps: Deps, callers: Callers) -> None:
    admin = Actor(callers.owner.account_id, role="admin")
    assert (await accounts.contents(deps, admin)).name == "test"
    with pytest.raises(DomainError) as caught:
        await accounts.delete(deps, admin)
    assert caught.value.status == 403
    assert await accounts.find(deps, "test") == callers.owner.account_id
