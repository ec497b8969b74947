"""Monitors, their history, the summary and heartbeat pings through the domain's operations,
with no HTTP in between."""

from __future__ import annotations

from collections.abc import Coroutine, Hashable
from typing import Any

import asyncpg
import pytest
from support.domain import Callers, callers_fixture, count, deps_fixture  # noqa: F401

from monitor.domain import history, monitor_lists, monitors, pings, summary
from monitor.domain.context import Actor, Deps
from monitor.domain.errors import DomainError

WEB = {"name": "web", "url": "http://127.0.0.1:9/health", "interval_seconds": 60}


async def refused(call: Coroutine[Any, Any, Any]) -> DomainError:
    with pytest.raises(DomainError) as caught:
        await call
    return caught.value


async def test_a_monitor_is_made_read_listed_changed_and_deleted(
    deps: Deps, callers: Callers, db: asyncpg.Connection
) -> None:
    made = await monitors.create(deps, callers.owner, WEB, base="https://status.example.test")
    monitor_id = made.monitor["id"]
    assert made.monitor["url"] == WEB["url"] and made.monitor["status"] == "unknown"
    assert made.monitor["badge_url"].startswith("https://status.example.test/badge/")
    assert made.monitor["maintenance"] == []  # the answers about one monitor carry its windows
    read = await monitors.get(deps, callers.owner, monitor_id, base="https://status.example.test")
    assert read == made
    listed = await monitor_lists.listing(deps, callers.owner, includes=["uptime_24h"])
    assert [m["id"] for m in listed["items"]] == [monitor_id] and listed["next_cursor"] is None
    assert listed["items"][0]["uptime_24h"]["checks"] == 0 and "maintenance" not in listed["items"][0]

    changed = await monitors.update(deps, callers.owner, monitor_id, {"name": "site"}, expected=[made.etag])
    assert changed.monitor["name"] == "site" and changed.etag != made.etag
    stale = await refused(
        monitors.update(deps, callers.owner, monitor_id, {"name": "x"}, expected=[made.etag])
    )
    assert (stale.status, stale.code) == (412, "precondition_failed")

    await monitors.delete(deps, callers.owner, monitor_id)
    assert await count(db, "monitors") == 0
    # Each write is in the audit log, by field name (the refused one is not).
    logged = await db.fetch(
        "SELECT operation, object_id, fields FROM audit_log WHERE resource = 'monitors' ORDER BY id"
    )
    assert [(r["operation"], r["object_id"], r["fields"]) for r in logged] == [
        ("create", str(monitor_id), ["interval_seconds", "name", "url"]),
        ("update", str(monitor_id), ["name"]),
        ("delete", str(monitor_id), []),
    ]


async def test_an_invalid_monitor_names_the_field_and_writes_nothing(
    deps: Deps, callers: Callers, db: asyncpg.Connection
) -> None:
    for body, field, status in (
        ({**WEB, "interval_seconds": 0.5}, "interval_seconds", 422),
        ({**WEB, "url": "http://169.254.169.254/"}, "url", 400),
        ({**WEB, "depends_on": [2**40]}, "depends_on", 422),
    ):
        error = await refused(monitors.create(deps, callers.owner, body))
        assert (error.status, error.field) == (status, field), error.message
    assert await count(db, "monitors") == 0


async def test_a_listing_judges_its_filters(deps: Deps, callers: Callers) -> None:
    for given, field in (
        ({"status": "sideways"}, "status"),
        ({"tags": ["no spaces"]}, "tag"),
        ({"includes": ["uptime_1y"]}, "include"),
        ({"cursor": "not-a-cursor"}, "cursor"),
        ({"q": "x" * 201}, "q"),
        ({"q": "nul\x00"}, "q"),
        ({"type_": "pigeon"}, "type"),
        ({"location": "no spaces"}, "location"),
        ({"sort": "sideways"}, "sort"),
        ({"sort": "name", "cursor": "WzFd"}, "cursor"),  # an id cursor ([1]) given to the name sort
    ):
        error = await refused(monitor_lists.listing(deps, callers.owner, **given))
        assert (error.status, error.field) == (400, field), error.message


def history_reads(deps: Deps, actor: Actor, monitor_id: int) -> list[Coroutine[Any, Any, Any]]:
    return [
        history.checks(deps, actor, monitor_id),
        history.incidents(deps, actor, monitor_id),
        history.uptime(deps, actor, monitor_id, windows="24h,7d"),
        history.stats(deps, actor, monitor_id, bucket="1d"),
    ]


