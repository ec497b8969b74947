"""A status page's model from its data: days, bar levels, states, the headline, groups,
incidents, what stays private, the sparkline and durations."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from monitor.domain.uptime import Uptime
from monitor.status.view import (
    DAY,
    DAYS,
    INCIDENTS_LISTED,
    WINDOWS,
    PageData,
    build,
    days_until,
    duration_text,
    level,
    overall,
    shown_target,
    spark_points,
    status_of,
)

H = timedelta(hours=1)
NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
# Ids large enough that no count, percent or duration in the model can equal one by chance.
API, WEB, DB, CRON, HIDDEN, GONE = 7_000_001, 7_000_002, 7_000_003, 7_000_004, 7_000_005, 7_000_099
SECRET = "connect to 10.1.2.3:5432: connection refused"


# --- days_until --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("now", "today"),
    [
        (datetime(2026, 3, 10, 12, 0, tzinfo=UTC), datetime(2026, 3, 10, tzinfo=UTC)),
        # Midnight UTC starts a new day.
        (datetime(2026, 3, 10, 0, 0, tzinfo=UTC), datetime(2026, 3, 10, tzinfo=UTC)),
        (datetime(2026, 3, 9, 23, 59, 59, 999999, tzinfo=UTC), datetime(2026, 3, 9, tzinfo=UTC)),
        # Past midnight at +05:00 is still the day before in UTC.
        (datetime(2026, 3, 10, 1, 30, tzinfo=timezone(timedelta(hours=5))), datetime(2026, 3, 9, tzinfo=UTC)),
        # Midnight at +02:00 is 22:00 UTC the day before.
        (datetime(2026, 3, 10, 0, 0, tzinfo=timezone(timedelta(hours=2))), datetime(2026, 3, 9, tzinfo=UTC)),
        # Late evening at -05:00 is already the next day in UTC.
        (
            datetime(2026, 3, 9, 22, 0, tzinfo=timezone(timedelta(hours=-5))),
            datetime(2026, 3, 10, tzinfo=UTC),
        ),
        # Midnight at -05:00 is 05:00 UTC the same day.
        (
            datetime(2026, 3, 10, 0, 0, tzinfo=timezone(timedelta(hours=-5))),
            datetime(2026, 3, 10, tzinfo=UTC),
        ),
        # Over a leap day.
        (datetime(2028, 3, 1, 0, 0, tzinfo=UTC), datetime(2028, 3, 1, tzinfo=UTC)),
    ],
)
def test_days_until(now: datetime, today: datetime) -> None:
    days = days_until(now)
    assert len(days) == DAYS == 90
    assert days[-1] == today
    assert days[0] == today - 89 * DAY
    assert all(b - a == DAY for a, b in itertools.pairwise(days))
    for day in days:
        assert day.utcoffset() == timedelta(0)
        assert (day.hour, day.minute, day.second, day.microsecond) == (0, 0, 0, 0)
    assert days[-1] <= now < days[-1] + DAY


# --- level -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("percent", "expected"),
    [
        (None, "nodata"),
        (100.0, "up"),
        (99.99, "minor"),
        (99.0, "minor"),
        (98.99, "partial"),
        (95.0, "partial"),
        (94.99, "down"),
        (0.0, "down"),
    ],
)
def test_level(percent: float | None, expected: str) -> None:
    assert level(percent) == expected


# --- status_of ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("paused", "in_maintenance", "status", "expected"),
    [
        (True, True, "down", "paused"),
        (True, False, "up", "paused"),
        (False, True, "down", "maintenance"),
        (False, True, "up", "maintenance"),
        (False, False, "up", "up"),
        (False, False, "down", "down"),
        (False, False, "degraded", "degraded"),
        (False, False, "unknown", "unknown"),
        (False, False, "exploded", "unknown"),
        (False, False, "", "unknown"),
        (False, False, None, "unknown"),
    ],
)
def test_status_of(paused: bool, in_maintenance: bool, status: str | None, expected: str) -> None:
    assert status_of({"paused": paused, "status": status}, in_maintenance) == expected


# --- overall -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [
        (["up"], "up"),
        (["up", "up", "up"], "up"),
        (["up", "down", "up"], "partial"),
        (["down", "degraded", "maintenance"], "partial"),
        (["down", "unknown"], "partial"),
        (["down"], "down"),
        (["down", "down"], "down"),
        (["down", "paused"], "down"),
        (["up", "degraded"], "degraded"),
        (["degraded", "maintenance"], "degraded"),
        (["up", "maintenance"], "maintenance"),
        (["up", "paused"], "up"),
        (["paused", "paused"], "unknown"),
        ([], "unknown"),
        (["up", "unknown"], "unknown"),
        (["unknown"], "unknown"),
    ],
)
def test_overall(statuses: list[str], expected: str) -> None:
    assert overall(statuses) == expected


# --- build -------------------------------------------------------------------------------


def monitor(mid: int, name: str, tags: Sequence[str] = (), **over: Any) -> dict[str, Any]:
    return {
        "id": mid,
        "name": name,
        "type": "http",
        "url": f"https://internal-{mid}.example.net/health",
        "paused": False,
        "tags": list(tags),
        "created_at": NOW - 200 * DAY,
        "status": "up",
        "changed_at": NOW - 3 * H,
        "error": SECRET,  # a row may carry more than the page shows
        **over,
    }


def uptime(day: datetime, percent: float | None, down: float | None = 0.0) -> Uptime:
    return Uptime(day, day + DAY, percent, down, 1440, 1440, None)


def page_data(
    *,
    show_urls: bool = False,
    groups: Sequence[Mapping[str, Any]] | None = None,
    incidents: dict[int, list[tuple[datetime, datetime | None]]] | None = None,
    maintenance: Sequence[Mapping[str, Any]] = (),
) -> PageData:
    monitors = [
        monitor(API, "api", ["core"], status="down"),
        monitor(WEB, "Web", ["core", "edge"]),
        monitor(DB, "database", ["core"], url=""),
        monitor(CRON, "cron", ["batch"], paused=True),
        monitor(HIDDEN, "hidden", ["private"]),
    ]
    days = days_until(NOW)
    daily = {m["id"]: [uptime(d, 100.0) for d in days] for m in monitors}
    daily[API][-1] = uptime(days[-1], 97.5, 1080.0)
    return PageData(
        page={
            "id": 41,
            "account_id": 7_000_777,
            "slug": "acme",
            "title": "Acme",
            "description": "Our services",
            "logo_url": None,
            "favicon_url": None,
            "show_urls": show_urls,
            "post_history_days": 90,
            "groups": groups
            if groups is not None
            else [
                # Named in this order (DB twice, a deleted monitor), then tagged ones by name.
                {"name": "Core", "monitor_ids": [DB, GONE, API, DB], "tags": ["core", "batch"]},
                {"name": "Edge", "monitor_ids": [], "tags": ["edge"]},
            ],
        },
        monitors=monitors,
        now=NOW,
        days=days,
        daily=daily,
        windows={m["id"]: {w: uptime(NOW - d, 99.5) for w, d in WINDOWS.items()} for m in monitors},
        incidents=incidents or {},
        latency={API: [(NOW - (24 - i) * H, 100.0 + i) for i in range(24)]},
        maintenance=maintenance,
    )


def names(model: Mapping[str, Any]) -> list[tuple[str, list[str]]]:
    return [(g["name"], [m["name"] for m in g["monitors"]]) for g in model["groups"]]


def walk(value: Any, path: str = "") -> Iterator[tuple[str, Any, Any]]:
    """Every (path, key, leaf) in a model: its dict keys (leaf None) and its leaves (key None)."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield f"{path}.{key}", key, None
            yield from walk(item, f"{path}.{key}")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from walk(item, f"{path}[{i}]")
    else:
        yield path, None, value


