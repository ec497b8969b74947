"""``monitors.create_many`` (what ``monitor apply`` creates monitors with) against one
``monitors.create`` after another: the same monitors stored, and the same first broken rule
(quota, validation, vetting, dependencies, channels) named at the same body, nothing written."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import asyncpg
import pytest
from support.domain import Callers, callers_fixture, count, deps_fixture  # noqa: F401

from monitor.domain import channels, maintenance, monitor_bulk, monitors
from monitor.domain.context import Actor, Deps
from monitor.domain.errors import DomainError
from monitor.domain.monitor_inserts import ItemError

WEB = {"name": "web", "url": "http://127.0.0.1:9/health", "interval_seconds": 60}
TCP = {"type": "tcp", "name": "gw", "host": "127.0.0.1", "port": 443, "tags": ["net"]}
BEAT = {"type": "heartbeat", "name": "backup", "interval_seconds": 3600, "paused": True}
SECRET = {**WEB, "name": "private", "auth": {"type": "basic", "username": "robot", "password": "pw"}}

# What differs between two makings of the same monitor: its id, times and tokens.
_VARYING = re.compile(r"/(badge|ping)/[^\"']+")


def _alike(shown: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in shown.items() if k not in ("id", "created_at", "updated_at")}
    return {k: _VARYING.sub(r"/\1/…", v) if isinstance(v, str) else v for k, v in out.items()}


async def _stored(db: asyncpg.Connection, ids: list[int]) -> list[tuple[Any, ...]]:
    """What else one create writes of each monitor, ids left out."""
    out = []
    for monitor_id in ids:
        out.append(
            (
                await db.fetchval("SELECT count(*) FROM monitor_state WHERE monitor_id = $1", monitor_id),
                await db.fetchval("SELECT count(*) FROM monitor_pauses WHERE monitor_id = $1", monitor_id),
                await db.fetchval("SELECT count(*) FROM monitor_secrets WHERE monitor_id = $1", monitor_id),
                await db.fetchval(
                    """SELECT array_agg(channel_id ORDER BY channel_id) FROM monitor_channels
                       WHERE monitor_id = $1""",
                    monitor_id,
                ),
                await db.fetchval(
                    """SELECT array_agg(operation || ':' || array_to_string(fields, ',') ORDER BY id)
                       FROM audit_log WHERE resource = 'monitors' AND object_id = $1""",
                    str(monitor_id),
                ),
            )
        )
    return out


async def test_many_are_stored_as_one_create_after_another_stores_them(
    deps: Deps, callers: Callers, db: asyncpg.Connection
) -> None:
    owner = callers.owner
    slack = await channels.create(
        deps,
        owner,
        {"kind": "slack", "name": "ops", "config": {"url": "https://hooks.slack.com/services/T/B/x"}},
    )
    base = (await monitors.create(deps, owner, {**WEB, "name": "base"})).monitor["id"]
    # A window open now over the tag "net": the answers about a tcp monitor show it.
    await maintenance.create(
        deps,
        owner,
        {
            "name": "now",
            "once": {"from": "2020-01-01T00:00:00Z", "to": "2100-01-01T00:00:00Z"},
            "tags": ["net"],
        },
    )
    bodies = [
        {**WEB, "channel_ids": [slack["id"], slack["id"]], "depends_on": [base, base]},
        TCP,
        BEAT,
        SECRET,
        {**WEB, "name": "chat", "telegram_chat_id": "12345"},
        {**TCP, "name": "gw2", "port": 22},
    ]
    one_by_one = [(await monitors.create(deps, owner, b)).monitor["id"] for b in bodies]
    many = await monitors.create_many(deps, owner, bodies)
    assert many == sorted(many) and many[0] > one_by_one[-1]  # ids in the bodies' order
    for first, second in zip(one_by_one, many, strict=True):
        made_one = (await monitors.get(deps, owner, first)).monitor
        made_many = (await monitors.get(deps, owner, second)).monitor
        assert _alike(made_many) == _alike(made_one)
    assert (await monitors.get(deps, owner, many[1])).monitor["maintenance"][0]["name"] == "now"
    stored = await _stored(db, many)
    assert stored == await _stored(db, one_by_one)
    # create itself writes with the same code: what it writes, stated.
    chat = await db.fetchval("SELECT id FROM channels WHERE kind = 'telegram'")
    audited = [f"create:{','.join(sorted(b))}" for b in bodies]
    assert stored == [
        (1, 0, 0, [slack["id"]], [audited[0]]),
        (1, 0, 0, None, [audited[1]]),
        (1, 1, 0, None, [audited[2]]),
        (1, 0, 1, None, [audited[3].replace("auth", "auth,auth.password,auth.type,auth.username")]),
        (1, 0, 0, [chat], [audited[4]]),
        (1, 0, 0, None, [audited[5]]),
    ]
    assert (await monitors.get(deps, owner, many[0])).monitor["depends_on"] == [base]
    assert await count(db, "channels") == 2  # the Telegram chat's channel made once, then found
    assert await monitors.create_many(deps, owner, []) == []


async def _one_after_another(
    deps: Deps, actor: Actor, bodies: list[dict[str, Any]]
) -> tuple[int, DomainError]:
    """Which body ``create`` refuses first, made one after another, and its error (the ones
    made before it are deleted again)."""
    made = []
    try:
        for index, body in enumerate(bodies):
            try:
                made.append((await monitors.create(deps, actor, body)).monitor["id"])
            except DomainError as exc:
                return index, exc
        raise AssertionError("no body was refused")
    finally:
        for monitor_id in made:
            await monitors.delete(deps, actor, monitor_id)


BAD_CHANNEL = {**WEB, "channel_ids": [2**40]}
CASES = {
    "quota": [WEB, TCP, BEAT, WEB],
    "invalid": [WEB, {**WEB, "interval_seconds": 0.5}, TCP],
    "blocked": [WEB, TCP, {**WEB, "url": "http://169.254.169.254/"}],
    "dependency": [WEB, {**TCP, "depends_on": [2**40]}],
    "channel": [BAD_CHANNEL, WEB],
    "channel before quota": [WEB, BAD_CHANNEL, WEB, TCP],
    "invalid before quota": [WEB, {**TCP, "port": 0}, WEB, TCP],
    "quota before invalid": [WEB, TCP, BEAT, {**TCP, "port": 0}],
    "dependency before channel": [{**WEB, "depends_on": [2**40], "channel_ids": [2**40]}],
}


@pytest.mark.parametrize("bodies", CASES.values(), ids=CASES.keys())
async def test_the_first_broken_rule_is_the_one_create_names_and_nothing_is_made(
    deps: Deps, callers: Callers, db: asyncpg.Connection, bodies: list[dict[str, Any]]
) -> None:
    owner = callers.owner
    small = dataclasses.replace(deps, settings=deps.settings.model_copy(update={"account_monitor_quota": 3}))
    await monitors.create(small, owner, {**WEB, "name": "held"})
    index, error = await _one_after_another(small, owner, bodies)
    audited = await count(db, "audit_log")
    with pytest.raises(ItemError) as caught:
        await monitors.create_many(small, owner, bodies)
    assert caught.value.index == index
    got = caught.value.error
    assert (got.status, got.code, got.message, got.field) == (
        error.status,
        error.code,
        error.message,
        error.field,
    )
    assert await count(db, "monitors") == 1 and await count(db, "audit_log") == audited


async def test_a_viewer_makes_none(deps: Deps, callers: Callers, db: asyncpg.Connection) -> None:
    with pytest.raises(DomainError) as caught:
        await monitors.create_many(deps, callers.viewer, [WEB])
    assert caught.value.status == 403 and await count(db, "monitors") == 0


async def _updated_one_after_another(
    deps: Deps, actor: Actor, wanted: list[tuple[int, list[int]]]
) -> tuple[int, DomainError] | None:
    """Which of ``wanted`` ``monitors.update`` refuses first, set one after another (and
    undone), and its error; None if none."""
    done = []
    try:
        for index, (monitor_id, ids) in enumerate(wanted):
            try:
                await monitors.update(deps, actor, monitor_id, {"depends_on": ids})
                done.append(monitor_id)
            except DomainError as exc:
                return index, exc
        return None
    finally:
        for monitor_id in done:
            await monitors.update(deps, actor, monitor_id, {"depends_on": []})


DEPENDENCIES = {
    "a chain": [(0, [1]), (1, [2]), (3, [0, 0, 2])],
    "a cycle closed by the last": [(0, [1]), (1, [2]), (2, [0])],
    "itself": [(0, [1]), (2, [2])],
    "no such monitor": [(0, [1]), (1, [-1])],
    "another account's": [(0, ["other"])],
    "too many": [(0, [1] * 21)],
    "not a monitor of the account": [(-1, [0])],
}


@pytest.mark.parametrize("plan", DEPENDENCIES.values(), ids=DEPENDENCIES.keys())
async def test_dependencies_set_together_follow_the_rules_of_one_update_after_another(
    deps: Deps, callers: Callers, db: asyncpg.Connection, plan: list[tuple[int, list[Any]]]
) -> None:
    owner = callers.owner
    made = await monitors.create_many(deps, owner, [{**WEB, "name": f"m{i}"} for i in range(4)])
    theirs = (await monitors.create(deps, callers.other, WEB)).monitor["id"]

    def monitor(ref: Any) -> int:
        return theirs if ref == "other" else 2**40 if ref == -1 else made[ref]

    wanted = [(monitor(m), [monitor(d) for d in ids]) for m, ids in plan]
    expected = await _updated_one_after_another(deps, owner, wanted)
    audited = await count(db, "audit_log")
    if expected is None:
        await monitor_bulk.set_dependencies(deps, owner, wanted)
        stored = {r["id"]: r["depends_on"] for r in await db.fetch("SELECT id, depends_on FROM monitors")}
        assert [stored[m] for m, _ in wanted] == [list(dict.fromkeys(ids)) for _, ids in wanted]
        assert await count(db, "audit_log") == audited + len(wanted)
        return
    with pytest.raises(ItemError) as caught:
        await monitor_bulk.set_dependencies(deps, owner, wanted)
    index, error = expected
    got = caught.value
    assert got.index == index
    assert (got.status, got.code, got.message, got.field) == (
        error.status,
        error.code,
        error.message,
        error.field,
    )
    assert await db.fetchval("SELECT count(*) FROM monitors WHERE depends_on <> '{}'") == 0
    assert await count(db, "audit_log") == audited
