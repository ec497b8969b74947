"""What a maintenance window looks like to every face (``render``), the account's glance at its
windows (``glance``), and the field a rule's error is about: pure, row by row."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from monitor.domain.maintenance import ACTIVE_LISTED, glance, render, rule_error
from monitor.maintenance import RuleError

NOW = datetime(2030, 1, 6, 1, 30, tzinfo=UTC)  # a Sunday
H = timedelta(hours=1)
MADE = datetime(2029, 12, 1, tzinfo=UTC)


def row(window_id: int = 1, **fields: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "id": window_id, "name": f"w{window_id}", "kind": "once",
        "starts_at": NOW + H, "ends_at": NOW + 2 * H,
        "rrule": None, "cron": None, "dtstart": None, "timezone": None, "duration_seconds": None,
        "monitor_ids": [7], "tags": ["db"], "notify": False, "public_text": None, "announce_hours": 24,
        "created_at": MADE, "updated_at": MADE,
    }  # fmt: skip
    return values | fields


def cron(window_id: int, expression: str, minutes: int = 60) -> dict[str, Any]:
    return row(window_id, kind="cron", starts_at=None, ends_at=None, cron=expression,
               dtstart=datetime(2030, 1, 1), timezone="UTC", duration_seconds=minutes * 60)  # fmt: skip


def test_a_one_off_window_as_shown() -> None:
    assert render(row(), NOW) == {
        "id": 1, "name": "w1", "kind": "once",
        "once": {"from": "2030-01-06T02:30:00Z", "to": "2030-01-06T03:30:00Z"}, "recurring": None,
        "monitor_ids": [7], "tags": ["db"], "notify": False, "public_text": None, "announce_hours": 24,
        "active_now": False, "current": None,
        "next": {"from": "2030-01-06T02:30:00Z", "to": "2030-01-06T03:30:00Z"},
        "created_at": "2029-12-01T00:00:00Z", "updated_at": "2029-12-01T00:00:00Z",
    }  # fmt: skip


def test_a_recurring_window_open_now_as_shown() -> None:
    shown = render(cron(2, "0 1 * * 0"), NOW)  # Sundays 01:00-02:00
    assert shown["once"] is None
    assert shown["recurring"] == {
        "rrule": None, "cron": "0 1 * * 0", "duration_minutes": 60, "timezone": "UTC",
        "starts_at": "2030-01-01T00:00:00",
    }  # fmt: skip
    assert shown["active_now"] is True
    assert shown["current"] == {"from": "2030-01-06T01:00:00Z", "to": "2030-01-06T02:00:00Z"}
    assert shown["next"] == {"from": "2030-01-13T01:00:00Z", "to": "2030-01-13T02:00:00Z"}


def test_a_rule_this_version_cannot_read_shows_as_never_open() -> None:
    shown = render(cron(3, "not a cron"), NOW)
    assert (shown["active_now"], shown["current"], shown["next"]) == (False, None, None)


GLANCES = [
    ("nothing", [], [], []),
    ("open now, then later", [row(1), cron(2, "0 1 * * 0")], [2], [1]),
    ("closing first first", [cron(1, "0 1 * * 0", 120), cron(2, "0 1 * * 0", 60)], [2, 1], []),
    ("soonest first", [row(1, starts_at=NOW + 5 * H, ends_at=NOW + 6 * H), row(2)], [], [2, 1]),
    ("a past one-off is left out", [row(1, starts_at=NOW - 3 * H, ends_at=NOW - 2 * H)], [], []),
    ("an unreadable rule is left out", [cron(1, "not a cron")], [], []),
]


@pytest.mark.parametrize(
    ("rows", "active", "upcoming"), [c[1:] for c in GLANCES], ids=[c[0] for c in GLANCES]
)
def test_glance(rows: list[dict[str, Any]], active: list[int], upcoming: list[int]) -> None:
    found = glance(rows, NOW)
    assert [w["id"] for w in found["active"]] == active
    assert [w["id"] for w in found["upcoming"]] == upcoming


def test_glance_lists_at_most_its_limit() -> None:
    rows = [cron(i, "0 1 * * 0") for i in range(1, ACTIVE_LISTED + 5)]
    assert len(glance(rows, NOW)["active"]) == ACTIVE_LISTED


@pytest.mark.parametrize(("field", "fields", "named"), [
    ("ends_at", {"ends_at": "once.to"}, "once.to"),
    ("duration_seconds", {"duration_seconds": "recurring.duration_minutes"}, "recurring.duration_minutes"),
    ("rrule", {}, "rrule"),
])  # fmt: skip
def test_a_rules_error_names_the_bodys_field(field: str, fields: dict[str, str], named: str) -> None:
    error = rule_error(RuleError(field, "never occurs"), fields)
    assert (error.status, error.field, error.message) == (422, named, f"{named}: never occurs")
