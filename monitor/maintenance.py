"""Maintenance windows' schedules: when a window is open. Pure: no I/O, no clock.

A ``Rule`` is one-off (``starts_at`` to ``ends_at``, two instants) or recurring: start times
from an RFC 5545 RRULE (python-dateutil) or a 5-field cron expression (croniter), read on the
wall clock of an IANA time zone from ``starts_at`` on (the RRULE's DTSTART), each occurrence
lasting ``duration_seconds``. ``occurrences``, ``active_at`` and ``next_after`` answer in UTC;
occurrences that overlap or touch are merged into one span.

Wall clock and DST, the rule of RFC 5545 3.3.5 for RRULE and cron alike:

- a start the clock skips (spring forward) is read with the offset from before the gap: a
  daily 02:30 window in Europe/Berlin opens at 03:30 CEST (01:30Z) on the last Sunday of
  March; it is not skipped, and it does not move to 03:00;
- a start the clock shows twice (fall back) is the first of the two: 02:30 CEST (00:30Z) on
  the last Sunday of October, and not 02:30 CET as well;
- an occurrence lasts ``duration_seconds`` of real time: a 1-hour window from 02:30 on the
  fall-back night ends at 02:30 CET, by the clock on the wall.

Limits, so that no rule is costly to evaluate:

- one call of ``occurrences``, ``active_at`` or ``next_after`` reads at most
  ``MAX_OCCURRENCES`` (10,000) occurrences from the rule, counting those of the duration
  before the range asked for (and of the zone's largest DST gap, an hour); the rest are
  ignored. That is about a week of a window that opens every minute, 104 days of one every
  15 minutes, and 27 years of a daily one.
- a window lasts at most ``MAX_DURATION`` (31 days); windows recur at most once a minute
  (no FREQ=SECONDLY, no BYSECOND, 5-field cron only).
- RRULE parts that finding out whether a rule ever occurs would have to search for
  centuries are refused: BYSETPOS only with WEEKLY, MONTHLY or YEARLY, and an HOURLY or
  MINUTELY rule that picks days (BYDAY, BYMONTHDAY, BYMONTH...) has an INTERVAL that
  divides a day. Parts RFC 5545 does not allow with the rule's FREQ are refused too.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import MAXYEAR, UTC, datetime, timedelta
from functools import cache
from math import gcd
from typing import Any, Literal
from zoneinfo import ZoneInfo, available_timezones

from croniter import CroniterBadDateError, CroniterError, croniter
from dateutil.relativedelta import relativedelta
from dateutil.rrule import rrule as RRule
from dateutil.rrule import rrulestr

Span = tuple[datetime, datetime]
Kind = Literal["once", "rrule", "cron"]

MAX_DURATION = timedelta(days=31)
MAX_OCCURRENCES = 10_000
# How many times a span open at the instant asked about is read further back for its start.
LOOK_BACK = 16
# The years over which a zone's clock changes are read (its current rules repeat after).
_ZONE_YEARS = (1970, 2040)
# The most an RRULE's INTERVAL or COUNT may be.
_MAX_COUNT = 1_000_000
# No start is read past this (the arithmetic on it must stay inside datetime's range).
_LAST_LOCAL = datetime(9998, 12, 1)

_FREQS = ("MINUTELY", "HOURLY", "DAILY", "WEEKLY", "MONTHLY", "YEARLY")
_PARTS = ("FREQ", "UNTIL", "COUNT", "INTERVAL", "BYMINUTE", "BYHOUR", "BYDAY", "BYMONTHDAY", "BYYEARDAY",
          "BYWEEKNO", "BYMONTH", "BYSETPOS", "WKST")  # fmt: skip
# The parts that pick days, and (RFC 5545 3.3.10) the frequencies each may be used with.
_DAY_PARTS = {
    "BYDAY": set(_FREQS),
    "BYMONTHDAY": set(_FREQS) - {"WEEKLY"},
    "BYYEARDAY": {"MINUTELY", "HOURLY", "YEARLY"},
    "BYWEEKNO": {"YEARLY"},
    "BYMONTH": set(_FREQS),
}
# Periods in a day, of the frequencies shorter than one; in 400 years, of the longer ones.
_PER_DAY = {"MINUTELY": 1440, "HOURLY": 24}
_PERIODS_IN_400_YEARS = {"DAILY": 146_097, "WEEKLY": 20_871, "MONTHLY": 4_800, "YEARLY": 400}


class RuleError(ValueError):
    """A schedule that cannot be a window's; ``field`` names the ``Rule`` field at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@cache
