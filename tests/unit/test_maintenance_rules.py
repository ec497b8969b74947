"""Maintenance window rules (monitor/maintenance.py): what is refused and why, which spans a
rule opens (DST included), merging, the cap on occurrences, and the current and next span.

Times are UTC unless a zone is named; ``Z(...)`` is a UTC instant, ``L(...)`` a wall-clock time.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from dateutil.rrule import rrulestr

from monitor.maintenance import (
    LOOK_BACK,
    MAX_OCCURRENCES,
    Rule,
    RuleError,
    Span,
    active_at,
    next_after,
    occurrences,
    parse_cron,
    parse_rrule,
)

D = timedelta(days=1)
H = timedelta(hours=1)
M = timedelta(minutes=1)


def Z(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)  # type: ignore[misc]


def L(*args: int) -> datetime:
    return datetime(*args)  # type: ignore[misc]


START = datetime(2026, 1, 1)


def recurring(body: str, duration: timedelta = H, tz: str = "UTC", start: datetime = START) -> Rule:
    kind = "cron" if len(body.split()) == 5 and "=" not in body else "rrule"
    return Rule(start, **{kind: body}, duration_seconds=int(duration.total_seconds()), timezone=tz)


# -- refused -------------------------------------------------------------------------------------

REFUSED: list[tuple[str, dict[str, Any], str, str]] = [
    # name, Rule arguments, the field at fault, words of the message
    ("empty rrule", {"rrule": ""}, "rrule", "empty"),
    ("unknown part", {"rrule": "FREQ=DAILY;FOO=1"}, "rrule", "unknown part FOO"),
    ("bad BYDAY", {"rrule": "FREQ=WEEKLY;BYDAY=XX"}, "rrule", "BYDAY"),
    ("not NAME=VALUE", {"rrule": "FREQ=DAILY;BYHOUR"}, "rrule", "not NAME=VALUE"),
    ("no FREQ", {"rrule": "BYHOUR=2"}, "rrule", "FREQ is required"),
    ("bad FREQ", {"rrule": "FREQ=FORTNIGHTLY"}, "rrule", "FREQ must be one of"),
    ("secondly", {"rrule": "FREQ=SECONDLY"}, "rrule", "once a minute"),
    ("BYSECOND", {"rrule": "FREQ=DAILY;BYSECOND=5"}, "rrule", "whole minutes"),
    ("a DTSTART line", {"rrule": "DTSTART:20260101T000000\nRRULE:FREQ=DAILY"}, "rrule", "one rule only"),
    ("DTSTART part", {"rrule": "FREQ=DAILY;DTSTART=20260101T000000"}, "rrule", "starts_at"),
    ("twice", {"rrule": "FREQ=DAILY;FREQ=WEEKLY"}, "rrule", "FREQ given twice"),
    ("INTERVAL=0", {"rrule": "FREQ=DAILY;INTERVAL=0"}, "rrule", "INTERVAL must be a whole number"),
    ("INTERVAL huge", {"rrule": "FREQ=DAILY;INTERVAL=99999999999"}, "rrule", "from 1 to 1,000,000"),
    ("BYHOUR huge", {"rrule": "FREQ=DAILY;BYHOUR=99999999999999999999"}, "rrule", "too large"),
    ("COUNT=x", {"rrule": "FREQ=DAILY;COUNT=x"}, "rrule", "COUNT must be a whole number"),
    (
        "COUNT and UNTIL",
        {"rrule": "FREQ=DAILY;COUNT=2;UNTIL=20270101T000000Z"},
        "rrule",
        "exclude each other",
    ),
    ("BYMONTHDAY weekly", {"rrule": "FREQ=WEEKLY;BYMONTHDAY=1"}, "rrule", "cannot be used with FREQ=WEEKLY"),
    ("BYWEEKNO monthly", {"rrule": "FREQ=MONTHLY;BYWEEKNO=1"}, "rrule", "BYWEEKNO cannot be used"),
    ("numbered BYDAY daily", {"rrule": "FREQ=DAILY;BYDAY=2MO"}, "rrule", "numbered BYDAY"),
    ("BYSETPOS daily", {"rrule": "FREQ=DAILY;BYHOUR=1,2;BYSETPOS=1"}, "rrule", "BYSETPOS needs"),
    ("hourly interval", {"rrule": "FREQ=HOURLY;INTERVAL=5;BYDAY=MO"}, "rrule", "divides a day"),
    ("BYHOUR=25", {"rrule": "FREQ=DAILY;BYHOUR=25"}, "rrule", "hour"),
    ("bad UNTIL", {"rrule": "FREQ=DAILY;UNTIL=2026-01-01Z"}, "rrule", "UNTIL"),
    ("4 cron fields", {"cron": "0 2 * *"}, "cron", "4 fields: give 5"),
    ("6 cron fields", {"cron": "0 0 2 * * *"}, "cron", "6 fields"),
    ("cron out of range", {"cron": "61 * * * *"}, "cron", "out of range"),
    ("cron hashed", {"cron": "H * * * *"}, "cron", "hash"),
    ("cron step 0", {"cron": "*/0 * * * *"}, "cron", "not acceptable"),
    ("both", {"rrule": "FREQ=DAILY", "cron": "0 2 * * *"}, "cron", "not both"),
    ("neither", {}, "rrule", "give ends_at"),
    (
        "unknown zone",
        {"rrule": "FREQ=DAILY", "timezone": "Mars/Olympus_Mons"},
        "timezone",
        "unknown time zone",
    ),
    ("host zone", {"rrule": "FREQ=DAILY", "timezone": "localtime"}, "timezone", "unknown time zone"),
    (
        "no duration",
        {"rrule": "FREQ=DAILY", "duration_seconds": None},
        "duration_seconds",
        "from 1 s to 31 days",
    ),
    ("zero duration", {"rrule": "FREQ=DAILY", "duration_seconds": 0}, "duration_seconds", "from 1 s"),
    ("negative", {"rrule": "FREQ=DAILY", "duration_seconds": -60}, "duration_seconds", "from 1 s"),
    (
        "over 31 days",
        {"rrule": "FREQ=DAILY", "duration_seconds": 31 * 86400 + 1},
        "duration_seconds",
        "31 days",
    ),
    ("year 1900", {"rrule": "FREQ=DAILY", "starts_at": L(1900, 1, 1)}, "starts_at", "between 1970"),
]


@pytest.mark.parametrize(
    ("arguments", "field", "words"), [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED]
)
def test_a_recurring_rule_is_refused_naming_its_field(
    arguments: dict[str, Any], field: str, words: str
) -> None:
    given = {"starts_at": L(2026, 1, 1), "duration_seconds": 3600, **arguments}
    with pytest.raises(RuleError) as caught:
        Rule(**given)
    assert caught.value.field == field
    assert words in str(caught.value)
    assert isinstance(caught.value, ValueError)


ONCE_REFUSED = [
    ("to == from", Z(2026, 1, 1), Z(2026, 1, 1), "ends_at", "must be after starts_at"),
    ("to < from", Z(2026, 1, 2), Z(2026, 1, 1), "ends_at", "must be after starts_at"),
    ("naive from", L(2026, 1, 1), Z(2026, 1, 2), "starts_at", "time zone"),
    ("naive to", Z(2026, 1, 1), L(2026, 1, 2), "ends_at", "time zone"),
]


@pytest.mark.parametrize(("start", "end", "field", "words"), [r[1:] for r in ONCE_REFUSED],
                         ids=[r[0] for r in ONCE_REFUSED])  # fmt: skip
def test_a_one_off_window_is_refused_naming_its_field(
    start: datetime, end: datetime, field: str, words: str
) -> None:
    with pytest.raises(RuleError) as caught:
        Rule(start, end)
    assert (caught.value.field, words in str(caught.value)) == (field, True)


def test_a_one_off_window_with_a_rule_is_refused() -> None:
    with pytest.raises(RuleError, match="recurring one a duration"):
        Rule(Z(2026, 1, 1), Z(2026, 1, 2), rrule="FREQ=DAILY")


NEVER = [
    # name, rule, field: each is a valid rule that never starts, found within a second
    ("February 30th", "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30", "rrule"),
    ("February 30th, hourly", "FREQ=HOURLY;BYMONTH=2;BYMONTHDAY=30", "rrule"),
    ("April 31st, monthly", "FREQ=MONTHLY;BYMONTH=4;BYMONTHDAY=31", "rrule"),
    ("ended before it began", "FREQ=DAILY;UNTIL=20250101T000000Z", "rrule"),
    ("interval never meets its day", "FREQ=DAILY;INTERVAL=7;BYDAY=TU", "rrule"),  # from a Thursday
    ("leap day every 4 years from 2026", "FREQ=YEARLY;INTERVAL=4;BYMONTH=2;BYMONTHDAY=29", "rrule"),
    ("a sixth Monday", "FREQ=MONTHLY;BYDAY=MO;BYSETPOS=6", "rrule"),
    ("cron February 30th", "0 0 30 2 *", "cron"),
]


@pytest.mark.parametrize(("body", "field"), [r[1:] for r in NEVER], ids=[r[0] for r in NEVER])
def test_a_rule_that_never_occurs_is_refused_by_check(body: str, field: str) -> None:
    rule = recurring(body)
    assert rule.first() is None
    began = time.process_time()  # CPU: what a shared machine's load leaves alone
    with pytest.raises(RuleError, match="never occurs") as caught:
        rule.check()
    assert caught.value.field == field
    assert time.process_time() - began < 2


def test_the_parsers_normalise_what_they_accept() -> None:
    assert parse_rrule(" rrule:freq=weekly; byday=su ;byhour=2") == {
        "FREQ": "WEEKLY",
        "BYDAY": "SU",
        "BYHOUR": "2",
    }
    assert parse_cron("  0  2 * *   0 ") == "0 2 * * 0"
    assert recurring("freq=weekly;byday=su").rrule == "FREQ=WEEKLY;BYDAY=SU"


# -- spans -----------------------------------------------------------------------------------------

SPANS: list[tuple[str, Rule, datetime, datetime, list[Span]]] = [
    # name, rule, range [from, to), the spans expected (whole, not cut to the range)
    ("one-off inside", Rule(Z(2026, 5, 1, 10), Z(2026, 5, 1, 12)), Z(2026, 5, 1), Z(2026, 5, 2),
     [(Z(2026, 5, 1, 10), Z(2026, 5, 1, 12))]),
    ("one-off cut by the range", Rule(Z(2026, 5, 1, 10), Z(2026, 5, 1, 12)), Z(2026, 5, 1, 11),
     Z(2026, 5, 1, 13), [(Z(2026, 5, 1, 10), Z(2026, 5, 1, 12))]),
    ("one-off ending at the range's start", Rule(Z(2026, 5, 1, 10), Z(2026, 5, 1, 12)), Z(2026, 5, 1, 12),
     Z(2026, 5, 2), []),
    ("one-off starting at the range's end", Rule(Z(2026, 5, 1, 10), Z(2026, 5, 1, 12)), Z(2026, 5, 1),
     Z(2026, 5, 1, 10), []),
    ("weekly in Berlin, winter then summer time",
     recurring("FREQ=WEEKLY;BYDAY=SU;BYHOUR=2", 2 * H, "Europe/Berlin"), Z(2026, 3, 21), Z(2026, 4, 6),
     [(Z(2026, 3, 22, 1), Z(2026, 3, 22, 3)),  # 02:00 CET
      (Z(2026, 3, 29, 1), Z(2026, 3, 29, 3)),  # 02:00 does not exist: read as CET, 03:00 CEST
      (Z(2026, 4, 5, 0), Z(2026, 4, 5, 2))]),  # 02:00 CEST
    ("daily 02:30 across spring forward (Berlin)",
     recurring("FREQ=DAILY;BYHOUR=2;BYMINUTE=30", H, "Europe/Berlin"), Z(2026, 3, 28), Z(2026, 3, 31),
     [(Z(2026, 3, 28, 1, 30), Z(2026, 3, 28, 2, 30)),
      (Z(2026, 3, 29, 1, 30), Z(2026, 3, 29, 2, 30)),  # 03:30-04:30 CEST: moved by the gap, not skipped
      (Z(2026, 3, 30, 0, 30), Z(2026, 3, 30, 1, 30))]),
    ("cron 02:30 across spring forward: the same",
     recurring("30 2 * * *", H, "Europe/Berlin"), Z(2026, 3, 28), Z(2026, 3, 31),
     [(Z(2026, 3, 28, 1, 30), Z(2026, 3, 28, 2, 30)), (Z(2026, 3, 29, 1, 30), Z(2026, 3, 29, 2, 30)),
      (Z(2026, 3, 30, 0, 30), Z(2026, 3, 30, 1, 30))]),
    ("daily 02:30 across fall back (Berlin): the first 02:30 only",
     recurring("FREQ=DAILY;BYHOUR=2;BYMINUTE=30", H, "Europe/Berlin"), Z(2026, 10, 24), Z(2026, 10, 27),
     [(Z(2026, 10, 24, 0, 30), Z(2026, 10, 24, 1, 30)),
      (Z(2026, 10, 25, 0, 30), Z(2026, 10, 25, 1, 30)),  # 02:30 CEST; not again at 02:30 CET
      (Z(2026, 10, 26, 1, 30), Z(2026, 10, 26, 2, 30))]),
    ("New York spring forward", recurring("30 2 * * *", 30 * M, "America/New_York"), Z(2026, 3, 8),
     Z(2026, 3, 9), [(Z(2026, 3, 8, 7, 30), Z(2026, 3, 8, 8, 0))]),  # 03:30 EDT
    ("every 30 minutes in the skipped hour: no doubles",
     recurring("FREQ=MINUTELY;INTERVAL=30;BYHOUR=1,2,3", 10 * M, "Europe/Berlin"), Z(2026, 3, 29, 0),
     Z(2026, 3, 29, 2),
     [(Z(2026, 3, 29, 0, 0), Z(2026, 3, 29, 0, 10)), (Z(2026, 3, 29, 0, 30), Z(2026, 3, 29, 0, 40)),
      (Z(2026, 3, 29, 1, 0), Z(2026, 3, 29, 1, 10)),  # 02:00 (gap) and 03:00 CEST are one instant
      (Z(2026, 3, 29, 1, 30), Z(2026, 3, 29, 1, 40))]),
    ("overlapping occurrences merge", recurring("FREQ=HOURLY;BYHOUR=1,2,3", 90 * M), Z(2026, 2, 1),
     Z(2026, 2, 2), [(Z(2026, 2, 1, 1), Z(2026, 2, 1, 4, 30))]),
    ("touching occurrences merge", recurring("0 1-3 * * *", H), Z(2026, 2, 1), Z(2026, 2, 1, 2),
     [(Z(2026, 2, 1, 1), Z(2026, 2, 1, 4))]),
    ("a window from the day before reaches in", recurring("FREQ=DAILY;BYHOUR=22", 4 * H), Z(2026, 2, 2),
     Z(2026, 2, 2, 1), [(Z(2026, 2, 1, 22), Z(2026, 2, 2, 2))]),
    ("COUNT", recurring("FREQ=DAILY;COUNT=2;BYHOUR=3"), Z(2025, 12, 1), Z(2026, 2, 1),
     [(Z(2026, 1, 1, 3), Z(2026, 1, 1, 4)), (Z(2026, 1, 2, 3), Z(2026, 1, 2, 4))]),
    ("UNTIL at the end of time",
     recurring("FREQ=YEARLY;BYMONTH=6;UNTIL=99991231T235959Z", H, "Europe/Berlin"), Z(2026, 1, 1),
     Z(2027, 1, 1), [(Z(2026, 5, 31, 22), Z(2026, 5, 31, 23))]),  # June 1st, 00:00 CEST
    ("UNTIL in UTC, on the zone's clock",
     recurring("FREQ=DAILY;BYHOUR=9;UNTIL=20260102T080000Z", H, "Europe/Berlin"), Z(2026, 1, 1),
     Z(2026, 2, 1), [(Z(2026, 1, 1, 8), Z(2026, 1, 1, 9)), (Z(2026, 1, 2, 8), Z(2026, 1, 2, 9))]),
    ("nothing before starts_at", recurring("0 3 * * *", H, start=L(2026, 1, 2)), Z(2026, 1, 1), Z(2026, 1, 3),
     [(Z(2026, 1, 2, 3), Z(2026, 1, 2, 4))]),
    ("last weekday of the month", recurring("FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1;BYHOUR=22", 2 * H),
     Z(2026, 1, 1), Z(2026, 4, 1),
     [(Z(2026, 1, 30, 22), Z(2026, 1, 31, 0)), (Z(2026, 2, 27, 22), Z(2026, 2, 28, 0)),
      (Z(2026, 3, 31, 22), Z(2026, 4, 1, 0))]),
    ("empty range", recurring("FREQ=DAILY"), Z(2026, 2, 1), Z(2026, 2, 1), []),
]  # fmt: skip


@pytest.mark.parametrize(
    ("rule", "start", "end", "expected"), [r[1:] for r in SPANS], ids=[r[0] for r in SPANS]
)
def test_occurrences(rule: Rule, start: datetime, end: datetime, expected: list[Span]) -> None:
    assert occurrences(rule, start, end) == expected


def test_an_instant_as_starts_at_is_read_on_the_zones_clock() -> None:
    rule = Rule(Z(2026, 6, 1, 0), rrule="FREQ=DAILY", duration_seconds=60, timezone="Europe/Berlin")
    assert rule.starts_at == L(2026, 6, 1, 2)  # CEST
    assert occurrences(rule, Z(2026, 6, 1), Z(2026, 6, 2)) == [(Z(2026, 6, 1, 0), Z(2026, 6, 1, 0, 1))]


LONG_AGO = [
    "FREQ=MINUTELY;INTERVAL=7",
    "FREQ=HOURLY;INTERVAL=5;BYMINUTE=15",
    "FREQ=DAILY;INTERVAL=3;BYHOUR=4",
    "FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,TU",
    "FREQ=MONTHLY;INTERVAL=5;BYMONTHDAY=1,15",
    "FREQ=MONTHLY;BYDAY=-1FR",
    "FREQ=YEARLY;INTERVAL=3;BYMONTH=6;BYDAY=1SA",
]


@pytest.mark.parametrize("body", LONG_AGO)
def test_a_rule_that_began_years_ago_opens_where_dateutil_says(body: str) -> None:
    """The rule is read from a DTSTART moved forward by whole periods (cheap for old windows);
    the starts must be those of the rule read from its real DTSTART."""
    # Years ago; months for a rule every 7 minutes (dateutil reads it from there, here, slowly).
    start = L(2025, 11, 17, 5, 41) if "MINUTELY" in body else L(2011, 3, 17, 5, 41)
    rule = recurring(body, M, start=start)
    months = 6 if "MINUTELY" not in body else 0  # under MAX_OCCURRENCES: two days of minutes
    low, high = L(2026, 2, 1), L(2026, 2 + months, 3)
    expected = [e for e in rrulestr(body, dtstart=start).between(low, high, inc=True) if e < high]
    assert expected
    found = occurrences(rule, low.replace(tzinfo=UTC), high.replace(tzinfo=UTC))
    assert [s for s, _ in found] == [e.replace(tzinfo=UTC) for e in expected]


def test_the_occurrences_of_one_call_are_capped() -> None:
    """A window every minute over 90 days is 129,600 occurrences: one call reads at most
    MAX_OCCURRENCES (a day's worth of them before the range), and stops there quickly."""
    rule = recurring("* * * * *", M)
    began = time.process_time()  # CPU: what a shared machine's load leaves alone
    spans = occurrences(rule, Z(2026, 1, 1), Z(2026, 4, 1))
    assert time.process_time() - began < 2
    assert len(spans) == 1
    start, end = spans[0]
    assert start == Z(2026, 1, 1)
    assert end - start == MAX_OCCURRENCES * M  # starts_at is the range's start: nothing read before
    assert end > Z(2026, 1, 6)
    rrule = recurring("FREQ=MINUTELY", M)
    assert occurrences(rrule, Z(2026, 1, 1), Z(2026, 4, 1)) == spans


# -- now and next ------------------------------------------------------------------------------------

WEEKLY = recurring("FREQ=WEEKLY;BYDAY=SU;BYHOUR=2", 2 * H, "Europe/Berlin")  # Sundays 01:00-03:00Z in winter
ONE_OFF = Rule(Z(2026, 5, 1, 10), Z(2026, 5, 1, 12))
CHAINED = recurring("0 1-3 * * *", H)  # 01:00-04:00 as one span

NOW_AND_NEXT = [
    # name, rule, at, active_at, next_after
    ("before a weekly window", WEEKLY, Z(2026, 1, 4, 0, 59), None, (Z(2026, 1, 4, 1), Z(2026, 1, 4, 3))),
    ("at its start", WEEKLY, Z(2026, 1, 4, 1), (Z(2026, 1, 4, 1), Z(2026, 1, 4, 3)),
     (Z(2026, 1, 11, 1), Z(2026, 1, 11, 3))),
    ("at its end: closed", WEEKLY, Z(2026, 1, 4, 3), None, (Z(2026, 1, 11, 1), Z(2026, 1, 11, 3))),
    ("one-off, before", ONE_OFF, Z(2026, 5, 1), None, (Z(2026, 5, 1, 10), Z(2026, 5, 1, 12))),
    ("one-off, inside", ONE_OFF, Z(2026, 5, 1, 11), (Z(2026, 5, 1, 10), Z(2026, 5, 1, 12)), None),
    ("one-off, after", ONE_OFF, Z(2026, 5, 1, 12), None, None),
    ("inside a chain: the merged span", CHAINED, Z(2026, 2, 1, 2, 30), (Z(2026, 2, 1, 1), Z(2026, 2, 1, 4)),
     (Z(2026, 2, 2, 1), Z(2026, 2, 2, 4))),
    ("late in a chain: read back to its start", CHAINED, Z(2026, 2, 1, 3, 30),
     (Z(2026, 2, 1, 1), Z(2026, 2, 1, 4)), (Z(2026, 2, 2, 1), Z(2026, 2, 2, 4))),
    ("after COUNT ran out", recurring("FREQ=DAILY;COUNT=1"), Z(2026, 1, 1, 1), None, None),
]  # fmt: skip


@pytest.mark.parametrize(("rule", "at", "now", "following"), [r[1:] for r in NOW_AND_NEXT],
                         ids=[r[0] for r in NOW_AND_NEXT])  # fmt: skip
def test_active_at_and_next_after(rule: Rule, at: datetime, now: Span | None, following: Span | None) -> None:
    assert active_at(rule, at) == now
    assert next_after(rule, at) == following


def test_a_run_that_never_ends_is_read_back_a_bounded_way() -> None:
    """Every minute for 5 minutes, since January: one endless run; its start is looked for
    LOOK_BACK times, each about a duration further back, and its end where reading stops."""
    rule = recurring("* * * * *", 5 * M)
    at = Z(2026, 6, 1, 12)
    began = time.process_time()  # CPU: what a shared machine's load leaves alone
    start, end = active_at(rule, at) or (at, at)
    assert time.process_time() - began < 2
    assert at - (LOOK_BACK + 1) * 5 * M <= start < at - LOOK_BACK * 4 * M
    assert end > at + D
    assert next_after(rule, at) is None  # nothing opens inside an open run


def test_the_first_start_of_each_kind() -> None:
    assert ONE_OFF.first() == Z(2026, 5, 1, 10)
    assert WEEKLY.check().first() == Z(2026, 1, 4, 1)
    assert recurring("0 12 * * 1").first() == Z(2026, 1, 5, 12)
    assert recurring("FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO").first() == Z(
        2044, 2, 29
    )  # rare, not never
    assert [r.kind for r in (ONE_OFF, WEEKLY, CHAINED)] == ["once", "rrule", "cron"]


def test_rules_from_rows() -> None:
    once = {"kind": "once", "starts_at": Z(2026, 5, 1), "ends_at": Z(2026, 5, 2)}
    weekly = {"kind": "rrule", "rrule": "FREQ=WEEKLY", "cron": None, "dtstart": L(2026, 1, 1),
              "duration_seconds": 60, "timezone": "Europe/Berlin"}  # fmt: skip
    assert Rule.from_row(once) == Rule(Z(2026, 5, 1), Z(2026, 5, 2))
    assert Rule.from_row(weekly) == Rule(L(2026, 1, 1), rrule="FREQ=WEEKLY", duration_seconds=60,
                                         timezone="Europe/Berlin")  # fmt: skip