def test_groups_named_ids_in_order_then_tagged_by_name() -> None:
    model = build(page_data())
    assert names(model) == [
        # database and api as named (once each, the deleted id skipped); then by tag, by name
        # case-insensitively: cron (batch), Web (core); api and database are not repeated.
        ("Core", ["database", "api", "cron", "Web"]),
        ("Edge", ["Web"]),
    ]


@pytest.mark.parametrize(
    ("groups", "expected"),
    [
        ([], []),
        ([{"name": "Empty", "monitor_ids": [], "tags": []}], [("Empty", [])]),
        ([{"name": "Gone", "monitor_ids": [GONE], "tags": ["nope"]}], [("Gone", [])]),
        ([{"name": "Twice", "monitor_ids": [WEB, WEB], "tags": ["edge"]}], [("Twice", ["Web"])]),
        (
            [{"name": "Order", "monitor_ids": [WEB, CRON, API], "tags": []}],
            [("Order", ["Web", "cron", "api"])],
        ),
        (
            [{"name": "Tags", "monitor_ids": [], "tags": ["edge", "core"]}],
            [("Tags", ["api", "database", "Web"])],
        ),
        # A monitor may be in two groups.
        (
            [
                {"name": "A", "monitor_ids": [API], "tags": []},
                {"name": "B", "monitor_ids": [API], "tags": []},
            ],
            [("A", ["api"]), ("B", ["api"])],
        ),
    ],
)
def test_group_membership(groups: list[dict[str, Any]], expected: list[tuple[str, list[str]]]) -> None:
    assert names(build(page_data(groups=groups))) == expected


