"""Maintenance windows through the API: create, read, list, change, delete; what is refused
(422 naming the field); one account's windows out of another's reach; the windows listed with
a monitor and in /summary; and window time left out of uptime and downtime like paused time.

Monitors, incidents and hourly rollups are rows written straight into the database; windows
are made through the API, which checks their rules. ``T0`` is the database's ``now()``
rounded down to the hour, and uptime is asked for over whole hours before it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from typing import Any

import asyncpg
import pytest
from support import ApiClient, MonitorProcess, ensure_account, insert_monitor, parse_time, rfc3339

from monitor import rollups
from monitor.domain import keys as api_keys

pytestmark = pytest.mark.timeout(60)

H = timedelta(hours=1)
D = timedelta(days=1)
URL = "http://127.0.0.1:9/"


async def t0(db: asyncpg.Connection) -> datetime:
    return await db.fetchval("SELECT date_trunc('hour', now())")  # type: ignore[no-any-return]


def once(start: datetime, end: datetime, **fields: Any) -> dict[str, Any]:
    return {"name": "Deploy", "once": {"from": rfc3339(start), "to": rfc3339(end)}, **fields}


@pytest.fixture
async def other(api_server: MonitorProcess, db: asyncpg.Connection) -> AsyncIterator[ApiClient]:
    """A client of another account ("other")."""
    key = await api_keys.create_key(db, await ensure_account(db, "other"), "other")
    async with ApiClient(api_server.base_url, key=key.key) as client:
        yield client


# -- the resource ------------------------------------------------------------------------------------


async def test_a_window_is_created_read_listed_changed_and_deleted(
    api: ApiClient, db: asyncpg.Connection
) -> None:
    monitor = await insert_monitor(db, url=URL, tags=["db"])
    now = await t0(db)
    made = await api.post("/api/v1/maintenance", json=once(now + H, now + 3 * H, monitor_ids=[monitor["id"]]))
    assert made.status == 201, made
    window = made.json
    assert made.headers["Location"] == f"/api/v1/maintenance/{window['id']}"
    assert window["kind"] == "once" and window["recurring"] is None
    assert [parse_time(window["once"][k]) for k in ("from", "to")] == [now + H, now + 3 * H]
    assert (window["monitor_ids"], window["tags"], window["notify"]) == ([monitor["id"]], [], False)
    assert window["active_now"] is False and window["current"] is None
    assert window["next"] == {"from": rfc3339(now + H), "to": rfc3339(now + 3 * H)}

    read = await api.get(f"/api/v1/maintenance/{window['id']}")
    assert read.status == 200 and read.json == window
    listed = await api.get("/api/v1/maintenance", params={"limit": "1"})
    assert listed.json == {"items": [window], "next_cursor": None}

    weekly = {"rrule": "freq=weekly;byday=su;byhour=2", "duration_minutes": 90, "timezone": "Europe/Berlin",
              "starts_at": "2026-01-01T00:00"}  # fmt: skip
    changed = await api.patch(
        f"/api/v1/maintenance/{window['id']}",
        json={"name": "Sunday patching", "recurring": weekly, "tags": ["db"], "notify": True},
    )
    assert changed.status == 200, changed
    body = changed.json
    assert (body["name"], body["kind"], body["once"], body["notify"]) == (
        "Sunday patching",
        "rrule",
        None,
        True,
    )
    assert body["recurring"] == {"rrule": "FREQ=WEEKLY;BYDAY=SU;BYHOUR=2", "cron": None,
                                 "duration_minutes": 90, "timezone": "Europe/Berlin",
                                 "starts_at": "2026-01-01T00:00:00"}  # fmt: skip
    assert (body["monitor_ids"], body["tags"]) == ([monitor["id"]], ["db"])
    upcoming = body["next"] or body["current"]
    start = parse_time(upcoming["from"])
    assert start.weekday() == 6 and parse_time(upcoming["to"]) - start == timedelta(minutes=90)
    assert parse_time(body["updated_at"]) > parse_time(window["updated_at"])

    assert (await api.delete(f"/api/v1/maintenance/{window['id']}")).status == 204
    assert (await api.get(f"/api/v1/maintenance/{window['id']}")).status == 404
    assert (await api.delete(f"/api/v1/maintenance/{window['id']}")).status == 404


async def test_a_recurring_window_starts_today_by_default(api: ApiClient, db: asyncpg.Connection) -> None:
    monitor = await insert_monitor(db, url=URL)
    made = await api.post("/api/v1/maintenance", json={
        "name": "Nightly", "monitor_ids": [monitor["id"]],
        "recurring": {"cron": "0  3 * * *", "duration_minutes": 30, "timezone": "Asia/Tokyo"}})  # fmt: skip
    assert made.status == 201, made
    recurring = made.json["recurring"]
    assert (recurring["cron"], recurring["rrule"]) == ("0 3 * * *", None)
    today = (await db.fetchval("SELECT (now() AT TIME ZONE 'Asia/Tokyo')::date")).isoformat()
    assert recurring["starts_at"] == f"{today}T00:00:00"
    following = made.json["next"]
    assert parse_time(following["from"]).strftime("%H:%M") == "18:00"  # 03:00 in Tokyo


async def test_a_schedule_is_previewed_without_being_stored(api: ApiClient, db: asyncpg.Connection) -> None:
    tokyo = {"cron": "0 3 * * *", "duration_minutes": 30, "timezone": "Asia/Tokyo"}
    shown = await api.post("/api/v1/maintenance-preview", json={"recurring": tokyo, "count": 3})
    assert shown.status == 200, shown
    items = shown.json["items"]
    assert len(items) == 3 and all(i["local_from"].endswith("T03:00") for i in items)
    assert all(
        parse_time(i["from"]).strftime("%H:%M") == "18:00" and i["timezone"] == "Asia/Tokyo" for i in items
    )
    bad = await api.post(
        "/api/v1/maintenance-preview", json={"recurring": {"rrule": "FREQ=NOPE", "duration_minutes": 5}}
    )
    assert bad.status == 422 and bad.json["error"]["field"] == "recurring.rrule", bad
    extra = await api.post(
        "/api/v1/maintenance-preview",
        json={"name": "x", "once": {"from": "2030-01-01T00:00:00Z", "to": "2030-01-01T01:00:00Z"}},
    )
    assert extra.status == 422 and extra.json["error"]["field"] == "name", extra
    assert await db.fetchval("SELECT count(*) FROM maintenance_windows") == 0


async def test_a_change_is_announced_to_the_scheduler(api: ApiClient, db: asyncpg.Connection) -> None:
    monitor = await insert_monitor(db, url=URL)
    heard: asyncio.Queue[str] = asyncio.Queue()
    await db.add_listener("maintenance_changed", lambda *args: heard.put_nowait(args[3]))
    try:
        now = await t0(db)
        made = await api.post("/api/v1/maintenance", json=once(now, now + H, monitor_ids=[monitor["id"]]))
        assert await asyncio.wait_for(heard.get(), 5) == str(made.json["id"])
        # A deleted monitor leaves the windows that named it (and that change is announced too).
        await db.execute("DELETE FROM monitors WHERE id = $1", monitor["id"])
        assert await asyncio.wait_for(heard.get(), 5) == str(made.json["id"])
        read = await api.get(f"/api/v1/maintenance/{made.json['id']}")
        assert read.json["monitor_ids"] == []
    finally:
        await db.remove_listener("maintenance_changed", lambda *args: None)


DAY = {"from": "2026-05-01T00:00:00Z", "to": "2026-05-02T00:00:00Z"}


def rule(**fields: Any) -> dict[str, Any]:
    return {"recurring": {"duration_minutes": 60, **fields}}


REFUSED: list[tuple[str, dict[str, Any], str]] = [
    # name, body (monitor_ids filled in), the field named
    ("bad rrule", rule(rrule="FREQ=WEEKLY;BYDAY=XX"), "recurring.rrule"),
    ("unknown rrule part", rule(rrule="FREQ=DAILY;FOO=1"), "recurring.rrule"),
    ("rrule never occurs", rule(rrule="FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30"), "recurring.rrule"),
    ("cron never occurs", rule(cron="0 0 30 2 *"), "recurring.cron"),
    ("bad cron", rule(cron="0 2 * *"), "recurring.cron"),
    ("rrule and cron", rule(rrule="FREQ=DAILY", cron="0 2 * * *"), "recurring.rrule"),
    ("neither rrule nor cron", rule(), "recurring.rrule"),
    ("unknown zone", rule(rrule="FREQ=DAILY", timezone="Mars/Base"), "recurring.timezone"),
    ("no duration", {"recurring": {"rrule": "FREQ=DAILY"}}, "recurring.duration_minutes"),
    ("zero duration", rule(rrule="FREQ=DAILY", duration_minutes=0), "recurring.duration_minutes"),
    ("32 days", rule(rrule="FREQ=MONTHLY", duration_minutes=32 * 1440), "recurring.duration_minutes"),
    ("bad starts_at", rule(rrule="FREQ=DAILY", starts_at="tomorrow"), "recurring.starts_at"),
    ("to before from", {"once": {"from": DAY["to"], "to": DAY["from"]}}, "once.to"),
    ("to equals from", {"once": {"from": DAY["from"], "to": DAY["from"]}}, "once.to"),
    ("from without a zone", {"once": {**DAY, "from": "2026-05-01T00:00:00"}}, "once.from"),
    ("from as a number", {"once": {**DAY, "from": 1777600000}}, "once.from"),
    ("both schedules", {"once": DAY, **rule(rrule="FREQ=DAILY")}, "once"),
    ("no schedule", {}, "once"),
    ("unknown field", {"once": DAY, "color": "red"}, "color"),
    ("no monitors", {"once": DAY, "monitor_ids": []}, "monitor_ids"),
    ("bad tag", {"once": DAY, "tags": ["a b"]}, "tags.0"),
]


@pytest.mark.parametrize(("body", "field"), [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
async def test_a_bad_window_is_refused_naming_the_field(
    api: ApiClient, db: asyncpg.Connection, body: dict[str, Any], field: str
) -> None:
    monitor = await insert_monitor(db, url=URL)
    response = await api.post(
        "/api/v1/maintenance", json={"name": "w", "monitor_ids": [monitor["id"]], **body}
    )
    assert response.status == 422, response
    error = response.json["error"]
    assert (error["code"], error["field"]) == ("invalid", field), error
    assert error["message"].startswith(f"{field}: "), error
    assert await db.fetchval("SELECT count(*) FROM maintenance_windows") == 0


async def test_a_patch_is_checked_too(api: ApiClient, db: asyncpg.Connection) -> None:
    monitor = await insert_monitor(db, url=URL)
    now = await t0(db)
    made = (await api.post("/api/v1/maintenance", json=once(now, now + H, monitor_ids=[monitor["id"]]))).json
    path = f"/api/v1/maintenance/{made['id']}"
    for body, field in [
        ({"name": None}, "name"),
        ({"recurring": {"rrule": "FREQ=DAILY;BYHOUR=24", "duration_minutes": 5}}, "recurring.rrule"),
        ({"once": {"from": rfc3339(now), "to": rfc3339(now)}}, "once.to"),
        ({"monitor_ids": [], "tags": []}, "monitor_ids"),
        ({"monitor_ids": [monitor["id"] + 1000]}, "monitor_ids"),
    ]:
        response = await api.patch(path, json=body)
        assert response.status == 422 and response.json["error"]["field"] == field, (body, response)
    assert (await api.get(path)).json == made
    # Dropping the ids is fine while a tag remains.
    assert (await api.patch(path, json={"monitor_ids": [], "tags": ["db"]})).status == 200


# -- accounts ------------------------------------------------------------------------------------------


async def test_another_accounts_windows_and_monitors_are_out_of_reach(
    api: ApiClient, other: ApiClient, db: asyncpg.Connection
) -> None:
    mine = await insert_monitor(db, url=URL, tags=["db"])
    theirs = await insert_monitor(db, url=URL, tags=["db"], account_id=await ensure_account(db, "other"))
    now = await t0(db)
    window = (await api.post("/api/v1/maintenance", json=once(now, now + 2 * H, tags=["db"]))).json
    path = f"/api/v1/maintenance/{window['id']}"
    for response in (
        await other.get(path),
        await other.patch(path, json={"name": "taken"}),
        await other.delete(path),
    ):
        assert response.status == 404, response
    assert (await other.get("/api/v1/maintenance")).json["items"] == []
    refused = await other.post("/api/v1/maintenance", json=once(now, now + H, monitor_ids=[mine["id"]]))
    assert refused.status == 422 and refused.json["error"]["field"] == "monitor_ids"
    assert refused.json["error"]["message"] == f"monitor_ids: no monitor {mine['id']}"
    # My "db" window is mine: their "db" monitor is not in it.
    assert [w["id"] for w in (await api.monitor(mine["id"]))["maintenance"]] == [window["id"]]
    assert (await other.get(f"/api/v1/monitors/{theirs['id']}")).json["maintenance"] == []
    assert (await other.get("/api/v1/summary")).json["maintenance"] == {"active": [], "upcoming": []}
    assert (await api.get(path)).json["name"] == "Deploy"


# -- listed with the monitor and in /summary ---------------------------------------------------------


async def test_windows_with_the_monitor_and_in_the_summary(api: ApiClient, db: asyncpg.Connection) -> None:
    monitor = await insert_monitor(db, url=URL, tags=["db", "eu"])
    unrelated = await insert_monitor(db, url=URL)
    now = await db.fetchval("SELECT now()")
    by_id = (
        await api.post("/api/v1/maintenance", json=once(now - H, now + H, monitor_ids=[monitor["id"]]))
    ).json
    by_tag = (
        await api.post("/api/v1/maintenance", json=once(now + D, now + D + H, name="Later", tags=["eu"]))
    ).json
    elsewhere_body = once(now + H, now + 2 * H, name="Elsewhere", monitor_ids=[unrelated["id"]])
    elsewhere = (await api.post("/api/v1/maintenance", json=elsewhere_body)).json
    past = (
        await api.post("/api/v1/maintenance", json=once(now - 2 * D, now - D, name="Past", tags=["db"]))
    ).json

    listed = (await api.monitor(monitor["id"]))["maintenance"]
    assert [w["id"] for w in listed] == [by_id["id"], by_tag["id"], past["id"]]
    assert listed[0] == {"id": by_id["id"], "name": "Deploy", "active_now": True, "current": by_id["once"],
                         "next": None}  # fmt: skip
    assert listed[1] == {"id": by_tag["id"], "name": "Later", "active_now": False, "current": None,
                         "next": by_tag["once"]}  # fmt: skip
    assert (listed[2]["active_now"], listed[2]["next"]) == (False, None)
    # The answers about one monitor carry them (a new one is in its tags' windows); lists do not.
    created = await api.create_monitor(url=URL, tags=["eu"])
    assert [w["id"] for w in created["maintenance"]] == [by_tag["id"]]
    renamed = (await api.patch(f"/api/v1/monitors/{created['id']}", json={"name": "renamed"})).json
    assert renamed["maintenance"] == created["maintenance"]
    assert "maintenance" not in (await api.get("/api/v1/monitors")).json["items"][0]

    summary = (await api.get("/api/v1/summary")).json["maintenance"]
    assert [w["id"] for w in summary["active"]] == [by_id["id"]]
    assert summary["active"][0] == {"id": by_id["id"], "name": "Deploy", **by_id["once"],
                                    "monitor_ids": [monitor["id"]], "tags": []}  # fmt: skip
    assert [w["id"] for w in summary["upcoming"]] == [elsewhere["id"], by_tag["id"]]  # soonest first


# -- uptime ----------------------------------------------------------------------------------------------


async def write_hours(db: asyncpg.Connection, monitor_id: int, start: datetime, hours: int) -> None:
    """One check an hour, as the scheduler's hourly rollups hold them."""
    await db.executemany(
        """INSERT INTO checks_hourly (monitor_id, hour, checks, checks_up, latency_n, latency_sum,
                                      latency_max, latency_hist) VALUES ($1, $2, 1, 1, 1, 10, 10, $3)""",
        [(monitor_id, start + i * H, [1] + [0] * (rollups.N_BUCKETS - 1)) for i in range(hours)],
    )


