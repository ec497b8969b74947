"""Locations and quorum through a live ``monitor api`` (issue 16, item 3): created, changed and
refused naming the field; each location's view (live or not, from ``scheduler_members``; its
status, from ``location_state``); uptime per location against figures worked out by hand from
rows written here (``location_incidents``, ``monitor_pauses``, ``checks`` with a location).

Times hang off ``T0``, the database's ``now()`` when the fixture is written; the ranges asked
for end before it, so every figure is exact whatever the api's own ``now``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from typing import Any

import asyncpg
import pytest
from support import ApiClient, parse_time, rfc3339

pytestmark = pytest.mark.timeout(60)

M = timedelta(minutes=1)
H = timedelta(hours=1)
PLACES = ["eu", "us", "ap"]
SITE = {"url": "https://example.com/", "interval_seconds": 60}


@pytest.fixture
async def members(db: asyncpg.Connection) -> AsyncIterator[asyncpg.Connection]:
    """The scheduler members of this file's locations: none at the start, none left after."""
    await db.execute("DELETE FROM scheduler_members WHERE location = ANY($1::text[])", PLACES)
    try:
        yield db
    finally:
        await db.execute("DELETE FROM scheduler_members WHERE location = ANY($1::text[])", PLACES)


async def add_member(db: asyncpg.Connection, name: str, location: str, lease_left: timedelta) -> None:
    await db.execute(
        """INSERT INTO scheduler_members (name, location, host, pid, lease_until)
           VALUES ($1, $2, 'test-host', 4242, now() + $3::interval)""",
        name,
        location,
        lease_left,
    )


async def test_created_read_listed_and_changed(api: ApiClient) -> None:
    plain = await api.create_monitor(**SITE)
    assert (plain["locations"], plain["quorum"]) == ([], None) and "location_status" not in plain
    made = await api.create_monitor(**SITE, name="two", locations=["eu", "us"], quorum=2)
    assert (made["locations"], made["quorum"]) == (["eu", "us"], 2)
    assert [s["location"] for s in made["location_status"]] == ["eu", "us"]
    path = f"/api/v1/monitors/{made['id']}"
    listed = {m["id"]: m for m in (await api.get("/api/v1/monitors")).json["items"]}
    assert listed[made["id"]]["locations"] == ["eu", "us"] and "location_status" not in listed[made["id"]]

    # One location left under a stored quorum of 2: refused, naming quorum and saying what to do.
    refused = await api.patch(path, json={"locations": ["eu"]})
    assert (refused.status, refused.json["error"]["field"]) == (422, "quorum"), refused
    assert "quorum of 2 is more than the 1 location given" in refused.json["error"]["message"]
    changed = await api.patch(path, json={"locations": ["us", "eu", "ap"], "quorum": None})
    assert changed.status == 200, changed
    assert (changed.json["locations"], changed.json["quorum"]) == (["us", "eu", "ap"], None)
    assert [s["location"] for s in changed.json["location_status"]] == ["us", "eu", "ap"]
    too_many = await api.patch(path, json={"quorum": 4})
    assert (too_many.status, too_many.json["error"]["field"]) == (422, "quorum"), too_many
    assert "4 is more than the monitor's 3 locations" in too_many.json["error"]["message"]
    assert (await api.patch(path, json={"quorum": 3})).json["quorum"] == 3
    emptied = await api.patch(path, json={"locations": []})
    assert (emptied.status, emptied.json["error"]["field"]) == (422, "quorum"), emptied
    back = await api.patch(path, json={"locations": [], "quorum": None})
    assert (back.status, back.json["locations"], back.json["quorum"]) == (200, [], None)
    assert "location_status" not in back.json
    lone = await api.patch(f"/api/v1/monitors/{plain['id']}", json={"quorum": 1})
    assert (lone.status, lone.json["error"]["field"]) == (422, "quorum"), lone


# (case, body, field)
REFUSED: list[tuple[str, dict[str, Any], str]] = [
    ("a quorum above the locations", {**SITE, "locations": ["eu", "us"], "quorum": 3}, "quorum"),
    ("a quorum without locations", {**SITE, "quorum": 1}, "quorum"),
    ("a location repeated", {**SITE, "locations": ["eu", "eu"]}, "locations"),
    ("a bad location", {**SITE, "locations": ["EU West"]}, "locations.0"),
    ("seventeen locations", {**SITE, "locations": [f"l{i}" for i in range(17)]}, "locations"),
    ("a heartbeat with locations", {"type": "heartbeat", "cron": "0 3 * * *", "locations": ["eu"]},
     "locations"),
]  # fmt: skip