@pytest.mark.parametrize(
    ("show_urls", "expected"),
    [
        (False, {"api": None, "database": None, "Web": None}),
        (
            True,
            {
                "api": f"https://internal-{API}.example.net/health",
                "Web": f"https://internal-{WEB}.example.net/health",
                "database": None,  # an empty url is no target
            },
        ),
    ],
)
def test_target_only_when_shown(show_urls: bool, expected: dict[str, str | None]) -> None:
    model = build(page_data(show_urls=show_urls))
    targets = {m["name"]: m["target"] for g in model["groups"] for m in g["monitors"]}
    assert {k: targets[k] for k in expected} == expected
    if not show_urls:
        assert "internal-" not in json.dumps(model, default=str)


def test_monitor_entry() -> None:
    model = build(page_data())
    api = next(m for m in model["groups"][0]["monitors"] if m["name"] == "api")
    assert api["status"] == "down"
    assert api["type"] == "http"
    assert api["since"] == NOW - 3 * H
    assert api["uptime"] == dict.fromkeys(WINDOWS, 99.5)
    assert len(api["days"]) == DAYS
    assert api["days"][-1] == {
        "date": "2026-03-10",
        "uptime_percent": 97.5,
        "downtime_seconds": 1080.0,
        "incidents": 0,
    }
    assert api["days"][0]["date"] == "2025-12-11"
    assert api["response_time"]["avg_ms"] == pytest.approx(111.5)
    assert len(api["response_time"]["hours"]) == 24
    web = next(m for m in model["groups"][0]["monitors"] if m["name"] == "Web")
    assert web["response_time"] == {"avg_ms": None, "hours": []}
    cron = next(m for m in model["groups"][0]["monitors"] if m["name"] == "cron")
    assert cron["status"] == "paused"


def test_missing_figures_are_none() -> None:
    data = page_data()
    bare = PageData(page=data.page, monitors=data.monitors, now=NOW, days=data.days)
    api = build(bare)["groups"][0]["monitors"][1]
    assert api["name"] == "api"
    assert api["uptime"] == dict.fromkeys(WINDOWS, None)
    assert api["days"] == []


def test_headline_from_shown_monitors() -> None:
    assert build(page_data())["status"] == "partial"  # api down of api, database, Web (cron paused)
    only_up = [{"name": "Up", "monitor_ids": [WEB, DB, CRON], "tags": []}]
    assert build(page_data(groups=only_up))["status"] == "up"
    assert build(page_data(groups=[]))["status"] == "unknown"


def span(start: datetime, hours: float | None) -> tuple[datetime, datetime | None]:
    return (start, None if hours is None else start + hours * H)


def test_incidents_ongoing_first_then_newest() -> None:
    incidents = {
        API: [span(NOW - 50 * H, 1), span(NOW - 2 * H, None)],
        WEB: [span(NOW - 10 * H, 0.5), span(NOW - 30 * H, 2)],
        DB: [span(NOW - 5 * H, None)],
        HIDDEN: [span(NOW - H, None)],  # not on the page: not listed
    }
    listed = build(page_data(incidents=incidents))["incidents"]
    assert [(i["monitor"], i["started_at"], i["ongoing"]) for i in listed] == [
        ("api", NOW - 2 * H, True),
        ("database", NOW - 5 * H, True),
        ("Web", NOW - 10 * H, False),
        ("Web", NOW - 30 * H, False),
        ("api", NOW - 50 * H, False),
    ]
    assert [i["duration_seconds"] for i in listed] == [7200, 18000, 1800, 7200, 3600]
    assert [i["ended_at"] for i in listed] == [None, None, NOW - 9.5 * H, NOW - 28 * H, NOW - 49 * H]


