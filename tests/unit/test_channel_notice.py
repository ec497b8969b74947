"""What each kind of event says (``notice``), written in Telegram's HTML, and what every
renderer shares: limits, escaping of hostile names in every kind, combined messages, summaries
of old alerts, and the event schema's ``details``."""

from __future__ import annotations

import html
import json
import re
from datetime import UTC, datetime
from typing import Any

import pytest
from support.fake_channels import _discord_errors, _slack_problem

from monitor.channels import discord, email, ntfy, pagerduty, slack, telegram, webhook
from monitor.channels.notice import KINDS, most_urgent, notice, summarize, tally
from monitor.channels.text import Name, Time, escaper, plain, write
from monitor.events import SCHEMA_VERSION, Event, EventFormatError
from monitor.scheduler.state import held_by_window, held_note

START = "2026-01-01T10:00:00Z"
AT = "2026-01-01T11:00:00Z"
NOW = datetime(2026, 1, 1, 11, 0, 30, tzinfo=UTC)
HOSTILE = "<b>x</b> & <!channel> @everyone **[y](https://evil.example)** `z` 'q\" #h"

# The details each kind carries (as the scheduler writes them).
DETAILS: dict[str, dict[str, Any]] = {
    "down": {},
    "up": {},
    "remind": {"reminder": 2, "reminder_max": 5},
    "acknowledged": {"acknowledged_by": "Ada Lovelace", "note": "failing over the database"},
    "degraded": {"reason": "response time 812 ms above 500 ms"},
    "degraded_end": {},
    "flapping": {"changes": 7, "window_minutes": 30},
    "flapping_end": {"status": "up", "window_minutes": 30},
    "maintenance_start": {"window": "Nightly", "until": "2026-01-01T12:00:00Z"},
    "maintenance_end": {"window": "Nightly"},
    "connectivity_lost": {"reason": "no route to 1.1.1.1 or 9.9.9.9"},
    "connectivity_restored": {"reason": "reachable again"},
    "test": {},
}
CHECKER = ("connectivity_lost", "connectivity_restored")
ENDED = ("up", "degraded_end", "connectivity_restored")


def event(kind: str = "down", **overrides: Any) -> Event:
    data: dict[str, Any] = {
        "event_id": f"id-{kind}",
        "kind": kind,
        "monitor_id": 7,
        "monitor_name": "Shop",
        "monitor_url": "https://shop.example/?a=1&b=2",
        "telegram_chat_id": None,
        "incident_id": 3,
        "at": AT,
        "started_at": START,
        "ended_at": AT if kind in ENDED else None,
        "duration_seconds": 3600.0 if kind in ENDED else None,
        "cause": {"status_code": 503, "error": None, "latency_ms": 12.0},
        "seq": 4,
        "details": DETAILS.get(kind, {}),
    }
    if kind in CHECKER:
        data.update(monitor_id=None, monitor_name="", monitor_url=None, incident_id=0, cause={}, seq=None)
        data.update(started_at=None, duration_seconds=180.0 if kind == "connectivity_restored" else None)
    if kind == "test":
        data.update(monitor_id=None, monitor_url=None, incident_id=0, started_at=None, cause={}, seq=None)
    data.update(overrides)
    return Event(**data)