def _zones() -> frozenset[str]:
    # "localtime" is whatever the host is set to: not a name a window can rely on.
    return frozenset(available_timezones() - {"localtime"})


def zone(name: str) -> ZoneInfo:
    """The IANA time zone ``name`` (``Europe/Berlin``, ``UTC``); RuleError if unknown."""
    if name not in _zones():
        raise RuleError("timezone", f"unknown time zone {name!r} (an IANA name such as Europe/Berlin or UTC)")
    return ZoneInfo(name)


@cache
def largest_gap(name: str) -> timedelta:
    """The most the clock of zone ``name`` ever jumps forward at once: an hour where DST begins,
    none in UTC, a day where a zone crossed the date line (Pacific/Apia skipped 2011-12-30).
    A start in a gap is read with the offset from before it, so it comes that much after the
    starts that follow it on the wall clock: local times are read that much earlier than the
    instant asked about, and starts are put in order over that margin. Read day by day."""
    tz = ZoneInfo(name)
    day = datetime(_ZONE_YEARS[0], 1, 1, tzinfo=UTC)
    end = datetime(_ZONE_YEARS[1], 1, 1, tzinfo=UTC)
    before = day.astimezone(tz).utcoffset() or timedelta(0)
    largest = timedelta(0)
    while day < end:
        day += timedelta(days=1)
        offset = day.astimezone(tz).utcoffset() or timedelta(0)
        largest, before = max(largest, offset - before), offset
    return largest


def to_utc(local: datetime, tz: ZoneInfo) -> datetime:
    """A wall-clock time in ``tz`` as an instant: fold 0, which is RFC 5545's reading of a time
    in a gap (the offset before it) and of one shown twice (the first)."""
    return local.replace(tzinfo=tz, fold=0).astimezone(UTC)


def to_local(instant: datetime, tz: ZoneInfo) -> datetime:
    """An instant as the (naive) wall-clock time in ``tz``."""
    return instant.astimezone(tz).replace(tzinfo=None, fold=0)


# -- RRULE ---------------------------------------------------------------------------------


