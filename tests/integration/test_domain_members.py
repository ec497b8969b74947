"""Users, members and their roles, keys with a role and a maker, and the audit log, through the
domain's operations with no HTTP in between."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest
from support.domain import Callers, callers_fixture, count, deps_fixture  # noqa: F401

from monitor.domain import audit, channels, keys, members, users
from monitor.domain.context import Actor, Deps, Role
from monitor.domain.errors import DomainError

PASSWORD = "tangerine-walrus-velvet"


async def failed(call: Any) -> DomainError:
    with pytest.raises(DomainError) as caught:
        await call
    return caught.value


async def person(deps: Deps, callers: Callers, email: str, role: Role) -> Actor:
    """A user who is a member of the test account with ``role``, acting as themselves."""
    user_id = await users.create(deps, {"email": email}, PASSWORD)
    await members.add(deps, callers.owner, {"email": email, "role": role})
    return Actor(callers.owner.account_id, role=role, user_id=user_id, address="192.0.2.7")


async def test_a_user_needs_a_good_password_and_an_email_of_their_own(
    deps: Deps, db: asyncpg.Connection
) -> None:
    for password in ("short", "Password1234", "a" * 20):
        error = await failed(users.create(deps, {"email": "ada@example.com"}, password))
        assert (error.status, error.field) == (422, "password")
    assert await count(db, "users") == 0
    assert (await failed(users.create(deps, {"email": "not an email"}, PASSWORD))).field == "email"
    made = await users.create(deps, {"email": "Ada@Example.com", "display_name": "Ada"}, PASSWORD)
    error = await failed(users.create(deps, {"email": "ada@EXAMPLE.com"}, PASSWORD))
    assert (error.status, error.field) == (409, "email")
    assert await users.find(deps.pool, "ADA@example.COM") == made
    stored = await db.fetchval("SELECT password_hash FROM users")
    assert stored.startswith("$argon2id$") and PASSWORD not in stored
    assert (await deps.hasher.verify(stored, PASSWORD)).ok


async def test_members_are_added_changed_and_removed_by_admins(deps: Deps, callers: Callers) -> None:
    owner = await person(deps, callers, "owner@example.com", "owner")
    admin = await person(deps, callers, "admin@example.com", "admin")
    await users.create(deps, {"email": "eve@example.com"}, PASSWORD)
    # An admin gives no more than they hold, and an owner is not theirs to change.
    assert (
        await failed(members.add(deps, admin, {"email": "eve@example.com", "role": "owner"}))
    ).field == "role"
    eve = await members.add(deps, admin, {"email": "EVE@example.com", "role": "editor"})
    assert (eve["email"], eve["role"]) == ("eve@example.com", "editor")
    assert (
        await failed(members.add(deps, admin, {"email": "eve@example.com", "role": "viewer"}))
    ).status == 409
    assert (
        await failed(members.add(deps, admin, {"email": "nobody@example.com", "role": "viewer"}))
    ).field == "email"
    assert (
        await failed(members.add(deps, admin, {"email": "eve@example.com", "role": "boss"}))
    ).field == "role"
    assert (await failed(members.change_role(deps, admin, owner.user_id, {"role": "viewer"}))).status == 403
    assert (await members.change_role(deps, admin, eve["id"], {"role": "viewer"}))["role"] == "viewer"
    editor = Actor(callers.owner.account_id, role="editor", user_id=eve["id"])
    assert (await failed(members.listing(deps, editor))).status == 403
    listed = await members.listing(deps, admin, limit=2)
    assert [m["email"] for m in listed["items"]] == ["owner@example.com", "admin@example.com"]
    rest = await members.listing(deps, admin, cursor=listed["next_cursor"])
    assert [m["email"] for m in rest["items"]] == ["eve@example.com"] and rest["next_cursor"] is None
    await members.remove(deps, admin, eve["id"])
    assert (await failed(members.remove(deps, admin, eve["id"]))).status == 404
    assert (await members.listing(deps, callers.other))["items"] == []


async def test_the_last_owner_can_neither_leave_nor_be_demoted(deps: Deps, callers: Callers) -> None:
    first = await person(deps, callers, "first@example.com", "owner")
    for call in (members.change_role(deps, first, first.user_id, {"role": "admin"}),
                 members.remove(deps, first, first.user_id)):  # fmt: skip
        error = await failed(call)
        assert (error.status, error.field) == (409, "role") and "last owner" in error.message
    second = await person(deps, callers, "second@example.com", "owner")
    await members.change_role(deps, second, first.user_id, {"role": "admin"})
    assert (await failed(members.remove(deps, second, second.user_id))).status == 409


async def test_a_key_holds_no_more_than_its_maker(
    deps: Deps, callers: Callers, db: asyncpg.Connection
) -> None:
    editor = await person(deps, callers, "ed@example.com", "editor")
    admin = await person(deps, callers, "adm@example.com", "admin")
    assert (await failed(keys.create(deps, editor, {}))).status == 403  # keys are an admin's
    error = await failed(keys.create(deps, admin, {"role": "owner"}))
    assert (error.status, error.field) == (403, "role")
    own = await keys.create(deps, admin, {"name": "ops"})
    read_only = await keys.create(deps, admin, {"name": "ci", "role": "viewer"})
    assert (own["role"], read_only["role"]) == ("admin", "viewer")
    assert (
        own["created_by"] == {"id": admin.user_id, "email": "adm@example.com"} and own["last_used_at"] is None
    )
    found = await keys.caller_for_key(deps.pool, read_only["key"])
    assert found == keys.Caller(callers.owner.account_id, read_only["id"], "viewer")
    used = await db.fetchval("SELECT last_used_at FROM api_keys WHERE id = $1", read_only["id"])
    assert used is not None
    await keys.caller_for_key(deps.pool, read_only["key"])  # within the minute: not written again
    assert await db.fetchval("SELECT last_used_at FROM api_keys WHERE id = $1", read_only["id"]) == used
    # Demoted, the maker's keys come down with them; removed, they are revoked.
    owner = await person(deps, callers, "own@example.com", "owner")
    await members.change_role(deps, owner, admin.user_id, {"role": "editor"})
    roles = dict(await db.fetch("SELECT name, role FROM api_keys"))
    assert roles == {"ops": "editor", "ci": "viewer"}
    await members.remove(deps, owner, admin.user_id)
    assert await keys.caller_for_key(deps.pool, own["key"]) is None


async def test_writes_are_audited_by_field_name_never_value(deps: Deps, callers: Callers) -> None:
    admin = await person(deps, callers, "adm@example.com", "admin")
    made = await keys.create(deps, admin, {"name": "secret-looking name", "role": "viewer"})
    await keys.revoke(deps, admin, made["id"])
    log = await audit.listing(deps, admin)
    entries = [(e["resource"], e["operation"], e["fields"]) for e in log["items"]]
    assert entries[:3] == [("keys", "revoke", []), ("keys", "create", ["name", "role"]),
                           ("members", "add", ["email", "role"])]  # fmt: skip
    assert log["items"][0]["user"] == {"id": admin.user_id, "email": "adm@example.com"}
    assert log["items"][0]["address"] == "192.0.2.7" and log["items"][0]["object_id"] == str(made["id"])
    assert "secret-looking" not in str(log) and made["key"] not in str(log)
    only = await audit.listing(deps, admin, filters={"resource": "keys", "operation": "create"}, limit=1)
    assert [e["operation"] for e in only["items"]] == ["create"] and only["next_cursor"] is None
    page = await audit.listing(deps, admin, limit=1)
    after = await audit.listing(deps, admin, limit=1, cursor=page["next_cursor"])
    assert after["items"][0]["id"] < page["items"][0]["id"]
    viewer = Actor(callers.owner.account_id, role="viewer")
    error = await failed(audit.listing(deps, viewer))
    assert error.status == 403 and "admin" in error.message
    assert (await audit.listing(deps, callers.other))["items"] == []
    # Through a key the admin made, the row names the key and its maker.
    through_key = Actor(admin.account_id, role="viewer", key_id=made["id"])
    await audit.record(deps.pool, through_key, "keys", "create", 1)
    latest = (await audit.listing(deps, admin, limit=1))["items"][0]
    assert (latest["key_id"], latest["user"]) == (
        made["id"],
        {"id": admin.user_id, "email": "adm@example.com"},
    )


async def test_a_channels_secret_reaches_the_log_by_name_only(deps: Deps, callers: Callers) -> None:
    url = "http://127.0.0.1:9/hook?token=s3cr3t-value"
    made = await channels.create(
        deps, callers.owner, {"kind": "webhook", "name": "hook", "config": {"url": url}}
    )
    await channels.update(deps, callers.owner, made["id"], {"config": {"url": url + "2"}})
    await channels.delete(deps, callers.owner, made["id"])
    log = (await audit.listing(deps, callers.owner, filters={"resource": "channels"}))["items"]
    config = ["config", "config.url"]
    assert [(e["operation"], e["fields"]) for e in log] == [
        ("delete", []), ("update", config), ("create", [*config, "kind", "name"])
    ]  # fmt: skip
    assert "s3cr3t" not in str(log) and all(e["user"] is None and e["key_id"] is None for e in log)
