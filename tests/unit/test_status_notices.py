"""Maintenance notices on status pages: which windows a page announces at a given now (the
rows are those ``data.SQL`` reads: one per window and monitor of the page it covers, by id or
tag), and how the HTML, JSON and feed show them, hostile text included."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from monitor.status import render
from monitor.status.data import AHEAD, _maintenance, with_html
from monitor.status.view import maintenance_of

NOW = datetime(2030, 1, 6, 12, 0, tzinfo=UTC)  # a Sunday
H = timedelta(hours=1)
MADE = datetime(2029, 12, 1, tzinfo=UTC)
WEB, DB = 7_100_001, 7_100_002


def window(window_id: int = 1, monitor_id: int = WEB, **fields: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "monitor_id": monitor_id, "id": window_id, "name": f"w{window_id}", "kind": "once",
        "starts_at": NOW + 10 * H, "ends_at": NOW + 12 * H,
        "rrule": None, "cron": None, "dtstart": None, "timezone": None, "duration_seconds": None,
        "public_text": "Storage upgrade", "announce_hours": 24, "updated_at": MADE,
    }  # fmt: skip
    return values | fields


def weekly(window_id: int, hour: int, **fields: Any) -> dict[str, Any]:
    """Sundays at ``hour`` UTC for two hours."""
    rule = f"FREQ=WEEKLY;BYDAY=SU;BYHOUR={hour}"
    return window(window_id, kind="rrule", starts_at=None, ends_at=None, rrule=rule,
                  dtstart=datetime(2030, 1, 6), timezone="UTC", duration_seconds=7200, **fields)  # fmt: skip


def announced(rows: list[dict[str, Any]], now: datetime) -> list[dict[str, Any]]:
    """What a build announces (``_maintenance``), with each text's HTML as ``assemble`` adds it."""
    return with_html(_maintenance(rows, now))


# (name, rows, announced: (id, active, from) each)
CASES = [
    ("inside the lead", [window(1)], [(1, False, NOW + 10 * H)]),
    ("before the lead", [window(1, announce_hours=9)], []),
    ("at the lead's edge", [window(1, announce_hours=10)], [(1, False, NOW + 10 * H)]),
    ("a lead of 0: not before it runs", [window(1, announce_hours=0)], []),
    ("running", [window(1, starts_at=NOW - H, ends_at=NOW + H, announce_hours=0)], [(1, True, NOW - H)]),
    ("ended", [window(1, starts_at=NOW - 3 * H, ends_at=NOW - H)], []),
    ("a long lead", [window(1, starts_at=NOW + 700 * H, ends_at=NOW + 701 * H, announce_hours=720)],
     [(1, False, NOW + 700 * H)]),
    ("recurring, running now", [weekly(1, 11, announce_hours=0)], [(1, True, NOW - H)]),
    ("recurring: its next occurrence", [weekly(1, 10, announce_hours=168)],
     [(1, False, NOW + 7 * 24 * H - 2 * H)]),
    ("recurring: next one beyond the lead", [weekly(1, 10, announce_hours=24)], []),
    ("without text: by its name, AHEAD ahead", [window(1, public_text=None, starts_at=NOW + AHEAD - H,
                                                       ends_at=NOW + AHEAD, announce_hours=0)],
     [(1, False, NOW + AHEAD - H)]),
    ("without text: not beyond AHEAD", [window(1, public_text=None, starts_at=NOW + AHEAD + H,
                                               ends_at=NOW + AHEAD + 2 * H)], []),
    ("running first, then soonest", [window(1), window(2, starts_at=NOW + 2 * H, ends_at=NOW + 3 * H),
                                      window(3, starts_at=NOW - H, ends_at=NOW + H)],
     [(3, True, NOW - H), (2, False, NOW + 2 * H), (1, False, NOW + 10 * H)]),
    ("an unreadable rule", [window(1, kind="cron", starts_at=None, ends_at=None, cron="not a cron",
                                   dtstart=datetime(2030, 1, 1), timezone="UTC", duration_seconds=60)], []),
]  # fmt: skip