WINDOWS = [
    # name, the window's schedule and targets from (its start, the monitor's id)
    ("one-off by id",
     lambda t, m: {"once": {"from": rfc3339(t), "to": rfc3339(t + 2 * H)}, "monitor_ids": [m]}),
    ("daily RRULE by tag", lambda t, m: {"tags": ["db"], "recurring": {
        "rrule": f"FREQ=DAILY;BYHOUR={t.hour};BYMINUTE=0", "duration_minutes": 120, "timezone": "UTC",
        "starts_at": (t - 3 * D).strftime("%Y-%m-%dT00:00")}}),
    ("cron in a zone, by id", lambda t, m: {"monitor_ids": [m], "recurring": {
        "cron": f"0 {(t.hour + 9) % 24} * * *", "duration_minutes": 120, "timezone": "Asia/Tokyo",
        "starts_at": (t - 3 * D).strftime("%Y-%m-%dT00:00Z")}}),
]  # fmt: skip


@pytest.mark.parametrize("schedule", [w[1] for w in WINDOWS], ids=[w[0] for w in WINDOWS])
async def test_window_time_is_left_out_of_uptime_and_downtime(
    api: ApiClient, db: asyncpg.Connection, schedule: Any
) -> None:
    """Ten observed hours, an incident from T0-6h to T0-4h, a window from T0-7h to T0-5h:
    without the window, 2 h down of 10 (80 %); with it, 1 h down of 8 (87.5 %)."""
    now = await t0(db)
    start = now - 10 * H
    monitor = await insert_monitor(db, url=URL, tags=["db"], created_at=start - D)
    await write_hours(db, monitor["id"], start, 10)
    await db.execute(
        """INSERT INTO incidents (monitor_id, started_at, ended_at, status_code, error)
           VALUES ($1, $2, $3, 500, 'HTTP 500')""",
        monitor["id"],
        now - 6 * H,
        now - 4 * H,
    )
    path = f"/api/v1/monitors/{monitor['id']}/uptime"
    query = {"from": rfc3339(start), "to": rfc3339(now)}
    before = (await api.get(path, params=query)).json
    assert (before["uptime_percent"], before["downtime_seconds"], before["checks"]) == (80.0, 7200.0, 10)

    made = await api.post("/api/v1/maintenance", json={"name": "w", **schedule(now - 7 * H, monitor["id"])})
    assert made.status == 201, made
    after = (await api.get(path, params=query)).json
    assert (after["uptime_percent"], after["downtime_seconds"], after["checks"]) == (87.5, 3600.0, 10)
    # The monitor list's uptime reads the same way.
    listed = (await api.get("/api/v1/monitors", params={"include": "uptime_24h"})).json["items"][0]
    assert listed["uptime_24h"]["downtime_seconds"] == 3600.0

    # Another account's window with the same tag changes nothing here.
    other = await ensure_account(db, "other")
    await db.execute(
        """INSERT INTO maintenance_windows (account_id, name, kind, starts_at, ends_at, tags)
           VALUES ($1, 'theirs', 'once', $2, $3, '{db}')""",
        other,
        start,
        now,
    )
    assert (await api.get(path, params=query)).json["downtime_seconds"] == 3600.0
