"""A report's period: a calendar month (``2026-10``), a quarter (``2026-Q4``) or a range
(``from``/``to``), cut in the account's time zone, as UTC instants [start, end).

A month or quarter runs from local midnight on its first day to local midnight on the first day
of the next one, so October 2026 in Europe/Berlin is 745 hours long (the clocks go back on the
25th) and March 2026 743. A range's ends are ISO 8601: a date (``2026-10-01``) or a time without
an offset is read in the account's time zone, one with an offset (``Z``, ``+02:00``) as given.
No period given is the last whole month. A bad value is a :class:`PeriodError` naming the
parameter (the domain answers it 400).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from monitor.maintenance import to_utc

MAX_DAYS = 400  # a year and a bit: a quarter, a year, a contract's odd range
FIRST_YEAR, LAST_YEAR = 1970, 9998
_MONTH = re.compile(r"^(\d{4})-(\d{2})$")
_QUARTER = re.compile(r"^(\d{4})-[Qq]([1-4])$")


class PeriodError(ValueError):
    """A period parameter that cannot be read; ``field`` names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


@dataclass(frozen=True)
class Period:
    kind: str  # "month", "quarter" or "range"
    label: str  # "2026-10", "2026-Q4", or the range's local ends
    start: datetime  # UTC, inclusive
    end: datetime  # UTC, exclusive
    timezone: str

    @property
    def hours(self) -> float:
        return (self.end - self.start).total_seconds() / 3600


def _local_midnight(day: date, tz: ZoneInfo) -> datetime:
    return to_utc(datetime(day.year, day.month, day.day), tz)


def _months(year: int, month: int, count: int, tz: ZoneInfo) -> tuple[datetime, datetime]:
    after = year * 12 + (month - 1) + count
    return _local_midnight(date(year, month, 1), tz), _local_midnight(
        date(after // 12, after % 12 + 1, 1), tz
    )


def _year(raw: str, field: str) -> int:
    year = int(raw)
    if not FIRST_YEAR <= year <= LAST_YEAR:
        raise PeriodError(field, f"the year must be between {FIRST_YEAR} and {LAST_YEAR}")
    return year


def month(raw: str, tz: ZoneInfo) -> Period:
    found = _MONTH.match(raw)
    if not found or not 1 <= int(found.group(2)) <= 12:
        raise PeriodError("month", "must look like 2026-10 (a year and a month, 01 to 12)")
    year, number = _year(found.group(1), "month"), int(found.group(2))
    start, end = _months(year, number, 1, tz)
    return Period("month", f"{year:04d}-{number:02d}", start, end, tz.key)


def quarter(raw: str, tz: ZoneInfo) -> Period:
    found = _QUARTER.match(raw)
    if not found:
        raise PeriodError("quarter", "must look like 2026-Q4 (a year and a quarter, Q1 to Q4)")
    year, number = _year(found.group(1), "quarter"), int(found.group(2))
    start, end = _months(year, 3 * number - 2, 3, tz)
    return Period("quarter", f"{year:04d}-Q{number}", start, end, tz.key)


def instant(raw: str, field: str, tz: ZoneInfo) -> datetime:
    """An ISO 8601 date or time as UTC; without an offset, in ``tz``."""
    try:
        value = datetime.fromisoformat(raw.strip().replace(" ", "+") if "T" in raw else raw.strip())
    except ValueError:
        raise PeriodError(
            field, "must be an ISO 8601 date or time (2026-10-01, 2026-10-01T00:00:00Z)"
        ) from None
    if not FIRST_YEAR <= value.year <= LAST_YEAR:
        raise PeriodError(field, f"the year must be between {FIRST_YEAR} and {LAST_YEAR}")
    if value.tzinfo is None:
        return to_utc(value, tz)
    return value.astimezone(UTC)


def span(start_raw: str | None, end_raw: str | None, tz: ZoneInfo) -> Period:
    if not start_raw:
        raise PeriodError("from", "give from with to")
    if not end_raw:
        raise PeriodError("to", "give to with from")
    start, end = instant(start_raw, "from", tz), instant(end_raw, "to", tz)
    if end <= start:
        raise PeriodError("to", "must be after from (the range ends before it starts)")
    label = f"{start.astimezone(tz).isoformat()} to {end.astimezone(tz).isoformat()}"
    return Period("range", label, start, end, tz.key)


def last_month(now: datetime, tz: ZoneInfo) -> Period:
    today = now.astimezone(tz).date()
    before = today.replace(day=1) - timedelta(days=1)
    return month(f"{before.year:04d}-{before.month:02d}", tz)


def choose(
    tz: ZoneInfo,
    now: datetime,
    *,
    month_raw: str | None = None,
    quarter_raw: str | None = None,
    start_raw: str | None = None,
    end_raw: str | None = None,
) -> Period:
    """The period the parameters name (at most one of month, quarter and from/to); none: the
    last whole month before ``now``."""
    given = [name for name, value in (("month", month_raw), ("quarter", quarter_raw),
                                      ("from", start_raw or end_raw)) if value]  # fmt: skip
    if len(given) > 1:
        raise PeriodError(given[1], "give one of month, quarter or from/to")
    if month_raw:
        found = month(month_raw, tz)
    elif quarter_raw:
        found = quarter(quarter_raw, tz)
    elif start_raw or end_raw:
        found = span(start_raw, end_raw, tz)
    else:
        found = last_month(now, tz)
    if found.end - found.start > timedelta(days=MAX_DAYS):
        raise PeriodError("to" if found.kind == "range" else found.kind, f"at most {MAX_DAYS} days")
    return found