# -- the notice of each kind ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "level", "icon", "title", "lines"),
    [
        ("down", "down", "🔴", "Shop is DOWN", ["Cause: HTTP 503", "Since: 2026-01-01 10:00:00 UTC"]),
        (
            "up",
            "up",
            "🟢",
            "Shop is UP again",
            ["Outage lasted 1h (since 2026-01-01 10:00:00 UTC)", "Recovered: 2026-01-01 11:00:00 UTC"],
        ),
        (
            "remind",
            "down",
            "🔴",
            "Shop is still DOWN",
            ["Reminder 2 of 5", "Down for 1h (since 2026-01-01 10:00:00 UTC)", "Latest cause: HTTP 503"],
        ),
        (
            "acknowledged",
            "info",
            "👀",
            "Shop acknowledged by Ada Lovelace",
            [
                "Note: failing over the database",
                "Down for 1h (since 2026-01-01 10:00:00 UTC)",
                "Reminders of this outage stop; its recovery is still sent",
            ],
        ),
        (
            "degraded",
            "warn",
            "🟡",
            "Shop is DEGRADED",
            ["Reason: response time 812 ms above 500 ms", "Since: 2026-01-01 10:00:00 UTC"],
        ),
        (
            "degraded_end",
            "up",
            "🟢",
            "Shop is no longer degraded",
            ["Degraded for 1h (since 2026-01-01 10:00:00 UTC)"],
        ),
        (
            "flapping",
            "warn",
            "🟠",
            "Shop is FLAPPING",
            ["7 changes in 30 min; alerts paused until it is stable for 30 min"],
        ),
        ("flapping_end", "up", "🟢", "Shop stopped flapping; now UP", []),
        (
            "maintenance_start",
            "info",
            "🔧",
            "Maintenance for Shop",
            ["Window: Nightly until 2026-01-01 12:00:00 UTC"],
        ),
        ("maintenance_end", "up", "🔧", "Maintenance for Shop ended", ["Window: Nightly"]),
        (
            "connectivity_lost",
            "warn",
            "⚠️",
            "The checker's network is down",
            [
                "Reason: no route to 1.1.1.1 or 9.9.9.9",
                "Since: 2026-01-01 11:00:00 UTC",
                "Checks are recorded as unknown; no monitor is marked down meanwhile",
            ],
        ),
        ("connectivity_restored", "up", "✅", "The checker's network is back", ["Cut off for 3m"]),
        ("test", "test", "✅", "Test message from monitor", ["Channel Shop works."]),
        ("certificate_renewed", "info", "🔔", "Shop: certificate_renewed", ["At: 2026-01-01 11:00:00 UTC"]),
    ],
)
def test_what_each_kind_says(kind: str, level: str, icon: str, title: str, lines: list[str]) -> None:
    said = notice(event(kind))
    assert (said.kind, said.level, said.icon) == (kind, level, icon)
    assert plain(said.title) == title
    assert [plain(line.sentence()) for line in said.lines] == lines
    # Only events about a monitor carry its URL (a test, the checker: none).
    assert (said.url is not None) == (kind not in (*CHECKER, "test"))


@pytest.mark.parametrize(
    ("kind", "details", "gist"),
    [
        ("down", {}, "Shop is DOWN: HTTP 503"),
        ("remind", {"reminder": 1, "reminder_max": None}, "Shop is still DOWN: HTTP 503"),
        ("acknowledged", {"acknowledged_by": "Ada", "note": "on it"}, "Shop acknowledged by Ada: on it"),
        ("acknowledged", {"acknowledged_by": "Ada"}, "Shop acknowledged by Ada"),
        ("acknowledged", {}, "Shop acknowledged by someone"),
        ("degraded", {"reason": "certificate expires in 3 days (2026-12-03)"}, None),
        ("flapping_end", {"status": "down"}, "Shop stopped flapping; now DOWN"),
        ("flapping_end", {"status": "degraded"}, "Shop stopped flapping; now DEGRADED"),
        ("maintenance_start", {"window": "Nightly", "until": "2026-01-01T12:00:00Z"}, None),
    ],
)
def test_gists(kind: str, details: dict[str, Any], gist: str | None) -> None:
    said = notice(event(kind, details=details))
    wanted = {
        "degraded": "Shop is DEGRADED: certificate expires in 3 days (2026-12-03)",
        "maintenance_start": "Maintenance for Shop: Nightly until 2026-01-01 12:00:00 UTC",
    }
    assert plain(said.gist) == (gist or wanted[kind])


@pytest.mark.parametrize(
    ("details", "level", "icon"),
    [
        ({"status": "up"}, "up", "🟢"),
        ({"status": "down"}, "down", "🔴"),
        ({"status": "degraded"}, "warn", "🟡"),
    ],
)
def test_flapping_end_takes_the_level_of_the_state_it_settled_in(
    details: dict[str, Any], level: str, icon: str
) -> None:
    said = notice(event("flapping_end", details=details))
    assert (said.level, said.icon) == (level, icon)


@pytest.mark.parametrize(
    ("reminder", "reminder_max", "line", "aside"),
    [(2, 5, "Reminder 2 of 5", "reminder 2 of 5"), (3, None, "Reminder 3", "reminder 3")],
)
def test_reminders_count(reminder: int, reminder_max: int | None, line: str, aside: str) -> None:
    said = notice(event("remind", details={"reminder": reminder, "reminder_max": reminder_max}))
    assert plain(said.lines[0].text) == line and said.aside == aside


@pytest.mark.parametrize(
    ("covers", "shown"),
    [
        (["A", "B"], "Also affects: A, B"),
        ([f"m{i}" for i in range(10)], "Also affects: " + ", ".join(f"m{i}" for i in range(10))),
        (
            [f"m{i}" for i in range(14)],
            "Also affects: " + ", ".join(f"m{i}" for i in range(10)) + " and 4 more",
        ),
    ],
)
def test_a_down_names_the_monitors_it_covers(covers: list[str], shown: str) -> None:
    note = held_note(held_by_window("Nightly"))
    said = notice(event("down", details={"covers": covers, "note": note}))
    sentences = [plain(line.sentence()) for line in said.lines]
    assert sentences[2:] == [shown, "Alert held while maintenance window 'Nightly' was open"]


