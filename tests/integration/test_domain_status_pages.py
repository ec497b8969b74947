"""Status pages (and badge tokens) through the domain's operations, with no HTTP in between.
What serves the pages is a recorder here: the operations tell it which pages and badges changed."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest
from support import insert_monitor
from support.domain import Callers, callers_fixture, count, deps_fixture  # noqa: F401

from monitor.domain import status_pages
from monitor.domain.context import Deps
from monitor.domain.errors import DomainError

URL = "http://127.0.0.1:9/"
BASE = "https://status.example.test"


class Recorder:
    def __init__(self) -> None:
        self.pages: list[tuple[str, ...]] = []
        self.badges: list[str] = []

    def forget(self, *slugs: str) -> None:
        self.pages.append(slugs)

    def forget_badge(self, token: str) -> None:
        self.badges.append(token)


def page(monitor_id: int, **fields: Any) -> dict[str, Any]:
    return {"slug": "ops", "title": "Ops", "groups": [{"name": "Web", "monitor_ids": [monitor_id]}], **fields}


async def test_a_page_is_made_read_listed_changed_and_deleted(
    deps: Deps, callers: Callers, db: asyncpg.Connection
) -> None:
    monitor = await insert_monitor(db, url=URL)
    told = Recorder()
    made = await status_pages.create(deps, callers.owner, page(monitor["id"]), base=BASE, published=told)
    assert made["url"] == f"{BASE}/status/ops" and made["groups"] == [
        {"name": "Web", "monitor_ids": [monitor["id"]], "tags": []}
    ]
    assert await status_pages.get(deps, callers.owner, made["id"], base=BASE) == made
    listed = await status_pages.listing(deps, callers.owner, base=BASE)
    assert [p["id"] for p in listed["items"]] == [made["id"]] and listed["next_cursor"] is None

    changed = await status_pages.update(
        deps,
        callers.owner,
        made["id"],
        {"slug": "ops-2", "description": "All of it"},
        base=BASE,
        published=told,
    )
    assert (changed["slug"], changed["description"], changed["title"]) == ("ops-2", "All of it", "Ops")
    await status_pages.delete(deps, callers.owner, made["id"], published=told)
    assert told.pages == [("ops",), ("ops", "ops-2"), ("ops-2",)]
    assert await count(db, "status_pages") == 0


async def test_another_accounts_page_and_monitor_are_not_found(
    deps: Deps, callers: Callers, db: asyncpg.Connection
) -> None:
    monitor = await insert_monitor(db, url=URL)
    made = await status_pages.create(deps, callers.owner, page(monitor["id"]), base=BASE)
    told = Recorder()
    for call in (
        status_pages.get(deps, callers.other, made["id"], base=BASE),
        status_pages.update(deps, callers.other, made["id"], {"title": "Mine"}, base=BASE, published=told),
        status_pages.delete(deps, callers.other, made["id"], published=told),
        status_pages.rotate_badge_token(deps, callers.other, monitor["id"], base=BASE, published=told),
    ):
        with pytest.raises(DomainError) as caught:
            await call
        assert caught.value.status == 404
    assert (told.pages, told.badges) == ([], [])
    assert (await status_pages.listing(deps, callers.other, base=BASE))["items"] == []
    with pytest.raises(DomainError) as caught:
        await status_pages.create(deps, callers.other, page(monitor["id"], slug="theirs"), base=BASE)
    assert (caught.value.status, caught.value.field) == (422, "groups.0.monitor_ids")
    assert await count(db, "status_pages") == 1


INVALID = [
    ("a slug with capitals", {"slug": "Ops"}, "slug", 422),
    ("a logo over http", {"logo_url": "http://example.com/logo.png"}, "logo_url", 422),
    ("a group that shows nothing", {"groups": [{"name": "Empty"}]}, "groups.0.monitor_ids", 422),
    ("a monitor of no one", {"groups": [{"name": "W", "monitor_ids": [999]}]}, "groups.0.monitor_ids", 422),
    ("an unknown field", {"colour": "red"}, "colour", 422),
]


@pytest.mark.parametrize(("fields", "field", "status"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID])
async def test_an_invalid_page_names_the_field_and_writes_nothing(
    deps: Deps, callers: Callers, db: asyncpg.Connection, fields: dict[str, Any], field: str, status: int
) -> None:
    monitor = await insert_monitor(db, url=URL)
    with pytest.raises(DomainError) as caught:
        await status_pages.create(deps, callers.owner, page(monitor["id"], **fields), base=BASE)
    assert (caught.value.status, caught.value.field) == (status, field), caught.value.message
    assert await count(db, "status_pages") == 0


async def test_a_taken_slug_is_a_conflict_and_the_page_stays_as_it_was(
    deps: Deps, callers: Callers, db: asyncpg.Connection
) -> None:
    monitor = await insert_monitor(db, url=URL)
    first = await status_pages.create(deps, callers.owner, page(monitor["id"]), base=BASE)
    second = await status_pages.create(deps, callers.owner, page(monitor["id"], slug="web"), base=BASE)
    with pytest.raises(DomainError) as caught:
        await status_pages.update(
            deps, callers.owner, second["id"], {"title": "New", "slug": "ops"}, base=BASE
        )
    assert (caught.value.status, caught.value.field) == (409, "slug")
    assert await status_pages.get(deps, callers.owner, second["id"], base=BASE) == second
    assert (await status_pages.get(deps, callers.owner, first["id"], base=BASE))["slug"] == "ops"


async def test_a_badge_token_is_replaced_and_the_old_one_forgotten(
    deps: Deps, callers: Callers, db: asyncpg.Connection
) -> None:
    monitor = await insert_monitor(db, url=URL)
    told = Recorder()
    answer = await status_pages.rotate_badge_token(
        deps, callers.owner, monitor["id"], base=BASE, published=told
    )
    token = await db.fetchval("SELECT badge_token FROM monitors WHERE id = $1", monitor["id"])
    assert answer == {"badge_url": f"{BASE}/badge/{token}"} and told.badges == [monitor["badge_token"]]
    assert token != monitor["badge_token"]


async def test_a_viewer_reads_pages_and_changes_none(
    deps: Deps, callers: Callers, db: asyncpg.Connection
) -> None:
    monitor = await insert_monitor(db, url=URL)
    made = await status_pages.create(deps, callers.owner, page(monitor["id"]), base=BASE)
    assert (await status_pages.get(deps, callers.viewer, made["id"], base=BASE))["id"] == made["id"]
    for call in (
        status_pages.create(deps, callers.viewer, {}, base=BASE),
        status_pages.update(deps, callers.viewer, made["id"], {}, base=BASE),
        status_pages.delete(deps, callers.viewer, made["id"]),
        status_pages.rotate_badge_token(deps, callers.viewer, monitor["id"], base=BASE),
    ):
        with pytest.raises(DomainError) as caught:
            await call
        assert caught.value.status == 403