async def test_another_accounts_monitor_and_its_history_are_not_found(deps: Deps, callers: Callers) -> None:
    monitor_id = (await monitors.create(deps, callers.owner, WEB)).monitor["id"]
    for call in (
        monitors.get(deps, callers.other, monitor_id),
        monitors.update(deps, callers.other, monitor_id, {"name": "mine"}),
        monitors.delete(deps, callers.other, monitor_id),
        *history_reads(deps, callers.other, monitor_id),
    ):
        error = await refused(call)
        assert (error.status, error.message) == (404, "monitor not found")
    assert (await monitor_lists.listing(deps, callers.other))["items"] == []
    assert (await summary.summary(deps, callers.other))["monitors"] == 0


async def test_a_monitors_history_and_the_summary_read_back(deps: Deps, callers: Callers) -> None:
    monitor_id = (await monitors.create(deps, callers.owner, WEB)).monitor["id"]
    checks, incidents, uptime, stats = [await call for call in history_reads(deps, callers.owner, monitor_id)]
    assert checks == {"items": [], "next_cursor": None} and incidents == checks
    assert set(uptime["windows"]) == {"24h", "7d"} and uptime["windows"]["7d"]["checks"] == 0
    assert stats["bucket"] == "1d" and stats["items"] == []
    glance = await summary.summary(deps, callers.owner)
    assert glance["monitors"] == 1 and glance["by_status"]["unknown"] == 1 and glance["down"] == []
    error = await refused(history.uptime(deps, callers.owner, monitor_id, windows="1y"))
    assert (error.status, error.field) == (400, "window")


async def test_a_viewer_reads_monitors_and_changes_none(deps: Deps, callers: Callers) -> None:
    monitor_id = (await monitors.create(deps, callers.owner, WEB)).monitor["id"]
    assert (await monitors.get(deps, callers.viewer, monitor_id)).monitor["id"] == monitor_id
    for read in history_reads(deps, callers.viewer, monitor_id):
        await read
    for call in (
        monitors.create(deps, callers.viewer, WEB),
        monitors.update(deps, callers.viewer, monitor_id, {"name": "x"}),
        monitors.delete(deps, callers.viewer, monitor_id),
    ):
        assert (await refused(call)).status == 403


async def test_who_only_receives_alerts_reads_nothing(deps: Deps, callers: Callers) -> None:
    monitor_id = (await monitors.create(deps, callers.owner, WEB)).monitor["id"]
    notify = Actor(callers.owner.account_id, role="notify")
    for call in (
        monitors.get(deps, notify, monitor_id),
        monitor_lists.listing(deps, notify),
        summary.summary(deps, notify),
        *history_reads(deps, notify, monitor_id),
    ):
        assert (await refused(call)).status == 403


class Unlimited:
    def take(self, key: Hashable) -> float:
        return 0.0


class Spent:
    def take(self, key: Hashable) -> float:
        return 2.5


async def test_a_ping_is_taken_by_its_token(deps: Deps, callers: Callers, db: asyncpg.Connection) -> None:
    made = await monitors.create(deps, callers.owner, {"type": "heartbeat", "name": "backup"})
    token = made.monitor["ping_url"].rsplit("/", 1)[1]
    desk = pings.PingDesk(deps.pool, Unlimited())
    try:
        body = [b"done\n"]
        await pings.ping(desk, token, "fail", lambda n: _pop(body))
        rows = await db.fetch("SELECT monitor_id, kind, body FROM pings")
        assert [tuple(r) for r in rows] == [(made.monitor["id"], "fail", "done\n")]
        for unknown in ("x" * len(token), "short", token + "/"):
            error = await refused(pings.ping(desk, unknown, ""))
            assert (error.status, error.message) == (404, "no such ping URL")
        assert (await refused(pings.ping(desk, token, "nonsense"))).status == 404
    finally:
        await desk.close()
    limited = pings.PingDesk(deps.pool, Spent())
    try:
        error = await refused(pings.ping(limited, token, ""))
        assert (error.status, error.headers) == (429, {"Retry-After": "3"})
    finally:
        await limited.close()
    assert await count(db, "pings") == 1


async def _pop(parts: list[bytes]) -> bytes:
    return parts.pop(0) if parts else b""