def parse_rrule(text: str) -> dict[str, str]:
    """The parts of an RRULE body (``FREQ=WEEKLY;BYDAY=SU;BYHOUR=2``; an ``RRULE:`` prefix is
    allowed), upper-cased, in the order given; RuleError naming the problem."""

    def fail(message: str) -> RuleError:
        return RuleError("rrule", message)

    body = text.strip()
    if body[:6].upper() == "RRULE:":
        body = body[6:].strip()
    if not body:
        raise fail("empty: give the rule's parts, e.g. FREQ=WEEKLY;BYDAY=SU;BYHOUR=2")
    if "\n" in body or "\r" in body:
        raise fail(
            "one rule only: no line breaks, no DTSTART, RDATE or EXDATE lines (starts_at is the start)"
        )
    parts: dict[str, str] = {}
    for item in body.split(";"):
        name, equals, value = (p.strip().upper() for p in item.partition("="))
        if not equals or not name or not value:
            raise fail(f"{item.strip()!r} is not NAME=VALUE")
        if name not in _PARTS:
            if name == "BYSECOND":
                raise fail("windows start on whole minutes: BYSECOND is not supported")
            if name == "DTSTART":
                raise fail("DTSTART is not part of the rule: give it as starts_at")
            raise fail(f"unknown part {name}")
        if name in parts:
            raise fail(f"{name} given twice")
        parts[name] = value
    freq = parts.get("FREQ")
    if freq is None:
        raise fail("FREQ is required (MINUTELY, HOURLY, DAILY, WEEKLY, MONTHLY or YEARLY)")
    if freq == "SECONDLY":
        raise fail("windows recur at most once a minute: FREQ=SECONDLY is not supported")
    if freq not in _FREQS:
        raise fail(f"FREQ must be one of {', '.join(_FREQS)}")
    for name in ("INTERVAL", "COUNT"):
        value = parts.get(name, "1")
        if not (value.isascii() and value.isdigit() and 1 <= int(value) <= _MAX_COUNT):
            raise fail(f"{name} must be a whole number from 1 to {_MAX_COUNT:,}")
    if "COUNT" in parts and "UNTIL" in parts:
        raise fail("COUNT and UNTIL exclude each other")
    for name, freqs in _DAY_PARTS.items():
        if name in parts and freq not in freqs:
            raise fail(f"{name} cannot be used with FREQ={freq}")
    if "BYDAY" in parts and freq not in ("MONTHLY", "YEARLY"):
        if any(day.strip()[:1] and day.strip()[0] in "+-0123456789" for day in parts["BYDAY"].split(",")):
            raise fail(f"a numbered BYDAY (2MO, -1FR) needs FREQ=MONTHLY or YEARLY, not {freq}")
    if "BYSETPOS" in parts and freq not in ("WEEKLY", "MONTHLY", "YEARLY"):
        raise fail("BYSETPOS needs FREQ=WEEKLY, MONTHLY or YEARLY")
    interval = int(parts.get("INTERVAL", "1"))
    if freq in _PER_DAY and _DAY_PARTS.keys() & parts.keys() and _PER_DAY[freq] % interval:
        raise fail(f"FREQ={freq} with days picked needs an INTERVAL that divides a day, not {interval}")
    _build_rrule(parts, datetime(2000, 1, 1), ZoneInfo("UTC"))  # what dateutil itself refuses
    return parts