@pytest.mark.parametrize(
    ("screenshot", "shown"),
    [
        (
            "https://monitor.example/monitors/7/screenshots#outages",
            ["Screenshot: https://monitor.example/monitors/7/screenshots#outages"],
        ),
        ("javascript:alert(1)", []),  # only a web address is a link
        (None, []),
    ],
)
def test_a_down_links_to_a_browser_monitor_s_screenshots(screenshot: str | None, shown: list[str]) -> None:
    said = notice(event("down", details={"screenshot": screenshot} if screenshot else {}))
    assert [plain(line.sentence()) for line in said.lines][2:] == shown


def test_an_acknowledgement_is_an_outage_s_news_in_short() -> None:
    said = notice(event("acknowledged"))
    assert plain(said.brief) == "Shop acknowledged by Ada Lovelace: failing over the database"
    assert plain(said.state) == "DOWN since 2026-01-01 10:00:00 UTC, acknowledged"
    assert (said.tag, said.aside, said.incident) == ("ACKNOWLEDGED", "by Ada Lovelace", True)
    # The gist says the note already: a message that opens with it (an e-mail) leaves it out.
    assert [line.in_gist for line in said.lines] == [True, False, False]


def test_an_up_carries_its_note() -> None:
    said = notice(event("up", details={"note": "Alert held while Router was down"}))
    assert plain(said.lines[-1].sentence()) == "Alert held while Router was down"


def test_every_kind_is_known_and_an_unknown_one_is_not_good_news() -> None:
    assert set(DETAILS) == KINDS
    said = notice(event("something_new"))
    assert said.level == "info" and "UP" not in plain(said.title) and said.tag == "SOMETHING_NEW"
    assert plain(notice(event("something_new", monitor_name="")).title) == "something_new"


def test_missing_details_say_so_rather_than_fail() -> None:
    for kind in KINDS:
        said = notice(event(kind, details={}))
        assert plain(said.title) and plain(said.gist)
    assert plain(notice(event("maintenance_start", details={"until": "soon"})).gist).endswith("? until ?")


# -- writing text in a markup ----------------------------------------------------------------

