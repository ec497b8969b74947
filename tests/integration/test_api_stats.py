"""History and statistics through the API, against figures worked out here by hand.

The fixtures are rows written straight into the database: monitors, their checks, the hourly
rollups of those checks (built here, with this file's own histogram code: every check counted,
the latencies of the successful ones only), incidents, pauses and state rows. Checks older than
eight days exist only as rollups, as after raw-check retention. Every expected figure below is
plain arithmetic on the fixture, written out in the comments; the only thing taken from
``monitor/`` is the bucket layout, which is the storage contract.

Times hang off ``T0``, the database's ``now()`` when the fixture is written; the API's ``now``
comes a little later, and every uptime answer says which it used (``to``), so figures that run
with the clock (an ongoing incident, a window clipped to a young monitor) are exact too.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import asyncpg
import pytest
from support import ApiClient, parse_time, rfc3339

from monitor import rollups

pytestmark = pytest.mark.timeout(60)

S = timedelta(seconds=1)
M = timedelta(minutes=1)
H = timedelta(hours=1)
D = timedelta(days=1)
DAY_S = 86400.0

# Upper bounds (ms) of the rollup histogram's buckets; one more bucket holds everything above.
# A bucket takes the latencies above the previous bound up to and including its own.
BOUNDS_MS = (5, 10, 25, 50, 75, 100, 150, 200, 300, 500, 750, 1000, 1500, 2000, 3000, 5000, 10000, 30000)
# Raw checks older than this are gone (retention); only their rollups remain.
RAW_KEPT = 8 * D


def test_histogram_layout_is_the_stored_one() -> None:
    assert tuple(rollups.BUCKETS_MS) == BOUNDS_MS


@dataclass(frozen=True)
class Check:
    at: datetime
    ok: bool
    latency_ms: float | None  # None: no answer (a timeout)
    status_code: int | None = None


def ok(at: datetime, latency_ms: float) -> Check:
    return Check(at, True, latency_ms, 200)


def fail(at: datetime, latency_ms: float | None = None) -> Check:
    return Check(at, False, latency_ms, 500 if latency_ms is not None else None)


def histogram(latencies: list[float]) -> list[int]:
    counts = [0] * (len(BOUNDS_MS) + 1)
    for ms in latencies:
        index = next((i for i, bound in enumerate(BOUNDS_MS) if ms <= bound), len(BOUNDS_MS))
        counts[index] += 1
    return counts


async def write_checks(db: asyncpg.Connection, monitor_id: int, checks: list[Check], t0: datetime) -> None:
    """The raw rows (those younger than RAW_KEPT) and one rollup row per hour of all of them."""
    await db.executemany(
        """INSERT INTO checks (time, monitor_id, ok, status_code, latency_ms, error)
           VALUES ($1, $2, $3, $4, $5, $6)""",
        [
            (c.at, monitor_id, c.ok, c.status_code, c.latency_ms, None if c.ok else "down")
            for c in checks
            if c.at > t0 - RAW_KEPT
        ],
    )
    hours: dict[datetime, list[Check]] = {}
    for c in checks:
        hours.setdefault(c.at.replace(minute=0, second=0, microsecond=0), []).append(c)
    rows = []
    for hour, group in hours.items():
        # A failed check's duration is not a response time.
        latencies = [c.latency_ms for c in group if c.ok and c.latency_ms is not None]
        rows.append(
            (
                monitor_id, hour, len(group), sum(c.ok for c in group), len(latencies),
                float(sum(latencies)), max(latencies, default=None), histogram(latencies),
            )
        )  # fmt: skip
    await db.executemany(
        """INSERT INTO checks_hourly (monitor_id, hour, checks, checks_up, latency_n, latency_sum,
                                      latency_max, latency_hist) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)""",
        rows,
    )
    # The scheduler keeps the days beside the hours; so does this fixture.
    await db.execute(rollups.DAILY_FROM_HOURLY, [monitor_id])


async def add_incident(
    db: asyncpg.Connection, monitor_id: int, started: datetime, ended: datetime | None
) -> int:
    return int(
        await db.fetchval(
            """INSERT INTO incidents (monitor_id, started_at, ended_at, status_code, error)
               VALUES ($1, $2, $3, 500, 'HTTP 500') RETURNING id""",
            monitor_id,
            started,
            ended,
        )
    )


async def set_state(db: asyncpg.Connection, monitor_id: int, status: str, since: datetime) -> None:
    await db.execute(
        """UPDATE monitor_state SET status = $2, changed_at = $3, last_check_at = $3,
                  last_ok = $2 = 'up', last_error = CASE WHEN $2 = 'down' THEN 'HTTP 500' END,
                  last_status_code = CASE WHEN $2 = 'down' THEN 500 ELSE 200 END
           WHERE monitor_id = $1""",
        monitor_id,
        status,
        since,
    )


@dataclass(frozen=True)
class Fleet:
    t0: datetime
    day1: datetime  # two whole UTC days in the past with hand-picked latencies
    day2: datetime
    ids: dict[str, int]
    incidents: dict[str, int]


@pytest.fixture
async def fleet(db: asyncpg.Connection, monitor_factory: Any) -> Fleet:
    """Five monitors of the test account:

    ``a``       created 40 days ago; down since T0-2h (ongoing incident); paused T0-3d..T0-2d, and an
                incident T0-3d-1h..T0-3d+1h of which only the first hour is outside that pause; an
                incident T0-10d..T0-10d+30m; latencies chosen per hour on day1 and day2.
    ``b``       created 40 days ago, never checked: every figure unknown (null).
    ``c``       created T0-5h, up; one incident T0-4h..T0-3h30m: windows are clipped to its life;
                checked last at T0, in the current hour.
    ``d``       paused since T0-1d (its stale state says down), two checks before that.
    ``f``       created T0-1h, down since T0-10m (ongoing incident).
    """
    t0: datetime = await db.fetchval("SELECT now()")
    midnight = t0.replace(hour=0, minute=0, second=0, microsecond=0)
    # Old enough to keep clear of the pause and incidents of ``a`` (T0-3d-1h is after day2's end),
    # young enough to keep their raw checks and to fall inside the 7-day window.
    day1, day2 = midnight - 6 * D, midnight - 5 * D
    old = t0 - 40 * D
    ids: dict[str, int] = {}
    for name, created, paused in [
        ("a", old, False), ("b", old, False), ("c", t0 - 5 * H, False), ("d", old, True),
        ("f", t0 - H, False),
    ]:  # fmt: skip
        ids[name] = (await monitor_factory(url=f"http://{name}.example/", name=name, created_at=created,
                                           paused=paused))["id"]  # fmt: skip

    eleven = day1 + 11 * H
    a_checks = [
        # day1 10:00: 30, 40, 60, 70 ms
        ok(day1 + 10 * H, 30), ok(day1 + 10 * H + 10 * M, 40),
        ok(day1 + 10 * H + 20 * M, 60), ok(day1 + 10 * H + 30 * M, 70),
        # day1 11:00: eight up (110..140 ms), a 500 after 740 ms, a timeout
        *(ok(eleven + i * 5 * M, ms) for i, ms in enumerate([110, 110, 120, 120, 130, 130, 140, 140])),
        fail(eleven + 40 * M, 740), fail(eleven + 45 * M),
        # day1 12:00: nothing; 13:00: 3 and 8 ms
        ok(day1 + 13 * H, 3), ok(day1 + 13 * H + 30 * M, 8),
        # day2: 200 and 250 ms in the 08:00 hour, a timeout at 20:15
        ok(day2 + 8 * H + 10 * M, 200), ok(day2 + 8 * H + 40 * M, 250), fail(day2 + 20 * H + 15 * M),
        # the last 24 hours: two up, then the failures of the ongoing incident
        ok(t0 - 20 * H, 50), ok(t0 - 6 * H, 55),
        fail(t0 - 2 * H, 12), fail(t0 - 2 * H + M, 11), fail(t0 - 30 * M),
        # the incident that runs into the pause
        fail(t0 - 3 * D - H, 20), fail(t0 - 3 * D - 50 * M, 20),
        # rollups only (older than RAW_KEPT): the incident ten days ago, and a busy hour 20 days ago
        fail(t0 - 10 * D, 900), ok(t0 - 10 * D + 30 * M, 90),
        *(ok(t0.replace(minute=0, second=0, microsecond=0) - 20 * D + i * 5 * M, 100) for i in range(12)),
    ]  # fmt: skip
    await write_checks(db, ids["a"], a_checks, t0)
    incidents = {
        "a_old": await add_incident(db, ids["a"], t0 - 10 * D, t0 - 10 * D + 30 * M),
        "a_paused": await add_incident(db, ids["a"], t0 - 3 * D - H, t0 - 3 * D + H),
        "a_now": await add_incident(db, ids["a"], t0 - 2 * H, None),
    }
    await db.execute(
        "INSERT INTO monitor_pauses (monitor_id, started_at, ended_at) VALUES ($1, $2, $3)",
        ids["a"],
        t0 - 3 * D,
        t0 - 2 * D,
    )
    await set_state(db, ids["a"], "down", t0 - 2 * H)

    await write_checks(
        db,
        ids["c"],
        [ok(t0 - 4 * H - 30 * M, 20), fail(t0 - 4 * H, 30), fail(t0 - 3 * H - 50 * M, 30),
         ok(t0 - 3 * H - 30 * M, 20), ok(t0 - H, 20), ok(t0, 20)],
        t0,
    )  # fmt: skip
    incidents["c"] = await add_incident(db, ids["c"], t0 - 4 * H, t0 - 3 * H - 30 * M)
    await set_state(db, ids["c"], "up", t0 - 3 * H - 30 * M)

    await write_checks(db, ids["d"], [ok(t0 - 2 * D, 80), ok(t0 - D - H, 80)], t0)
    await db.execute("INSERT INTO monitor_pauses (monitor_id, started_at) VALUES ($1, $2)", ids["d"], t0 - D)
    await set_state(db, ids["d"], "down", t0 - 3 * D)

    await write_checks(
        db, ids["f"], [ok(t0 - 50 * M, 40), fail(t0 - 10 * M, 35), fail(t0 - 9 * M, 36), fail(t0 - M, 33)], t0
    )
    incidents["f"] = await add_incident(db, ids["f"], t0 - 10 * M, None)
    await set_state(db, ids["f"], "down", t0 - 10 * M)
    return Fleet(t0, day1, day2, ids, incidents)


# -- uptime ------------------------------------------------------------------------------------

WINDOWS = {"24h": DAY_S, "7d": 7 * DAY_S, "30d": 30 * DAY_S}


def expected_uptime(name: str, window: str, elapsed: float) -> dict[str, Any]:
    """What ``/uptime`` must say for monitor ``name`` when the API's now is T0 + ``elapsed`` s.

    Observed time is the window clipped to the monitor's life, minus its pauses; downtime is the
    part of that covered by incidents. Check counts are the fixture's checks inside the window.
    """
    w = WINDOWS[window]
    if name == "a":
        # Observed: the whole window, less the day paused (T0-3d..T0-2d) for 7d and 30d.
        span = w if window == "24h" else w - DAY_S
        down = 2 * 3600 + elapsed  # the ongoing incident, since T0-2h
        if window != "24h":
            down += 3600  # T0-3d-1h..T0-3d: the incident's hour before the pause began
        if window == "30d":
            down += 1800  # the incident ten days ago
        checks, up = {
            "24h": (5, 2),
            "7d": (5 + 16 + 3 + 2, 2 + 14 + 2 + 0),
            "30d": (26 + 2 + 12, 18 + 1 + 12),
        }[window]
        return figures(span, down, checks, up)
    if name == "b":
        return {"uptime_percent": None, "downtime_seconds": None, "checks": 0, "checks_up": 0}
    if name == "c":
        # Created T0-5h: every window is clipped to its 5 hours of life; one 30-minute incident.
        # Its last check (at T0) is in the hour still running when the API answers.
        return figures(5 * 3600 + elapsed, 1800.0, 6, 4)
    if name == "d":
        if window == "24h":  # paused for the whole of it, and not checked in it
            return {"uptime_percent": None, "downtime_seconds": None, "checks": 0, "checks_up": 0}
        return figures(w - DAY_S - elapsed, 0.0, 2, 2)  # paused since T0-1d
    assert name == "f"
    # Created T0-1h; down since T0-10m.
    return figures(3600 + elapsed, 600 + elapsed, 4, 1)


def figures(span: float, down: float, checks: int, up: int) -> dict[str, Any]:
    return {
        "uptime_percent": 100.0 * (1.0 - down / span),
        "downtime_seconds": down,
        "checks": checks,
        "checks_up": up,
    }


def assert_uptime(got: dict[str, Any], want: dict[str, Any]) -> None:
    assert got["checks"] == want["checks"], (got, want)
    assert got.get("checks_up", want["checks_up"]) == want["checks_up"], (got, want)
    for key in ("uptime_percent", "downtime_seconds"):
        if want[key] is None:
            assert got[key] is None, (key, got)
        else:
            assert got[key] == pytest.approx(want[key], rel=1e-12, abs=1e-6), (key, got, want)


async def test_uptime_of_several_windows_in_one_call(api: ApiClient, fleet: Fleet) -> None:
    for name in ("a", "c", "d", "f"):
        response = await api.get(
            f"/api/v1/monitors/{fleet.ids[name]}/uptime", params={"window": "24h,7d,30d"}
        )
        assert response.status == 200, response
        body = response.json
        assert body["monitor_id"] == fleet.ids[name]
        assert list(body["windows"]) == ["24h", "7d", "30d"]
        for window, got in body["windows"].items():
            now = parse_time(got["to"])
            assert parse_time(got["from"]) == now - timedelta(seconds=WINDOWS[window]), got
            elapsed = (now - fleet.t0).total_seconds()
            assert 0 <= elapsed < 30, got
            assert_uptime(got, expected_uptime(name, window, elapsed))


async def test_uptime_of_a_monitor_never_checked_is_null_not_zero(api: ApiClient, fleet: Fleet) -> None:
    path = f"/api/v1/monitors/{fleet.ids['b']}/uptime"
    several = await api.get(path, params={"window": "24h,7d,30d,90d"})
    assert several.status == 200, several
    assert list(several.json["windows"]) == ["24h", "7d", "30d", "90d"]
    one = await api.get(path, params={"window": "30d"})
    assert one.status == 200, one
    assert "windows" not in one.json  # one window answers flat
    for got in [*several.json["windows"].values(), one.json]:
        assert got["uptime_percent"] is None and got["downtime_seconds"] is None, got
        assert got["checks"] == 0 and got["checks_up"] == 0, got


# -- statistics --------------------------------------------------------------------------------


def stat(
    start: datetime, checks: int, up: float, avg: float, p50: float, p95: float, top: float
) -> dict[str, Any]:
    return {"start": rfc3339(start), "checks": checks, "up_share": up, "avg_ms": avg, "p50_ms": p50,
            "p95_ms": p95, "max_ms": top}  # fmt: skip


def assert_stats(items: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
    assert [i["start"] for i in items] == [w["start"] for w in want], items
    for got, expected in zip(items, want, strict=True):
        assert got["checks"] == expected["checks"], (got, expected)
        for key in ("up_share", "avg_ms", "p50_ms", "p95_ms", "max_ms"):
            assert got[key] == pytest.approx(expected[key], rel=1e-9), (key, got, expected)


async def test_stats_per_hour(api: ApiClient, fleet: Fleet) -> None:
    # A percentile is interpolated linearly inside the bucket its rank (q x latencies) falls in,
    # and never exceeds the hour's maximum.
    day1 = fleet.day1
    want = [
        # 30, 40 in (25, 50]; 60, 70 in (50, 75]. p50: rank 2, the 2nd of 2 in (25, 50] -> 50.
        # p95: rank 3.8, 1.8 of 2 into (50, 75] -> 72.5, capped at the maximum 70.
        stat(day1 + 10 * H, 4, 1.0, 200 / 4, 50.0, 70.0, 70),
        # Ten checks, eight up: their latencies, 8 in (100, 150] (the 500 after 740 ms is not one).
        # p50: rank 4 -> 100 + 50 x 4/8 = 125. p95: rank 7.6 -> 100 + 50 x 7.6/8 = 147.5, capped at 140.
        stat(day1 + 11 * H, 10, 0.8, 1000 / 8, 125.0, 140.0, 140),
        # (12:00 had no checks: no item.) 3 in (0, 5], 8 in (5, 10].
        # p50: rank 1 -> 0 + 5 x 1/1 = 5. p95: rank 1.9 -> 5 + 5 x 0.9 = 9.5, capped at 8.
        stat(day1 + 13 * H, 2, 1.0, 11 / 2, 5.0, 8.0, 8),
    ]
    response = await api.get(
        f"/api/v1/monitors/{fleet.ids['a']}/stats",
        params={"bucket": "1h", "from": rfc3339(day1 + 10 * H), "to": rfc3339(day1 + 14 * H)},
    )
    assert response.status == 200, response
    body = response.json
    assert body["bucket"] == "1h" and body["monitor_id"] == fleet.ids["a"]
    assert_stats(body["items"], want)

    # Only the hours asked for: from 11:00 to 12:00 is the one 11:00 bucket.
    response = await api.get(
        f"/api/v1/monitors/{fleet.ids['a']}/stats",
        params={"bucket": "1h", "from": rfc3339(day1 + 11 * H), "to": rfc3339(day1 + 12 * H)},
    )
    assert response.status == 200, response
    assert_stats(response.json["items"], want[1:2])


async def test_stats_per_day(api: ApiClient, fleet: Fleet) -> None:
    want = [
        # day1 = the three hours above: 16 checks, 14 up; their 14 latencies sum to 200 + 1000 + 11.
        # Buckets: (0,5] 1, (5,10] 1, (25,50] 2, (50,75] 2, (100,150] 8.
        # p50: rank 7, 6 below (100, 150] -> 100 + 50 x 1/8 = 106.25.
        # p95: rank 13.3, 6 below (100, 150] -> 100 + 50 x 7.3/8 = 145.625, capped at 140.
        stat(fleet.day1, 16, 14 / 16, 1211 / 14, 106.25, 140.0, 140),
        # day2: 200 in (150, 200], 250 in (200, 300], one timeout. p50: rank 1 -> 200.
        # p95: rank 1.9 -> 200 + 100 x 0.9 = 290, capped at 250.
        stat(fleet.day2, 3, 2 / 3, 450 / 2, 200.0, 250.0, 250),
    ]
    response = await api.get(
        f"/api/v1/monitors/{fleet.ids['a']}/stats",
        params={"bucket": "1d", "from": rfc3339(fleet.day1), "to": rfc3339(fleet.day2 + D)},
    )
    assert response.status == 200, response
    assert response.json["bucket"] == "1d"
    assert_stats(response.json["items"], want)


# -- incidents and the summary -----------------------------------------------------------------


async def test_incidents_with_durations(api: ApiClient, db: asyncpg.Connection, fleet: Fleet) -> None:
    before: datetime = await db.fetchval("SELECT now()")
    response = await api.get(f"/api/v1/monitors/{fleet.ids['a']}/incidents")
    after: datetime = await db.fetchval("SELECT now()")
    assert response.status == 200, response
    items = response.json["items"]
    assert [i["id"] for i in items] == [fleet.incidents[k] for k in ("a_now", "a_paused", "a_old")]
    ongoing, paused, old = items
    t0 = fleet.t0
    assert ongoing["ongoing"] is True and ongoing["ended_at"] is None
    assert parse_time(ongoing["started_at"]) == t0 - 2 * H
    # Ongoing: runs to the API's now, somewhere between the two readings around the request.
    low, high = ((when - (t0 - 2 * H)).total_seconds() for when in (before, after))
    assert low - 0.001 <= ongoing["duration_seconds"] <= high + 0.001, (ongoing, low, high)
    # A pause does not shorten an incident: it lasted two hours.
    assert paused["ongoing"] is False and paused["duration_seconds"] == 7200.0
    assert parse_time(paused["ended_at"]) == t0 - 3 * D + H
    assert old["duration_seconds"] == 1800.0
    assert all(i["status_code"] == 500 and i["error"] == "HTTP 500" for i in items), items

    # Incidents that touch [from, to): the one ten days ago does not.
    response = await api.get(
        f"/api/v1/monitors/{fleet.ids['a']}/incidents", params={"from": rfc3339(t0 - 5 * D)}
    )
    assert [i["id"] for i in response.json["items"]] == [
        fleet.incidents["a_now"],
        fleet.incidents["a_paused"],
    ]

    response = await api.get(f"/api/v1/monitors/{fleet.ids['c']}/incidents")
    assert [(i["duration_seconds"], i["ongoing"]) for i in response.json["items"]] == [(1800.0, False)]


async def test_summary_counts_by_status_and_lists_the_monitors_down(api: ApiClient, fleet: Fleet) -> None:
    response = await api.get("/api/v1/summary")
    assert response.status == 200, response
    body = response.json
    # ``d`` is paused, so it counts as paused whatever its last state says, and is not listed down.
    assert body["by_status"] == {"up": 1, "degraded": 0, "down": 2, "paused": 1, "unknown": 1}
    assert body["monitors"] == 5
    # Longest down first.
    assert [(m["id"], m["name"], m["since"], m["status_code"], m["error"]) for m in body["down"]] == [
        (fleet.ids["a"], "a", rfc3339(fleet.t0 - 2 * H), 500, "HTTP 500"),
        (fleet.ids["f"], "f", rfc3339(fleet.t0 - 10 * M), 500, "HTTP 500"),
    ]


# -- the monitor list with uptime ---------------------------------------------------------------


async def test_monitor_list_includes_each_ones_30_day_uptime(
    api: ApiClient, db: asyncpg.Connection, fleet: Fleet
) -> None:
    before: datetime = await db.fetchval("SELECT now()")
    listed: dict[int, dict[str, Any]] = {}
    cursor: str | None = None
    pages = 0
    while True:  # pages of two: each page computes its own monitors' figures
        params = {"include": "uptime_30d", "limit": "2", **({"cursor": cursor} if cursor else {})}
        response = await api.get("/api/v1/monitors", params=params)
        assert response.status == 200, response
        listed.update({item["id"]: item for item in response.json["items"]})
        pages += 1
        cursor = response.json["next_cursor"]
        if cursor is None:
            break
    after: datetime = await db.fetchval("SELECT now()")
    assert pages == 3 and sorted(listed) == sorted(fleet.ids.values())
    by_name = {item["name"]: item for item in listed.values()}
    assert {name: item["status"] for name, item in by_name.items()} == {
        "a": "down", "b": "unknown", "c": "up", "d": "paused", "f": "down",
    }  # fmt: skip

    for name, item in by_name.items():
        got = item["uptime_30d"]
        assert set(got) == {"uptime_percent", "downtime_seconds", "degraded_seconds", "checks"}, got
        # The list's now is between the two readings; figures that run with the clock are bracketed.
        low, high = (
            expected_uptime(name, "30d", (when - fleet.t0).total_seconds()) for when in (before, after)
        )
        assert got["checks"] == low["checks"], (name, got)
        for key in ("uptime_percent", "downtime_seconds"):
            if low[key] is None:
                assert got[key] is None, (name, got)
            else:
                lo, hi = sorted((low[key], high[key]))
                assert lo - 1e-6 <= got[key] <= hi + 1e-6, (name, key, got, lo, hi)

        # And the same as the monitor's own uptime endpoint, read a moment later: equal but for
        # how far the figures moved with the clock in between.
        single = (await api.get(f"/api/v1/monitors/{item['id']}/uptime", params={"window": "30d"})).json
        assert single["checks"] == got["checks"], (name, single, got)
        later = expected_uptime(name, "30d", (parse_time(single["to"]) - fleet.t0).total_seconds())
        for key in ("uptime_percent", "downtime_seconds"):
            if got[key] is None:
                assert single[key] is None, (name, single)
            else:
                moved = abs(later[key] - low[key])
                assert abs(single[key] - got[key]) <= moved + 1e-6, (name, key, single, got, moved)


# -- pause and resume through the API -----------------------------------------------------------


async def test_pause_and_resume_through_the_api_exclude_the_paused_time(
    api: ApiClient, db: asyncpg.Connection, monitor_factory: Any
) -> None:
    t0: datetime = await db.fetchval("SELECT now()")
    created, began = t0 - 2 * H, t0 - H
    monitor = await monitor_factory(url="http://pause.example/", created_at=created)
    monitor_id = monitor["id"]
    await write_checks(db, monitor_id, [ok(t0 - 90 * M, 20), fail(began, 30), fail(began + M, 30)], t0)
    await add_incident(db, monitor_id, began, None)  # ongoing: downtime grows with the clock...

    async def uptime() -> dict[str, Any]:
        response = await api.get(f"/api/v1/monitors/{monitor_id}/uptime", params={"window": "24h"})
        assert response.status == 200, response
        return response.json  # type: ignore[no-any-return]

    async def pauses() -> list[tuple[datetime, datetime | None]]:
        rows = await db.fetch(
            "SELECT started_at, ended_at FROM monitor_pauses WHERE monitor_id = $1 ORDER BY started_at",
            monitor_id,
        )
        return [(r["started_at"], r["ended_at"]) for r in rows]

    response = await api.patch(f"/api/v1/monitors/{monitor_id}", json={"paused": True})
    assert response.status == 200 and response.json["status"] == "paused", response
    [(paused_at, resumed_at)] = await pauses()
    assert resumed_at is None and t0 < paused_at
    # ...but not while paused: observed time and downtime both stop at the pause.
    for _ in range(2):
        got = await uptime()
        assert parse_time(got["to"]) > paused_at
        assert_uptime(
            got, figures((paused_at - created).total_seconds(), (paused_at - began).total_seconds(), 3, 1)
        )
    # Pausing a paused monitor opens no second pause.
    assert (await api.patch(f"/api/v1/monitors/{monitor_id}", json={"paused": True})).status == 200
    assert len(await pauses()) == 1

    response = await api.patch(f"/api/v1/monitors/{monitor_id}", json={"paused": False})
    assert response.status == 200 and response.json["status"] != "paused", response
    [(started, resumed_at)] = await pauses()
    assert started == paused_at and resumed_at is not None and resumed_at > paused_at
    got = await uptime()
    now = parse_time(got["to"])
    gap = (resumed_at - paused_at).total_seconds()
    assert_uptime(
        got, figures((now - created).total_seconds() - gap, (now - began).total_seconds() - gap, 3, 1)
    )

    # A second pause is a second row; the first keeps its times.
    assert (await api.patch(f"/api/v1/monitors/{monitor_id}", json={"paused": True})).status == 200
    rows = await pauses()
    assert len(rows) == 2 and rows[0] == (paused_at, resumed_at) and rows[1][1] is None


async def test_a_monitor_created_paused_has_an_open_pause(api: ApiClient, db: asyncpg.Connection) -> None:
    created = await api.create_monitor(
        url="http://127.0.0.1:9/", interval_seconds=60, timeout_seconds=5, paused=True
    )
    assert created["status"] == "paused"
    rows = await db.fetch(
        "SELECT started_at, ended_at FROM monitor_pauses WHERE monitor_id = $1", created["id"]
    )
    assert len(rows) == 1 and rows[0]["ended_at"] is None
    assert rows[0]["started_at"] == parse_time(created["created_at"])
    got = (await api.get(f"/api/v1/monitors/{created['id']}/uptime", params={"window": "24h"})).json
    assert got["uptime_percent"] is None and got["checks"] == 0


# -- degraded time -----------------------------------------------------------------------------


async def test_degraded_time_is_reported_apart_and_is_not_downtime(
    api: ApiClient, db: asyncpg.Connection, monitor_factory: Any
) -> None:
    """``s``, created T0-1d, up all along, slow T0-5h..T0-4h and again since T0-10m: 24 h uptime
    stays 100 %, degraded_seconds is 3600 + the 10 minutes to the API's now; /stats puts each
    degradation in its hour; /summary counts the monitor as degraded."""
    t0: datetime = await db.fetchval("SELECT now()")
    mid = (await monitor_factory(url="http://s.example/", name="s", created_at=t0 - D))["id"]
    hour = t0.replace(minute=0, second=0, microsecond=0)
    await write_checks(db, mid, [ok(hour - 5 * H + 30 * M, 900), ok(t0 - 5 * M, 950)], t0)
    await db.executemany(
        "INSERT INTO degradations (monitor_id, started_at, ended_at, reason) VALUES ($1, $2, $3, 'slow')",
        [(mid, hour - 5 * H, hour - 4 * H), (mid, t0 - 10 * M, None)],
    )
    await set_state(db, mid, "degraded", t0 - 10 * M)

    response = await api.get(f"/api/v1/monitors/{mid}/uptime", params={"window": "24h"})
    assert response.status == 200, response
    body = response.json
    now = parse_time(body["to"])
    assert body["uptime_percent"] == 100.0 and body["downtime_seconds"] == 0.0
    assert body["degraded_seconds"] == pytest.approx(3600 + (now - (t0 - 10 * M)).total_seconds())

    response = await api.get(
        f"/api/v1/monitors/{mid}/stats",
        params={"bucket": "1h", "from": rfc3339(hour - 6 * H), "to": rfc3339(t0 + M)},
    )
    assert response.status == 200, response
    degraded = {parse_time(item["start"]): item["degraded_seconds"] for item in response.json["items"]}
    assert degraded[hour - 5 * H] == 3600.0
    assert degraded[(t0 - 5 * M).replace(minute=0, second=0, microsecond=0)] > 0  # the hour of the last check

    summary = await api.get("/api/v1/summary")
    assert summary.status == 200, summary
    assert summary.json["by_status"]["degraded"] == 1