def _build_rrule(parts: dict[str, str], dtstart: datetime, tz: ZoneInfo) -> RRule:
    """The dateutil rule from ``dtstart`` (naive, on ``tz``'s wall clock). An UNTIL in UTC
    (``...Z``, as RFC 5545 wants it beside a zoned DTSTART) becomes that zone's wall-clock time."""
    values = dict(parts)
    until = values.get("UNTIL", "")
    if until.endswith("Z"):
        try:
            instant = datetime.strptime(until, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
        except ValueError:
            raise RuleError("rrule", f"UNTIL {until} is not a time like 20261231T235900Z") from None
        if instant.year >= _LAST_LOCAL.year:
            del values["UNTIL"]  # no start is read that late anyway
        else:
            values["UNTIL"] = to_local(instant, tz).strftime("%Y%m%dT%H%M%S")
    try:
        built = rrulestr(_body(values), dtstart=dtstart)
    except (ValueError, TypeError, OverflowError) as exc:
        raise RuleError("rrule", str(exc) or type(exc).__name__) from None
    if not isinstance(built, RRule):  # pragma: no cover - one line is always one rule
        raise RuleError("rrule", "one rule only")
    return built


def _rrule_step(parts: dict[str, str], dtstart: datetime) -> timedelta | relativedelta | None:
    """A whole number of the rule's periods, by which DTSTART can move forward without changing
    any later occurrence (dateutil reads every rule from its DTSTART, so a window created years
    ago would otherwise cost more every day). None when it cannot: COUNT counts from the start;
    a month's 29th-31st and February 29th are not on every period."""
    if "COUNT" in parts:
        return None
    interval = int(parts.get("INTERVAL", "1"))
    freq = parts["FREQ"]
    if freq == "MINUTELY":
        return timedelta(minutes=interval)
    if freq == "HOURLY":
        return timedelta(hours=interval)
    if freq == "DAILY":
        return timedelta(days=interval)
    if freq == "WEEKLY":
        return timedelta(weeks=interval)
    if freq == "MONTHLY" and dtstart.day <= 28:
        return relativedelta(months=interval)
    if freq == "YEARLY" and (dtstart.month, dtstart.day) != (2, 29):
        return relativedelta(years=interval)
    return None


def _shifted(dtstart: datetime, years: int) -> datetime:
    """``dtstart`` moved forward by whole 400-year cycles, as far as leaves ``years`` years before
    datetime's last: the Gregorian calendar, weekdays included, repeats every 400 years
    (146,097 days, 20,871 weeks), so a rule reads the same from there."""
    cycles = (MAXYEAR - 1 - years - dtstart.year) // 400
    return dtstart.replace(year=dtstart.year + 400 * cycles) if cycles > 0 else dtstart


def _ever(parts: dict[str, str], dtstart: datetime) -> bool:
    """Whether the rule ever starts (UNTIL and COUNT aside). dateutil looks for a start up to the
    year 9999, millions of steps for a rule that has none; read from the last cycles before
    then instead, the answer is the same and the steps are bounded: the days the rule picks
    (BY* parts), read yearly over 400 years; then the rule itself over the years in which its
    INTERVAL's steps through the cycle repeat (400 x interval / gcd(interval, periods in 400
    years)), at most 146,097 steps (a DAILY rule)."""
    picked = {k: v for k, v in parts.items() if k in _DAY_PARTS or k == "WKST"}
    if picked.keys() - {"WKST"}:
        if parts["FREQ"] == "MONTHLY" and "BYMONTH" not in picked:
            picked["BYMONTH"] = ",".join(str(m) for m in range(1, 13))  # a numbered BYDAY counts in months
        first_day = _shifted(datetime(dtstart.year, 1, 1), 401)
        try:
            yearly = rrulestr(_body({"FREQ": "YEARLY", **picked}), dtstart=first_day)
        except ValueError:
            yearly = None  # not a question this reading can answer; the rule's own will
        if yearly is not None and yearly.after(first_day, inc=True) is None:
            return False
    free = {k: v for k, v in parts.items() if k not in ("UNTIL", "COUNT")}
    interval = int(free.get("INTERVAL", "1"))
    periods = _PERIODS_IN_400_YEARS.get(free["FREQ"])
    start = _shifted(dtstart, 400 * (interval // gcd(interval, periods) if periods else 1) + 1)
    return rrulestr(_body(free), dtstart=start).after(start, inc=True) is not None


def _body(parts: dict[str, str]) -> str:
    return ";".join(f"{k}={v}" for k, v in parts.items())


# -- cron ------------------------------------------------------------------------------------


def parse_cron(text: str) -> str:
    """A 5-field cron expression (minute hour day-of-month month day-of-week), whitespace made
    single; RuleError naming the problem. Day of month and day of week both restricted means
    either (as in Vixie cron)."""
    fields = text.split()
    if len(fields) != 5:
        raise RuleError("cron", f"{len(fields)} fields: give 5 (minute hour day-of-month month day-of-week)")
    expression = " ".join(fields)
    try:
        croniter(expression, datetime(2000, 1, 1))
    except (CroniterError, ValueError, KeyError, TypeError) as exc:
        raise RuleError("cron", str(exc) or type(exc).__name__) from None
    return expression


# -- the rule --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    """A window's schedule, checked when made (RuleError, a ValueError, naming the field).

    One-off: ``starts_at`` and ``ends_at``, instants (with a time zone). Recurring: ``rrule``
    or ``cron``, ``duration_seconds`` (1 s to 31 days) and ``timezone``, from ``starts_at``
    on: a wall-clock time in that zone (naive; an instant given is read on the zone's clock).
    Whether a recurring rule ever occurs is ``first()``; ``check()`` refuses one that never does.
    """

    starts_at: datetime
    ends_at: datetime | None = None
    rrule: str | None = None
    cron: str | None = None
    duration_seconds: int | None = None
    timezone: str = "UTC"
    _tz: ZoneInfo = field(init=False, repr=False, compare=False)
    _parts: dict[str, str] = field(init=False, repr=False, compare=False)
    _rule: Any = field(init=False, repr=False, compare=False)
    _duration: timedelta = field(init=False, repr=False, compare=False)
    _step: timedelta | relativedelta | None = field(init=False, repr=False, compare=False, default=None)
    # Whether an RRULE ever starts (found on first use: usually at once).
    _occurs: bool | None = field(init=False, repr=False, compare=False, default=None)

    def __post_init__(self) -> None:
        if self.rrule is not None and self.cron is not None:
            raise RuleError("cron", "give rrule or cron, not both")
        if self.ends_at is not None:
            if self.rrule is not None or self.cron is not None or self.duration_seconds is not None:
                raise RuleError("ends_at", "a one-off window has ends_at; a recurring one a duration")
            for name in ("starts_at", "ends_at"):
                if getattr(self, name).tzinfo is None:
                    raise RuleError(name, "must carry a time zone (e.g. Z)")
            if self.ends_at <= self.starts_at:
                raise RuleError("ends_at", "must be after starts_at")
            self._set(_tz=ZoneInfo("UTC"), _parts={}, _rule=None, _duration=self.ends_at - self.starts_at)
            return
        if self.rrule is None and self.cron is None:
            raise RuleError("rrule", "give ends_at (one-off), or rrule or cron (recurring)")
        seconds = self.duration_seconds
        if seconds is None or isinstance(seconds, bool) or not 0 < seconds <= MAX_DURATION.total_seconds():
            raise RuleError("duration_seconds", f"must be from 1 s to {MAX_DURATION.days} days")
        tz = zone(self.timezone)
        if self.starts_at.tzinfo is not None:
            self._set(starts_at=to_local(self.starts_at, tz))
        if not datetime(1970, 1, 1) <= self.starts_at <= _LAST_LOCAL:
            raise RuleError("starts_at", "must be between 1970 and 9998")
        self._set(_tz=tz, _duration=timedelta(seconds=seconds))
        if self.rrule is not None:
            parts = parse_rrule(self.rrule)
            self._set(rrule=_body(parts), _parts=parts,
                      _rule=_build_rrule(parts, self.starts_at, tz),
                      _step=_rrule_step(parts, self.starts_at))  # fmt: skip
        else:
            self._set(cron=parse_cron(self.cron or ""), _parts={}, _rule=None)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Rule:
        """The rule of a ``maintenance_windows`` row."""
        if row["kind"] == "once":
            return cls(row["starts_at"], row["ends_at"])
        return cls(row["dtstart"], rrule=row["rrule"], cron=row["cron"],
                   duration_seconds=row["duration_seconds"], timezone=row["timezone"])  # fmt: skip

    def _set(self, **values: Any) -> None:
        for name, value in values.items():
            object.__setattr__(self, name, value)

    @property
    def kind(self) -> Kind:
        return "once" if self.ends_at is not None else ("rrule" if self.rrule is not None else "cron")

    @property
    def duration(self) -> timedelta:
        return self._duration

    @property
    def tz(self) -> ZoneInfo:
        return self._tz

    def first(self) -> datetime | None:
        """The rule's first start (UTC), or None if it never starts. A rule that never starts
        is found so in a bounded number of steps (``_ever``): a few milliseconds for days that
        do not exist (``BYMONTH=2;BYMONTHDAY=30``), at most about half a second for an
        INTERVAL that never meets its days (``FREQ=DAILY;INTERVAL=7;BYDAY=TU`` from a Thursday)."""
        if self.kind == "once":
            return self.starts_at
        start = next(self._local_starts(self.starts_at), None)
        return to_utc(start, self._tz) if start is not None else None

    def check(self) -> Rule:
        """The rule, if it ever starts; RuleError naming rrule or cron otherwise."""
        if self.first() is None:
            where = "rrule" if self.kind == "rrule" else "cron"
            raise RuleError(where, f"never occurs from starts_at {self.starts_at.isoformat()} on")
        return self

    # -- iteration ----------------------------------------------------------------------------

    def _local_starts(self, cursor: datetime) -> Iterator[datetime]:
        """Wall-clock starts at or after ``cursor`` (naive), in order, none before starts_at."""
        cursor = max(cursor, self.starts_at)
        if self.kind == "rrule":
            if self._occurs is None:
                self._set(_occurs=_ever(self._parts, self.starts_at))
            if self._occurs:  # else the rule's own iteration would search to the year 9999
                yield from self._rrule_from(cursor).xafter(cursor, inc=True)
            return
        try:
            starts = croniter(self.cron or "", cursor - timedelta(microseconds=1))
            while True:
                yield starts.get_next(datetime)
        except (CroniterBadDateError, OverflowError, ValueError):
            return  # no start within croniter's search (50 years), or past the year 9999

    def _rrule_from(self, cursor: datetime) -> RRule:
        rule: RRule = self._rule
        step = self._step
        if step is None or cursor <= self.starts_at:
            return rule
        if isinstance(step, timedelta):
            jumped = self.starts_at + ((cursor - self.starts_at) // step) * step
        else:
            months = step.years * 12 + step.months
            behind = (cursor.year - self.starts_at.year) * 12 + cursor.month - self.starts_at.month
            periods = max(0, behind // months - 1)
            jumped = self.starts_at + relativedelta(months=periods * months)
        return rule.replace(dtstart=jumped) if jumped > self.starts_at else rule

    def _raw(self, after: datetime) -> Iterator[Span]:
        """Occurrences in order of start (UTC), from every one that may still be open at
        ``after``; at most MAX_OCCURRENCES read."""
        if self.ends_at is not None:
            yield self.starts_at, self.ends_at
            return
        tz, duration = self._tz, self._duration
        slack = largest_gap(self.timezone)
        cursor = to_local(after - duration, tz) - slack
        waiting: list[datetime] = []
        last: datetime | None = None
        for count, local in enumerate(self._local_starts(cursor)):
            if count >= MAX_OCCURRENCES or local > _LAST_LOCAL:
                break
            start = to_utc(local, tz)
            heapq.heappush(waiting, start)
            # No later wall-clock start is more than ``slack`` before this one as an instant.
            while waiting and waiting[0] < start - slack:
                first = heapq.heappop(waiting)
                if first != last:
                    yield first, first + duration
                last = first
        while waiting:
            first = heapq.heappop(waiting)
            if first != last:
                yield first, first + duration
            last = first

    def _merged(self, after: datetime) -> Iterator[Span]:
        current: Span | None = None
        for start, end in self._raw(after):
            if current is None:
                current = (start, end)
            elif start <= current[1]:
                current = (current[0], max(current[1], end))
            else:
                yield current
                current = (start, end)
        if current is not None:
            yield current

    def spans(self, after: datetime) -> Iterator[Span]:
        """Merged spans in order, from those that may still be open at ``after``. Occurrences are
        read from about a duration before ``after``; when the first span began with one read
        there, it may go further back (occurrences that overlap each other), and it is read
        back again, at most ``LOOK_BACK`` times, each a duration or more further back."""
        merged = self._merged(after)
        first = next(merged, None)
        if first is None:
            return
        start, end = first
        for _ in range(LOOK_BACK if start <= after else 0):
            earlier = self._run_reaching(start)
            if earlier >= start:
                break
            start = earlier
        yield start, end
        yield from merged

    def _run_reaching(self, start: datetime) -> datetime:
        """Where the run of overlapping occurrences that reaches ``start`` begins, as far as
        the occurrences read from a duration (and the zone's gap) before it tell."""
        run: Span | None = None
        for s, e in self._raw(start):
            if s > start:
                break
            run = (run[0], max(run[1], e)) if run is not None and s <= run[1] else (s, e)
        return run[0] if run is not None and run[1] >= start else start


def occurrences(rule: Rule, start: datetime, end: datetime) -> list[Span]:
    """The rule's spans (UTC, merged) that overlap [start, end), whole (not cut to the range)."""
    found: list[Span] = []
    if end <= start:
        return found
    for span_start, span_end in rule.spans(start):
        if span_start >= end:
            break
        if span_end > start:
            found.append((span_start, span_end))
    return found


def active_at(rule: Rule, at: datetime) -> Span | None:
    """The span open at ``at`` (start <= at < end), or None."""
    for start, end in rule.spans(at):
        if end > at:
            return (start, end) if start <= at else None
    return None


def next_after(rule: Rule, at: datetime) -> Span | None:
    """The first span that opens after ``at`` (not the one open at ``at``), or None."""
    for start, end in rule.spans(at):
        if start > at:
            return start, end
    return None
