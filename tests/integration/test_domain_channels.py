"""Alert channels through the domain's operations, with no HTTP in between."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest
from support.domain import Callers, callers_fixture, count, deps_fixture  # noqa: F401

from monitor.domain import channels
from monitor.domain.context import Deps
from monitor.domain.errors import DomainError
from monitor.secrets import MASK

HOOK = "https://hooks.example.test/in/domain"


def webhook(**fields: Any) -> dict[str, Any]:
    return {"kind": "webhook", "name": "hook", "config": {"url": HOOK}, **fields}


async def test_a_channel_is_made_read_listed_changed_tested_and_deleted(
    deps: Deps, callers: Callers, db: asyncpg.Connection
) -> None:
    made = await channels.create(deps, callers.owner, webhook())
    secret = made["config"]["secret"]
    assert secret.startswith("whsec_") and made["config"]["url"] == MASK and made["monitors"] == 0
    stored = await db.fetchval("SELECT config FROM channels WHERE id = $1", made["id"])
    assert HOOK not in str(stored) and secret not in str(stored)  # sealed at rest
    read = await channels.get(deps, callers.owner, made["id"])
    assert read == {**made, "config": {**made["config"], "secret": MASK}}
    assert [c["id"] for c in (await channels.listing(deps, callers.owner))["items"]] == [made["id"]]

    renamed = await channels.update(
        deps, callers.owner, made["id"], {"name": "on call", "config": {"url": MASK}}
    )
    assert renamed["name"] == "on call" and renamed["config"]["secret"] == MASK
    assert deps.secret_box.open(
        (await db.fetchval("SELECT config FROM channels WHERE id = $1", made["id"]))["secret"]
    ) == secret  # fmt: skip

    queued = await channels.send_test(deps, callers.owner, made["id"])
    assert queued["status"] == "queued"
    assert (
        await db.fetchval("SELECT kind FROM outbox WHERE event_id = $1::uuid", queued["event_id"]) == "test"
    )

    await channels.delete(deps, callers.owner, made["id"])
    assert await count(db, "channels") == 0


async def test_another_accounts_channel_is_not_found(
    deps: Deps, callers: Callers, db: asyncpg.Connection
) -> None:
    made = await channels.create(deps, callers.owner, webhook())
    for call in (
        channels.get(deps, callers.other, made["id"]),
        channels.update(deps, callers.other, made["id"], {"name": "mine"}),
        channels.update(deps, callers.other, made["id"], {"config": {"url": MASK}}),
        channels.delete(deps, callers.other, made["id"]),
        channels.send_test(deps, callers.other, made["id"]),
    ):
        with pytest.raises(DomainError) as caught:
            await call
        assert (caught.value.status, caught.value.message) == (404, "channel not found")
    assert (await channels.listing(deps, callers.other))["items"] == []
    assert await count(db, "outbox") == 0
    assert (await channels.get(deps, callers.owner, made["id"]))["name"] == "hook"


INVALID = [
    ("an unknown kind", {"kind": "carrier-pigeon", "name": "x", "config": {}}, "kind", 422),
    ("no name", {"kind": "telegram", "config": {"chat_id": "1"}}, "name", 422),
    ("a URL that is no URL", {"kind": "slack", "name": "x", "config": {"url": "ftp://x"}}, "config.url", 422),
    ("an address the policy denies", webhook(config={"url": "http://10.1.2.3/hook"}), "config.url", 400),
]


@pytest.mark.parametrize(("body", "field", "status"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID])
async def test_an_invalid_channel_names_the_field_and_writes_nothing(
    deps: Deps, callers: Callers, db: asyncpg.Connection, body: dict[str, Any], field: str, status: int
) -> None:
    with pytest.raises(DomainError) as caught:
        await channels.create(deps, callers.owner, body)
    assert (caught.value.status, caught.value.field) == (status, field), caught.value.message
    assert await count(db, "channels") == 0


async def test_a_refused_change_leaves_the_channel_as_it_was(deps: Deps, callers: Callers) -> None:
    made = await channels.create(deps, callers.owner, webhook())
    before = await channels.get(deps, callers.owner, made["id"])
    for body, field in (
        ({"name": "new", "config": {"url": "http://169.254.169.254/"}}, "config.url"),
        ({"name": "new", "config": {"url": MASK, "colour": "red"}}, "config.colour"),
        ({"name": None}, "name"),
    ):
        with pytest.raises(DomainError) as caught:
            await channels.update(deps, callers.owner, made["id"], body)
        assert caught.value.field == field, caught.value.message
    assert await channels.get(deps, callers.owner, made["id"]) == before


async def test_a_viewer_reads_channels_and_changes_none(deps: Deps, callers: Callers) -> None:
    made = await channels.create(deps, callers.owner, webhook())
    assert (await channels.get(deps, callers.viewer, made["id"]))["id"] == made["id"]
    for call in (
        channels.create(deps, callers.viewer, webhook()),
        channels.update(deps, callers.viewer, made["id"], {"name": "x"}),
        channels.delete(deps, callers.viewer, made["id"]),
        channels.send_test(deps, callers.viewer, made["id"]),
    ):
        with pytest.raises(DomainError) as caught:
            await call
        assert caught.value.status == 403