_html = escaper({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


@pytest.mark.parametrize(
    ("text", "limit", "wanted"),
    [
        ((Name("a<b"), " is DOWN"), None, "<b>a&lt;b</b> is DOWN"),
        ((Name("x" * 50), " is DOWN"), 30, "<b>" + "x" * 14 + "…</b> is DOWN"),  # the name is cut first
        (("at ", Time(START)), None, "at 2026-01-01 10:00:00 UTC"),
        (("<" * 40, Time(START)), 30, "&lt;…2026-01-01 10:00:00 UTC"),  # never inside an entity
        (("a", Time("not a time")), None, "a?"),  # a time never carries text
    ],
)
def test_write(text: tuple[Any, ...], limit: int | None, wanted: str) -> None:
    assert write(text, _html, limit=limit, strong=lambda name: f"<b>{name}</b>") == wanted


def test_tally_and_urgency() -> None:
    assert tally(["down", "up", "test"]) == "1 down, 1 up"
    assert tally(["down", "up", "test"], tests_as_up=True) == "1 down, 2 up"
    assert tally(["warn", "warn", "info", "down"]) == "1 down, 0 up, 2 warnings, 1 notice"
    assert most_urgent(["up", "info", "warn"]) == "warn" and most_urgent(["test", "up"]) == "up"


# -- Telegram ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "wanted"),
    [
        (
            "remind",
            [
                "🔴 <b>Shop</b> is still DOWN",
                "Reminder 2 of 5",
                "Down for 1h (since 2026-01-01 10:00:00 UTC)",
            ],
        ),
        (
            "acknowledged",
            ["👀 <b>Shop</b> acknowledged by Ada Lovelace", "Note: failing over the database", "Down for 1h"],
        ),
        ("degraded", ["🟡 <b>Shop</b> is DEGRADED", "Reason: response time 812 ms above 500 ms"]),
        ("degraded_end", ["🟢 <b>Shop</b> is no longer degraded", "Degraded for 1h"]),
        (
            "flapping",
            [
                "🟠 <b>Shop</b> is FLAPPING",
                "7 changes in 30 min; alerts paused until it is stable for 30 min",
            ],
        ),
        ("flapping_end", ["🟢 <b>Shop</b> stopped flapping; now UP"]),
        (
            "maintenance_start",
            ["🔧 Maintenance for <b>Shop</b>", "Window: Nightly until 2026-01-01 12:00:00 UTC"],
        ),
        ("maintenance_end", ["🔧 Maintenance for <b>Shop</b> ended", "Window: Nightly"]),
        (
            "connectivity_lost",
            ["⚠️ The checker&#x27;s network is down", "no monitor is marked down meanwhile"],
        ),
        ("connectivity_restored", ["✅ The checker&#x27;s network is back", "Cut off for 3m"]),
        ("certificate_renewed", ["🔔 <b>Shop</b>: certificate_renewed"]),
    ],
)
def test_telegram_says_each_kind(kind: str, wanted: list[str]) -> None:
    text, covered = telegram.compose([event(kind)])
    assert covered == 1
    for part in wanted:
        assert part in text, (part, text)
    # A Telegram test's parser counts "<b>name</b> [is ]DOWN|UP": only a real down or up matches.
    assert not re.search(r"</b> (?:is )?(?:DOWN|UP)\b", text)
    assert ("https://shop.example/?a=1&amp;b=2" in text) == (kind not in CHECKER)


def test_telegram_combines_new_kinds_with_a_count() -> None:
    events = [
        event(kind, monitor_id=n) for n, kind in enumerate(["down", "degraded", "maintenance_start", "up"])
    ]
    text, covered = telegram.compose(events)
    assert covered == 4
    lines = text.split("\n")
    assert lines[0] == "⚠️ 4 alerts: 1 down, 1 up, 1 warning, 1 notice"
    assert lines[2].startswith("🟡 <b>Shop</b> DEGRADED: response time 812 ms above 500 ms, since ")
    assert lines[3].startswith("🔧 Maintenance for <b>Shop</b>: Nightly until 2026-01-01 12:00:00 UTC (")


# -- hostile names, in every kind and every markup -------------------------------------------

ALL_KINDS = sorted(KINDS | {"certificate_renewed"})


def hostile(kind: str) -> Event:
    """Every user-supplied string of the event hostile: the name, the cause, every detail."""
    details = {
        key: (HOSTILE if isinstance(value, str) and key != "until" and key != "status" else value)
        for key, value in DETAILS.get(kind, {}).items()
    }
    details.update(note=HOSTILE, covers=[HOSTILE, "ok"])
    cause = {"status_code": None, "error": HOSTILE, "latency_ms": 1.0}
    return event(kind, monitor_name=HOSTILE, cause=cause, details=details)


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_telegram_escapes_everything(kind: str) -> None:
    text, _ = telegram.compose([hostile(kind)])
    tags = re.findall(r"<[^>]*>", text)
    assert set(tags) <= {"<b>", "</b>"}, tags  # only our own bold
    assert html.escape(HOSTILE) in text


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_slack_escapes_everything(kind: str) -> None:
    payload, _ = slack.compose([hostile(kind)])
    texts = [payload["text"]] + [
        t
        for block in payload["blocks"]
        for t in [block.get("text", {}).get("text", "")]
        + [f["text"] for f in block.get("fields", [])]
        + [e["text"] for e in block.get("elements", [])]
    ]
    for text in texts:
        assert "<!channel>" not in text and "<https://evil" not in text and "<b>" not in text
    assert any("&lt;b&gt;x&lt;/b&gt; &amp; &lt;!channel&gt;" in t for t in texts)


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_discord_escapes_everything(kind: str) -> None:
    payload, _ = discord.compose([hostile(kind)])
    assert payload["allowed_mentions"] == {"parse": []}
    (item,) = payload["embeds"]
    description = re.sub(r"<t:\d+:f> \(<t:\d+:R>\)", "", item.get("description", ""))  # times
    # Each of these Markdown characters of the user's comes after a backslash.
    assert not re.search(r"(?<!\\)[\[\]()`]", description), description
    assert "\\*\\*\\[y\\]\\(https://evil.example\\)\\*\\*" in description
    assert not re.search(r"(?<!\\)`", item["title"])


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_email_escapes_everything(kind: str) -> None:
    mail = email.render(hostile(kind))
    assert "<b>x</b>" not in mail.html and "<!channel>" not in mail.html
    assert html.escape(HOSTILE) in mail.html and HOSTILE in mail.text
    assert "\n" not in mail.subject


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_ntfy_and_webhook_carry_names_as_they_are(kind: str) -> None:
    message, _ = ntfy.compose([hostile(kind)])
    assert HOSTILE in message.title + message.message  # plain text: nothing to escape, nothing read
    body = json.loads(webhook.compose([hostile(kind)])[0].body)
    if kind not in CHECKER:
        assert HOSTILE in (body["monitor"] or body["channel"])["name"]


@pytest.mark.parametrize("kind", ALL_KINDS)
@pytest.mark.parametrize("size", [300, 5000])
def test_long_values_stay_within_every_limit(kind: str, size: int) -> None:
    long = "&<*_[" * (size // 5)
    details = {
        key: long if isinstance(value, str) and key != "until" else value
        for key, value in DETAILS.get(kind, {}).items()
    }
    details.update(note=long, covers=[long] * 20)
    url = "https://e.example/" + "&" * size
    big = event(kind, monitor_name=long, monitor_url=url, cause={"error": long}, details=details)
    assert len(telegram.compose([big])[0]) <= telegram.MAX_MESSAGE
    message, _ = ntfy.compose([big])
    assert len(message.title) <= ntfy.MAX_TITLE and len(message.message.encode()) <= ntfy.MAX_MESSAGE_BYTES
    payload, _ = slack.compose([big])
    assert _slack_problem(payload) is None, payload
    assert len(payload["blocks"][0]["text"]["text"]) <= slack.MAX_HEADER
    payload, _ = discord.compose([big])
    assert _discord_errors(payload) == {}, payload
    for item in pagerduty.render(big):
        assert len(item.get("payload", {}).get("summary", "")) <= pagerduty.MAX_SUMMARY
    assert len(email.render(big).subject) <= 40 + email.MAX_SUBJECT_NAME


# -- old alerts, summed up -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("kinds", "counts", "state"),
    [
        (["down", "up"], "1 down, 1 up", "🟢 last UP at 2026-01-01 11:00:00 UTC"),
        (
            ["down", "remind", "remind"],
            "1 down, 0 up, 2 others",
            "🔴 last DOWN since 2026-01-01 10:00:00 UTC",
        ),
        (["degraded"], "0 down, 0 up, 1 other", "🟡 last DEGRADED since 2026-01-01 10:00:00 UTC"),
        (
            ["degraded", "degraded_end"],
            "0 down, 0 up, 2 others",
            "🟢 last no longer degraded at 2026-01-01 11:00:00 UTC",
        ),
        (["flapping"], "0 down, 0 up, 1 other", "🟠 last FLAPPING since 2026-01-01 11:00:00 UTC"),
        (["flapping_end"], "0 down, 0 up, 1 other", "🟢 last stable, UP at 2026-01-01 11:00:00 UTC"),
        (
            ["maintenance_start"],
            "0 down, 0 up, 1 other",
            "🔧 last in maintenance until 2026-01-01 12:00:00 UTC",
        ),
        (["something_new"], "0 down, 0 up, 1 other", "🔔 last something_new at 2026-01-01 11:00:00 UTC"),
    ],
)
def test_summaries_count_downs_and_ups_and_name_the_last_state(
    kinds: list[str], counts: str, state: str
) -> None:
    (seen,) = summarize([event(kind) for kind in kinds])
    assert (seen.name, seen.counts(), seen.state()) == ("Shop", counts, state)


def test_the_checkers_alerts_are_summed_up_apart_from_tests() -> None:
    events = [event("connectivity_lost"), event("test"), event("connectivity_restored"), event("down")]
    checker, test, shop = summarize(events)
    assert (checker.name, checker.counts(), checker.last.kind) == (
        "The checker",
        "0 down, 0 up, 2 others",
        "connectivity_restored",
    )
    assert (test.name, shop.name) == ("Shop", "Shop") and test.last.kind == "test"
    text, covered = telegram.compose(events, max_age=1.0, now=NOW)
    assert covered == 4 and "<b>The checker</b>: 0 down, 0 up, 2 others; ✅ last checker back at" in text


# -- the event schema ------------------------------------------------------------------------


def test_events_carry_details_from_version_4() -> None:
    assert SCHEMA_VERSION == 4
    data = event("remind").to_dict()
    assert data["v"] == 4 and data["details"] == {"reminder": 2, "reminder_max": 5}
    assert Event.from_dict(json.loads(json.dumps(data))) == event("remind")


@pytest.mark.parametrize("version", [1, 2, 3])
def test_older_events_are_read_without_details(version: int) -> None:
    data = event("down").to_dict()
    del data["details"]
    data["v"] = version
    assert Event.from_dict(data).details == {}
    assert Event.from_dict({**data, "details": None}).details == {}


def test_details_must_be_an_object() -> None:
    with pytest.raises(EventFormatError):
        Event.from_dict({**event().to_dict(), "details": ["x"]})