@pytest.mark.parametrize(("body", "field"), [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
async def test_refused_naming_the_field(api: ApiClient, body: dict[str, Any], field: str) -> None:
    response = await api.post("/api/v1/monitors", json={"name": "x", **body})
    assert (response.status, response.json["error"]["field"]) == (422, field), response
    assert response.json["error"]["message"].startswith(f"{field}: ")


async def test_a_heartbeat_patch_with_locations_is_refused(api: ApiClient) -> None:
    beat = await api.create_monitor(type="heartbeat", cron="0 3 * * *")
    assert beat["locations"] == []
    response = await api.patch(f"/api/v1/monitors/{beat['id']}", json={"locations": ["eu"]})
    assert (response.status, response.json["error"]["field"]) == (422, "locations"), response


async def test_each_location_shows_whether_it_is_live_and_what_it_saw(
    api: ApiClient, members: asyncpg.Connection
) -> None:
    db = members
    made = await api.create_monitor(**SITE, locations=["us", "eu", "ap"])
    await add_member(db, "test-eu-1", "eu", M)  # live
    await add_member(db, "test-us-1", "us", -M)  # its lease lapsed a minute ago
    # "ap": no member at all.
    t0 = await db.fetchval("SELECT now()")
    await db.executemany(
        """INSERT INTO location_state
               (monitor_id, location, status, changed_at, reason, last_check_at, last_ok)
           VALUES ($1, $2, $3, $4, $5, $6, $7)""",
        [
            (made["id"], "eu", "down", t0 - 5 * M, "connection refused", t0 - 10 * M / 60, False),
            (made["id"], "us", "up", t0 - H, None, t0 - 2 * M, True),
        ],
    )
    shown = (await api.monitor(made["id"]))["location_status"]
    assert shown == [
        {"location": "us", "live": False, "status": "up", "since": rfc3339(t0 - H), "reason": None,
         "last_check_at": rfc3339(t0 - 2 * M)},
        {"location": "eu", "live": True, "status": "down", "since": rfc3339(t0 - 5 * M),
         "reason": "connection refused", "last_check_at": rfc3339(t0 - 10 * M / 60)},
        {"location": "ap", "live": False, "status": "unknown", "since": None, "reason": None,
         "last_check_at": None},
    ]  # fmt: skip
    await add_member(db, "test-ap-1", "ap", M)
    assert [s["live"] for s in (await api.monitor(made["id"]))["location_status"]] == [False, True, True]


async def located_history(db: asyncpg.Connection, monitor_id: int) -> datetime:
    """The fixture of the uptime tests; returns T0.

    Monitor created at T0-10h, locations eu and us. The range asked for is [T0-4h, T0-1h):
    10,800 s, of which 900 s paused ([T0-2h, T0-1h45m)): 9,900 s observed.
    eu's outages: [T0-5h, T0-3h50m) (600 s of it in the range) and [T0-3h, T0-2h30m) (1,800 s):
    2,400 s down, 100 * (1 - 2400/9900) = 75.7575...%.
    us's: one still open since T0-1h30m: 1,800 s in the range, 100 * (1 - 1800/9900) = 81.8181...%.
    ap's outage (ap is not among the monitor's locations) counts nowhere.
    Checks in the range: eu 6 (4 up), us 3 (3 up); outside it, or at its end (exclusive), or of
    another location or none, they count nowhere.
    """
    # Half past an hour (within 30 minutes of now): the range's first hour is then a partial one,
    # whose checks are counted from the raw rows (this fixture writes no hourly rollups), so the
    # monitor's overall figure has checks to stand on whatever the time of day.
    t0: datetime = await db.fetchval("SELECT date_trunc('hour', now()) + interval '30 minutes'")
    await db.execute("UPDATE monitors SET created_at = $2 WHERE id = $1", monitor_id, t0 - 10 * H)
    await db.execute(
        "INSERT INTO monitor_pauses (monitor_id, started_at, ended_at) VALUES ($1, $2, $3)",
        monitor_id, t0 - 2 * H, t0 - 105 * M,
    )  # fmt: skip
    await db.executemany(
        """INSERT INTO location_incidents (monitor_id, location, started_at, ended_at, error)
           VALUES ($1, $2, $3, $4, 'x')""",
        [
            (monitor_id, "eu", t0 - 5 * H, t0 - 230 * M),
            (monitor_id, "eu", t0 - 3 * H, t0 - 150 * M),
            (monitor_id, "us", t0 - 90 * M, None),
            (monitor_id, "ap", t0 - 4 * H, t0 - 2 * H),
        ],
    )
    s = timedelta(seconds=1)
    rows = [
        *[("eu", t0 - 230 * M + i * 20 * M, i not in (1, 4)) for i in range(6)],  # 6 in range, 4 up
        ("eu", t0 - 5 * H, False),  # before the range
        ("eu", t0 - H, True),  # at its end
        *[("us", t0 - 200 * M + i * 30 * M + s, True) for i in range(3)],  # 3 in range, all up
        ("us", t0 - 30 * M + s, False),  # after the range
        ("ap", t0 - 3 * H + 2 * s, False),
        (None, t0 - 3 * H + 3 * s, False),
    ]
    await db.executemany(
        "INSERT INTO checks (time, monitor_id, ok, checked_from, error) VALUES ($1, $2, $3, $4, $5)",
        [(at, monitor_id, ok, where, None if ok else "refused") for where, at, ok in rows],
    )
    return t0


async def test_uptime_per_location(api: ApiClient, db: asyncpg.Connection) -> None:
    made = await api.create_monitor(**SITE, locations=["eu", "us"])
    t0 = await located_history(db, made["id"])
    params = {"from": rfc3339(t0 - 4 * H), "to": rfc3339(t0 - H)}
    answer = (await api.get(f"/api/v1/monitors/{made['id']}/uptime", params=params)).json
    assert answer["locations"] == {
        "eu": {"uptime_percent": pytest.approx(100 * (1 - 2400 / 9900)),
               "downtime_seconds": pytest.approx(2400), "checks": 6, "checks_up": 4},
        "us": {"uptime_percent": pytest.approx(100 * (1 - 1800 / 9900)),
               "downtime_seconds": pytest.approx(1800), "checks": 3, "checks_up": 3},
    }  # fmt: skip
    # Overall: the quorum's verdict (no incident of the monitor's own here).
    assert answer["downtime_seconds"] == 0.0

    # Several windows at once: each with its locations. Over the last 24 h eu was down
    # 4,200 + 1,800 s (both closed: exact) out of the monitor's life since T0-10h less 900 s paused.
    windows = (await api.get(f"/api/v1/monitors/{made['id']}/uptime", params={"window": "24h,7d"})).json
    for window in ("24h", "7d"):
        shown = windows["windows"][window]
        observed = (parse_time(shown["to"]) - (t0 - 10 * H)).total_seconds() - 900
        eu = shown["locations"]["eu"]
        assert eu["downtime_seconds"] == pytest.approx(6000)
        assert eu["uptime_percent"] == pytest.approx(100 * (1 - 6000 / observed))
        assert (eu["checks"], eu["checks_up"]) == (8, 5)
        assert (shown["locations"]["us"]["checks"], shown["locations"]["us"]["checks_up"]) == (4, 3)


async def test_a_location_that_checked_nothing_has_no_figure(api: ApiClient, db: asyncpg.Connection) -> None:
    made = await api.create_monitor(**SITE, locations=["eu", "us"])
    t0 = await located_history(db, made["id"])
    await db.execute("UPDATE monitors SET locations = '{eu,us,ap2}' WHERE id = $1", made["id"])
    params = {"from": rfc3339(t0 - 4 * H), "to": rfc3339(t0 - H)}
    located = (await api.get(f"/api/v1/monitors/{made['id']}/uptime", params=params)).json["locations"]
    assert located["ap2"] == {"uptime_percent": None, "downtime_seconds": None, "checks": 0, "checks_up": 0}
    assert list(located) == ["eu", "us", "ap2"]


async def test_uptime_without_locations_has_no_location_figures(api: ApiClient) -> None:
    plain = await api.create_monitor(**SITE)
    answer = (await api.get(f"/api/v1/monitors/{plain['id']}/uptime")).json
    assert "locations" not in answer


async def test_checks_filtered_by_location(api: ApiClient, db: asyncpg.Connection) -> None:
    made = await api.create_monitor(**SITE, locations=["eu", "us"])
    await located_history(db, made["id"])
    path = f"/api/v1/monitors/{made['id']}/checks"
    every = (await api.get(path)).json["items"]
    assert len(every) == 14
    for place, count in (("eu", 8), ("us", 4), ("ap", 1), ("nowhere", 0)):
        items = (await api.get(path, params={"checked_from": place})).json["items"]
        assert len(items) == count and {c["checked_from"] for c in items} <= {place}
    bad = await api.get(path, params={"checked_from": "Not A Place"})
    assert (bad.status, bad.json["error"]["field"]) == (400, "checked_from"), bad


async def test_a_location_taken_off_the_list_ends_its_outage_and_drops_its_view(
    api: ApiClient, db: asyncpg.Connection
) -> None:
    made = await api.create_monitor(**SITE, locations=["eu", "us"], quorum=1)
    t0 = await db.fetchval("SELECT now()")
    await db.execute(
        """INSERT INTO location_state (monitor_id, location, status, changed_at, last_check_at, last_ok)
           VALUES ($1, 'us', 'down', $2, $2, false), ($1, 'eu', 'up', $2, $2, true)""",
        made["id"],
        t0 - H,
    )
    await db.execute(
        "INSERT INTO location_incidents (monitor_id, location, started_at) VALUES ($1, 'us', $2)",
        made["id"],
        t0 - H,
    )
    changed = await api.patch(f"/api/v1/monitors/{made['id']}", json={"locations": ["eu"]})
    assert changed.status == 200, changed
    assert [s["location"] for s in changed.json["location_status"]] == ["eu"]
    # us's outage ended when it was taken off (not counted as down for ever), its view is gone.
    ended = await db.fetchval(
        "SELECT ended_at FROM location_incidents WHERE monitor_id = $1 AND location = 'us'", made["id"]
    )
    assert ended is not None and ended >= t0
    assert await db.fetchval(
        "SELECT array_agg(location) FROM location_state WHERE monitor_id = $1", made["id"]
    ) == ["eu"]