def test_incidents_limited() -> None:
    many = [span(NOW - (i + 1) * H, 0.25) for i in range(INCIDENTS_LISTED + 5)]
    listed = build(page_data(incidents={API: many}))["incidents"]
    assert len(listed) == INCIDENTS_LISTED
    assert [i["started_at"] for i in listed] == [s for s, _ in many[:INCIDENTS_LISTED]]


def test_limit_keeps_ongoing_incidents() -> None:
    old = [span(NOW - (i + 10) * H, 0.25) for i in range(INCIDENTS_LISTED)]
    listed = build(page_data(incidents={API: old, WEB: [span(NOW - 80 * DAY, None)]}))["incidents"]
    assert len(listed) == INCIDENTS_LISTED
    assert listed[0]["monitor"] == "Web" and listed[0]["ongoing"]


def test_nothing_private_in_the_model() -> None:
    maintenance = [
        {"name": "Upgrade", "from": NOW - H, "to": NOW + H, "active": True, "monitor_ids": [API, HIDDEN]},
    ]
    incidents = {API: [span(NOW - 2 * H, None)], WEB: [span(NOW - 30 * H, 1)]}
    model = build(page_data(incidents=incidents, maintenance=maintenance))
    ids = {API, WEB, DB, CRON, HIDDEN, GONE, 41, 7_000_777}
    for path, key, leaf in walk(model):
        assert key is None or not re.search(r"(^|_)ids?$", key), f"an id key at {path}"
        assert not (isinstance(leaf, int) and not isinstance(leaf, bool) and leaf in ids), f"an id at {path}"
    text = json.dumps(model, default=str)
    assert SECRET not in text and "10.1.2.3" not in text
    assert "hidden" not in text  # a monitor not on the page is not named, even by maintenance
    assert "acme" not in text  # nor the page's slug


def test_day_incident_counts() -> None:
    days = days_until(NOW)
    today, yesterday, before = days[-1], days[-2], days[-3]
    incidents: dict[int, list[tuple[datetime, datetime | None]]] = {
        # Across midnight between the day before yesterday and yesterday: one on each.
        API: [span(yesterday - H, 2)],
        # Ended exactly at midnight: that day only; started exactly at midnight: that day only.
        WEB: [(before + 20 * H, yesterday), (today, today + H)],
        # Open since the day before yesterday: that day, yesterday and today.
        DB: [span(before + 12 * H, None), span(yesterday + H, 1)],
    }
    model = build(page_data(incidents=incidents))
    counts = {m["name"]: [d["incidents"] for d in m["days"][-4:]] for m in model["groups"][0]["monitors"]}
    assert counts["api"] == [0, 1, 1, 0]
    assert counts["Web"] == [0, 1, 0, 1]
    assert counts["database"] == [0, 1, 2, 1]
    assert counts["cron"] == [0, 0, 0, 0]


def test_open_incident_older_than_the_bars_counts_on_every_day() -> None:
    days = days_until(NOW)
    model = build(page_data(incidents={API: [span(days[0] - 5 * DAY, None)]}))
    api = model["groups"][0]["monitors"][1]
    assert [d["incidents"] for d in api["days"]] == [1] * DAYS