@pytest.mark.parametrize(("rows", "announced"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_which_windows_a_page_announces(
    rows: list[dict[str, Any]], announced: list[tuple[int, bool, datetime]]
) -> None:
    assert [(w["id"], w["active"], w["from"]) for w in _maintenance(rows, NOW)] == announced


def test_a_window_over_two_monitors_is_one_notice_naming_both() -> None:
    (shown,) = announced([window(1, WEB), window(1, DB)], NOW)
    assert shown["monitor_ids"] == [WEB, DB]
    model = maintenance_of(shown, 5, {WEB: "web"})  # DB is not on the page (another group's)
    assert model["monitors"] == ["web"]
    assert (model["text"], model["html"]) == ("Storage upgrade", "<p>Storage upgrade</p>\n")


@pytest.mark.parametrize(
    ("updated_at", "announced_at"),
    [
        (MADE, NOW + 10 * H - 24 * H),  # the lead began before now: then
        (NOW - H, NOW - H),  # changed since: then
    ],
)
def test_when_an_occurrence_was_announced(updated_at: datetime, announced_at: datetime) -> None:
    (shown,) = announced([window(1, updated_at=updated_at)], NOW)
    assert shown["announced_at"] == announced_at


def test_a_feed_entry_is_updated_when_its_occurrence_begins() -> None:
    upcoming = maintenance_of(announced([window(1)], NOW)[0], 5, {WEB: "web"})
    running = maintenance_of(announced([window(1)], NOW + 11 * H)[0], 5, {WEB: "web"})
    assert render.notice_updated(upcoming) == NOW + 10 * H - 24 * H
    assert (running["ref"], render.notice_updated(running)) == (upcoming["ref"], NOW + 10 * H)


def test_each_recurrence_is_its_own_feed_entry() -> None:
    rows = [weekly(1, 11, announce_hours=720)]
    this = maintenance_of(announced(rows, NOW)[0], 5, {WEB: "web"})
    later = maintenance_of(announced(rows, NOW + 2 * H)[0], 5, {WEB: "web"})  # the next Sunday's
    assert (this["active"], later["active"], this["ref"] != later["ref"]) == (True, False, True)
    again = maintenance_of(announced(rows, NOW + H / 2)[0], 5, {WEB: "web"})
    assert again["ref"] == this["ref"]


HOSTILE = (
    "<script>alert(1)</script> [x](javascript:alert(2)) ![i](https://evil.example/i.png) "
    "<img src=x onerror=alert(3)> <style>body{}</style> **bold**"
)


def model_with(notice: dict[str, Any]) -> dict[str, Any]:
    return {
        "title": "Acme <b>", "description": None, "logo_url": None, "favicon_url": None,
        "updated_at": NOW, "status": "up", "groups": [], "incidents": [], "posts": [],
        "post_history_days": 90, "maintenance": [notice],
    }  # fmt: skip


@pytest.mark.parametrize("starts", [NOW - H, NOW + 3 * H], ids=["running", "upcoming"])
def test_hostile_text_is_escaped_everywhere(starts: datetime) -> None:
    rows = [window(1, name="<b>Night</b>", public_text=HOSTILE, starts_at=starts, ends_at=NOW + 4 * H)]
    notice = maintenance_of(announced(rows, NOW)[0], 5, {WEB: "<i>web</i>"})
    model = model_with(notice)
    page = render.html(model, "/status/acme")
    feed = render.atom(model, "/status/acme", 5)
    for text in (page, feed):
        # Left as text, escaped: no element, attribute or link of theirs survives.
        for bad in ("<script", 'href="javascript:', "<img", "<style", "<b>Night", "<i>web"):
            assert bad not in text
    # The feed's HTML is escaped once more: an element of theirs would be "&lt;img" there.
    for bad in ("&lt;img", "&lt;script", "&lt;style", "href=&#34;javascript", "href=&quot;javascript"):
        assert bad not in feed
    assert "<strong>bold</strong>" in page
    assert "&lt;strong&gt;bold&lt;/strong&gt;" in feed  # type="html": the HTML escaped once
    assert ("Maintenance in progress" in page) == (starts < NOW)
    assert ("Scheduled maintenance" in page) == (starts > NOW)
    assert "(in 3 h)" in page if starts > NOW else ", in 4 h" in page
    body = json.loads(render.as_json(model))["maintenance"][0]
    assert body["text"] == HOSTILE and "<script" not in body["html"] and "<img" not in body["html"]
    assert set(body) == {"name", "from", "to", "active", "text", "html", "announced_at", "monitors", "ref"}


def test_a_notice_without_text_is_not_in_the_feed() -> None:
    rows = [window(1, public_text=None)]
    model = model_with(maintenance_of(announced(rows, NOW)[0], 5, {WEB: "web"}))
    assert "<entry>" not in render.atom(model, "/status/acme", 5)
    assert "Scheduled maintenance" in render.html(model, "/status/acme")


@pytest.mark.parametrize(
    ("delta", "text"),
    [(timedelta(seconds=30), "now"), (40 * 60, "in 40 min"), (3 * 3600, "in 3 h"), (47 * 3600, "in 47 h"),
     (3 * 86400, "in 3 days"), (-2 * 3600, "2 h ago")],
)  # fmt: skip
def test_from_now(delta: timedelta | int, text: str) -> None:
    step = delta if isinstance(delta, timedelta) else timedelta(seconds=delta)
    assert render.from_now(NOW + step, NOW) == text
