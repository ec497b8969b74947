"""Maintenance windows through the domain's operations, with no HTTP in between: what the API
and every other face get alike."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest
from support import insert_monitor
from support.domain import Callers, callers_fixture, count, deps_fixture  # noqa: F401

from monitor.domain import maintenance
from monitor.domain.context import Deps
from monitor.domain.errors import DomainError

URL = "http://127.0.0.1:9/"
START = datetime(2030, 1, 1, tzinfo=UTC)


def once(**fields: Any) -> dict[str, Any]:
    return {
        "name": "Deploy",
        "once": {"from": "2030-01-01T00:00:00Z", "to": "2030-01-01T02:00:00Z"},
        **fields,
    }


async def test_a_window_is_made_read_listed_changed_and_deleted(
    deps: Deps, callers: Callers, db: asyncpg.Connection
) -> None:
    monitor = await insert_monitor(db, url=URL)
    made = await maintenance.create(deps, callers.owner, once(monitor_ids=[monitor["id"], monitor["id"]]))
    assert made["monitor_ids"] == [monitor["id"]] and made["once"] == {
        "from": "2030-01-01T00:00:00Z", "to": "2030-01-01T02:00:00Z",
    }  # fmt: skip
    assert made["active_now"] is False and made["next"] == made["once"]
    assert await maintenance.get(deps, callers.owner, made["id"]) == made

    listed = await maintenance.listing(deps, callers.owner, limit=1)
    assert [w["id"] for w in listed["items"]] == [made["id"]] and listed["next_cursor"] is None

    changed = await maintenance.update(
        deps, callers.owner, made["id"], {"recurring": {"cron": "0 2 * * 0", "duration_minutes": 30}}
    )
    assert changed["kind"] == "cron" and changed["once"] is None and changed["name"] == "Deploy"
    assert changed["recurring"]["duration_minutes"] == 30

    await maintenance.delete(deps, callers.owner, made["id"])
    with pytest.raises(DomainError) as gone:
        await maintenance.get(deps, callers.owner, made["id"])
    assert (gone.value.status, gone.value.message) == (404, "maintenance window not found")


async def test_another_accounts_window_is_not_found(deps: Deps, callers: Callers) -> None:
    made = await maintenance.create(deps, callers.owner, once(tags=["db"]))
    for call in (
        maintenance.get(deps, callers.other, made["id"]),
        maintenance.update(deps, callers.other, made["id"], {"name": "Mine"}),
        maintenance.delete(deps, callers.other, made["id"]),
    ):
        with pytest.raises(DomainError) as caught:
            await call
        assert caught.value.status == 404
    assert (await maintenance.listing(deps, callers.other))["items"] == []
    assert (await maintenance.get(deps, callers.owner, made["id"]))["name"] == "Deploy"


INVALID = [
    ("no schedule", {"name": "x", "tags": ["db"]}, "once"),
    ("an end before the start", once(tags=["db"], once={"from": "2030-01-02T00:00:00Z",
                                                          "to": "2030-01-01T00:00:00Z"}), "once.to"),
    ("a rule that never occurs", {"name": "x", "tags": ["db"],
                                  "recurring": {"rrule": "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30",
                                                "duration_minutes": 5}}, "recurring.rrule"),
    ("an unknown field", once(tags=["db"], colour="red"), "colour"),
    ("nothing it applies to", once(), "monitor_ids"),
    ("a monitor of no one", once(monitor_ids=[999]), "monitor_ids"),
]  # fmt: skip


@pytest.mark.parametrize(("body", "field"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID])
async def test_an_invalid_window_names_the_field_and_writes_nothing(
    deps: Deps, callers: Callers, db: asyncpg.Connection, body: dict[str, Any], field: str
) -> None:
    with pytest.raises(DomainError) as caught:
        await maintenance.create(deps, callers.owner, body)
    assert (caught.value.status, caught.value.field) == (422, field), caught.value.message
    assert caught.value.message.startswith(f"{field}: ")
    assert await count(db, "maintenance_windows") == 0


async def test_a_refused_change_leaves_the_window_as_it_was(
    deps: Deps, callers: Callers, db: asyncpg.Connection
) -> None:
    mine = await insert_monitor(db, url=URL)
    theirs = await insert_monitor(db, url=URL, account_id=callers.other.account_id)
    made = await maintenance.create(deps, callers.owner, once(monitor_ids=[mine["id"]]))
    with pytest.raises(DomainError) as caught:
        await maintenance.update(
            deps, callers.owner, made["id"], {"name": "New", "monitor_ids": [theirs["id"]]}
        )
    assert caught.value.field == "monitor_ids"
    assert await maintenance.get(deps, callers.owner, made["id"]) == made


async def test_a_viewer_reads_and_is_refused_a_change_before_anything_is_judged(
    deps: Deps, callers: Callers
) -> None:
    made = await maintenance.create(deps, callers.owner, once(tags=["db"]))
    assert (await maintenance.get(deps, callers.viewer, made["id"]))["id"] == made["id"]
    for call in (
        maintenance.create(deps, callers.viewer, {"not": "a window"}),
        maintenance.update(deps, callers.viewer, made["id"], {}),
        maintenance.delete(deps, callers.viewer, made["id"]),
    ):
        with pytest.raises(DomainError) as caught:
            await call
        assert (caught.value.status, caught.value.code) == (403, "forbidden")


async def test_a_monitors_windows_and_the_accounts_glance(
    deps: Deps, callers: Callers, db: asyncpg.Connection
) -> None:
    monitor = await insert_monitor(db, url=URL, tags=["db"])
    now = datetime.now(UTC)
    open_now = {"from": (now - timedelta(hours=1)).isoformat(), "to": (now + timedelta(hours=1)).isoformat()}
    current = await maintenance.create(deps, callers.owner, {"name": "Now", "tags": ["db"], "once": open_now})
    later = await maintenance.create(deps, callers.owner, once(monitor_ids=[monitor["id"]]))
    shown = await maintenance.monitor_windows(deps.pool, monitor)
    assert [(w["id"], w["active_now"]) for w in shown] == [(current["id"], True), (later["id"], False)]
    glance = await maintenance.account_windows(deps.pool, callers.owner.account_id)
    assert [w["id"] for w in glance["active"]] == [current["id"]]
    assert [w["id"] for w in glance["upcoming"]] == [later["id"]]
    assert await maintenance.account_windows(deps.pool, callers.other.account_id) == {
        "active": [],
        "upcoming": [],
    }