@pytest.mark.parametrize(
    ("windows", "statuses", "listed"),
    [
        (
            [
                {
                    "name": "Upgrade",
                    "from": NOW - H,
                    "to": NOW + H,
                    "active": True,
                    "monitor_ids": [API, HIDDEN],
                }
            ],
            {"api": "maintenance", "database": "up", "Web": "up", "cron": "paused"},
            [("Upgrade", True, ["api"])],
        ),
        (
            [
                {
                    "name": "Later",
                    "from": NOW + DAY,
                    "to": NOW + DAY + H,
                    "active": False,
                    "monitor_ids": [API, DB],
                }
            ],
            {"api": "down", "database": "up", "Web": "up", "cron": "paused"},
            [("Later", False, ["api", "database"])],
        ),
        (
            [
                {"name": "Now", "from": NOW - H, "to": NOW + H, "active": True, "monitor_ids": [CRON, WEB]},
                {
                    "name": "Other",
                    "from": NOW + H,
                    "to": NOW + 2 * H,
                    "active": False,
                    "monitor_ids": [HIDDEN],
                },
            ],
            {"api": "down", "database": "up", "Web": "maintenance", "cron": "paused"},
            [("Now", True, ["cron", "Web"]), ("Other", False, [])],
        ),
    ],
)
def test_maintenance(
    windows: list[dict[str, Any]], statuses: dict[str, str], listed: list[tuple[str, bool, list[str]]]
) -> None:
    model = build(page_data(maintenance=windows))
    assert {m["name"]: m["status"] for m in model["groups"][0]["monitors"]} == statuses
    assert [(w["name"], w["active"], w["monitors"]) for w in model["maintenance"]] == listed
    assert [(w["from"], w["to"]) for w in model["maintenance"]] == [(w["from"], w["to"]) for w in windows]


def test_page_fields() -> None:
    model = build(page_data())
    assert (model["title"], model["description"], model["logo_url"], model["updated_at"]) == (
        "Acme",
        "Our services",
        None,
        NOW,
    )


# --- spark_points ------------------------------------------------------------------------


def points(text: str) -> list[tuple[float, float]]:
    return [(float(x), float(y)) for x, y in (p.split(",") for p in text.split())]


@pytest.mark.parametrize("values", [[], [42.0]])
def test_spark_needs_two_values(values: list[float]) -> None:
    assert spark_points(values) == ""


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([5.0, 5.0], [(0.0, 27.0), (120.0, 27.0)]),
        ([0.0, 0.0, 0.0], [(0.0, 27.0), (60.0, 27.0), (120.0, 27.0)]),
        ([10.0, 20.0], [(0.0, 27.0), (120.0, 1.0)]),
        ([20.0, 10.0], [(0.0, 1.0), (120.0, 27.0)]),
        ([1.0, 2.0, 3.0, 4.0, 5.0], [(0.0, 27.0), (30.0, 20.5), (60.0, 14.0), (90.0, 7.5), (120.0, 1.0)]),
    ],
)
def test_spark_points(values: list[float], expected: list[tuple[float, float]]) -> None:
    assert points(spark_points(values)) == expected


@pytest.mark.parametrize(("width", "height"), [(120.0, 28.0), (300.0, 40.0)])
def test_spark_rising_series_within_box(width: float, height: float) -> None:
    values = [100.0 + i * i for i in range(24)]
    drawn = points(spark_points(values, width, height))
    assert len(drawn) == 24
    assert drawn[0] == (0.0, height - 1) and drawn[-1] == (width, 1.0)
    assert all(0 <= x <= width and 1 <= y <= height - 1 for x, y in drawn)
    assert [x for x, _ in drawn] == sorted(x for x, _ in drawn)
    assert [y for _, y in drawn] == sorted((y for _, y in drawn), reverse=True)  # higher is up


# --- duration_text -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        (None, ""),
        (0, "0 s"),
        (59, "59 s"),
        (59.4, "59 s"),
        (60, "1 min"),
        (119, "1 min"),
        (3599, "59 min"),
        (3600, "1 h 0 min"),
        (3660, "1 h 1 min"),
        (86399, "23 h 59 min"),
        (86400, "1 d 0 h"),
        (90000, "1 d 1 h"),
        (90 * 86400 + 7200, "90 d 2 h"),
    ],
)
def test_duration_text(seconds: float | None, expected: str) -> None:
    assert duration_text(seconds) == expected


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://shop.example.com/health?key=s3cret#x", "https://shop.example.com/health"),
        ("http://shop.example.com/", "http://shop.example.com/"),
        ("tcp://mail.example.com:25", "tcp://mail.example.com:25"),
        ("dns:example.com?type=A", "dns:example.com?type=A"),
        ("", None),
        (None, None),
    ],
)
def test_a_shown_target_keeps_no_query(url: str | None, shown: str | None) -> None:
    assert shown_target(url) == shown
