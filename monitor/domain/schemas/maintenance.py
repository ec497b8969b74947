"""Maintenance windows: the bodies (validated here, field by field) and the answers (described
for the OpenAPI document).

A window's schedule is ``once`` (``from``, ``to``) or ``recurring`` (``rrule`` or ``cron``,
``duration_minutes``, ``timezone``, ``starts_at``); what only the whole schedule can tell (a
rule that never occurs) is ``monitor.maintenance``'s, checked by ``monitor.domain.maintenance``.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AwareDatetime,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    ValidationInfo,
    field_validator,
)

from monitor.domain.schemas.common import Body, MonitorId, Name, Out, TagName
from monitor.maintenance import MAX_DURATION, RuleError, parse_cron, parse_rrule, zone

MAX_DURATION_MINUTES = int(MAX_DURATION.total_seconds() // 60)
MAX_MONITOR_IDS = 1000
MAX_TAGS = 20
# A window's public text (Markdown, as incident posts take it), and how far ahead it is announced.
MAX_PUBLIC_TEXT = 2000
MAX_ANNOUNCE_HOURS = 720
DEFAULT_ANNOUNCE_HOURS = 24
_PUBLIC_DOC = (
    "what the status pages that show its monitors tell visitors (plain text or Markdown, as incident "
    "posts take it; rendered safely); null: the window is announced by its name only"
)
_ANNOUNCE_DOC = (
    "how many hours before each occurrence its pages announce it (with a public_text); 0: only while it runs"
)
# A wall-clock time in the window's zone, to the second; an offset (or Z) makes it an instant,
# which is then read on the zone's clock.
LOCAL_TIME = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?(Z|[+-]\d{2}:\d{2})?$"
_LOCAL_TIME = re.compile(LOCAL_TIME)
LOCAL_SHOWN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$"
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(9999, 1, 1, tzinfo=UTC)


def _text(value: Any) -> Any:
    # A body is read as Python values: a number would pass as a Unix time.
    if not isinstance(value, str):
        raise ValueError("must be an RFC 3339 time, e.g. 2026-05-01T22:00:00Z")
    return value


Instant = Annotated[AwareDatetime, BeforeValidator(_text), Field(description="RFC 3339, with an offset or Z")]

_RRULE_DOC = (
    "an RFC 5545 RRULE body, e.g. FREQ=WEEKLY;BYDAY=SU;BYHOUR=2 (no DTSTART: that is starts_at); "
    "at most once a minute, no BYSECOND; an UNTIL in UTC (…Z) or on the zone's clock"
)
_CRON_DOC = "5 fields: minute hour day-of-month month day-of-week, e.g. 0 2 * * 0"
_STARTS_DOC = (
    "when the recurrence begins, on the zone's clock (2026-01-04T02:00); it is the RRULE's DTSTART, "
    "whose time and weekday fill in what the rule leaves out; default: midnight of the day the window "
    "is made, in its zone"
)


def _in_range(value: datetime) -> datetime:
    if not EARLIEST <= value <= LATEST:
        raise ValueError("must be between 1970-01-01 and 9999-01-01")
    return value


class OnceSchedule(Body):
    """A one-off window: from ``from`` to ``to``."""

    model_config = ConfigDict(populate_by_name=True)

    from_: Instant = Field(alias="from")
    to: Instant = Field(description="after from")

    @field_validator("from_", "to")
    @classmethod
    def _range(cls, value: datetime) -> datetime:
        return _in_range(value)

    @field_validator("to")
    @classmethod
    def _after(cls, value: datetime, info: ValidationInfo) -> datetime:
        start = info.data.get("from_")
        if start is not None and value <= start:
            raise ValueError("must be after from")
        return value


class RecurringSchedule(Body):
    """A window that recurs: ``rrule`` or ``cron`` (one of the two) gives the start times on the
    wall clock of ``timezone``; each occurrence lasts ``duration_minutes``."""

    rrule: str | None = Field(None, min_length=1, max_length=500, description=_RRULE_DOC)
    cron: str | None = Field(None, min_length=1, max_length=200, description=_CRON_DOC)
    duration_minutes: StrictInt = Field(
        ge=1, le=MAX_DURATION_MINUTES, description="how long each occurrence lasts"
    )
    timezone: str = Field(
        "UTC", min_length=1, max_length=64, description="an IANA time zone, e.g. Europe/Berlin"
    )
    starts_at: str | None = Field(None, pattern=LOCAL_TIME, description=_STARTS_DOC)

    @field_validator("rrule")
    @classmethod
    def _rrule(cls, value: str | None) -> str | None:
        if value is None:
            return None
        return ";".join(f"{k}={v}" for k, v in _rule_check(parse_rrule, value).items())

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str | None) -> str | None:
        return None if value is None else _rule_check(parse_cron, value)

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, value: str) -> str:
        _rule_check(zone, value)
        return value

    @field_validator("starts_at")
    @classmethod
    def _starts_at(cls, value: str | None) -> str | None:
        if value is not None:
            parse_local(value)
        return value


def _rule_check(check: Any, value: str) -> Any:
    try:
        return check(value)
    except RuleError as exc:
        raise ValueError(str(exc)) from None


def parse_local(value: str) -> datetime:
    """``starts_at`` as given: naive (a wall-clock time) or aware (an instant)."""
    if not _LOCAL_TIME.match(value):
        raise ValueError("must look like 2026-01-04T02:00 (a time on the zone's clock)")
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError("is not a date and time that exists") from None
    if not 1970 <= parsed.year <= 9998:
        raise ValueError("must be between 1970 and 9998")
    return parsed


def blank_is_none(value: Any) -> Any:
    """A public text that is blank is none: a form's empty field, or a file's ""."""
    if isinstance(value, str) and not value.strip():
        return None
    return value


PublicText = Annotated[str, Field(min_length=1, max_length=MAX_PUBLIC_TEXT)]
AnnounceHours = Annotated[StrictInt, Field(ge=0, le=MAX_ANNOUNCE_HOURS)]


class MaintenanceCreate(Body):
    """A maintenance window: ``once`` or ``recurring`` (one of the two), and the monitors it
    applies to, by id and by tag (those of the account with any of the tags). Inside a window
    checks go on and are stored, no down or reminder alert is sent, and the time is left out
    of uptime."""

    name: Name
    once: OnceSchedule | None = None
    recurring: RecurringSchedule | None = None
    monitor_ids: list[MonitorId] = Field(default_factory=list, max_length=MAX_MONITOR_IDS)
    tags: list[TagName] = Field(default_factory=list, max_length=MAX_TAGS, description="any of them")
    notify: StrictBool = Field(False, description="tell the monitors' channels when it opens and closes")
    public_text: PublicText | None = Field(None, description=_PUBLIC_DOC)
    announce_hours: AnnounceHours = Field(DEFAULT_ANNOUNCE_HOURS, description=_ANNOUNCE_DOC)

    @field_validator("public_text", mode="before")
    @classmethod
    def _blank(cls, value: Any) -> Any:
        return blank_is_none(value)


class MaintenancePatch(Body):
    """Only the fields given change; ``once`` or ``recurring`` replaces the whole schedule."""

    name: Name | None = None
    once: OnceSchedule | None = None
    recurring: RecurringSchedule | None = None
    monitor_ids: list[MonitorId] | None = Field(None, max_length=MAX_MONITOR_IDS)
    tags: list[TagName] | None = Field(None, max_length=MAX_TAGS)
    notify: StrictBool | None = None
    public_text: PublicText | None = Field(None, description=f"{_PUBLIC_DOC}; null removes it")
    announce_hours: AnnounceHours | None = None

    @field_validator("public_text", mode="before")
    @classmethod
    def _blank(cls, value: Any) -> Any:
        return blank_is_none(value)

    @field_validator(
        "name", "once", "recurring", "monitor_ids", "tags", "notify", "announce_hours", mode="before"
    )
    @classmethod
    def _not_null(cls, value: Any) -> Any:
        if value is None:
            raise ValueError("may not be null")
        return value


class MaintenancePreview(Body):
    """A schedule to try before saving it: ``once`` or ``recurring`` (one of the two), as a
    window takes them, checked as a window's is."""

    once: OnceSchedule | None = None
    recurring: RecurringSchedule | None = None
    count: StrictInt = Field(5, ge=1, le=20, description="how many spans to list")
    shown_in: str | None = Field(
        None, min_length=1, max_length=64,
        description="an IANA zone to give each span's local times in; default: the rule's own (UTC for once)",
    )  # fmt: skip

    @field_validator("shown_in")
    @classmethod
    def _zone(cls, value: str | None) -> str | None:
        if value is not None:
            _rule_check(zone, value)
        return value


# -- answers -----------------------------------------------------------------------------------


class Occurrence(Out):
    """One span of a window, merged with any of its occurrences that overlap it."""

    model_config = ConfigDict(populate_by_name=True)

    from_: datetime = Field(alias="from")
    to: datetime


class OnceShown(Occurrence):
    """A one-off window's span."""


class RecurringShown(Out):
    rrule: str | None = Field(description="the RRULE as stored (parts upper-cased); null for cron")
    cron: str | None = Field(description="null for an RRULE")
    duration_minutes: int
    timezone: str
    starts_at: str = Field(pattern=LOCAL_SHOWN, description="the first start, on the zone's clock")


class MaintenanceWindow(Out):
    id: int
    name: str
    kind: Literal["once", "rrule", "cron"]
    once: OnceShown | None = Field(description="the span of a one-off window; null for a recurring one")
    recurring: RecurringShown | None = Field(description="the rule of a recurring window; null for a one-off")
    monitor_ids: list[int]
    tags: list[str]
    notify: bool
    public_text: str | None = Field(description=_PUBLIC_DOC)
    announce_hours: int = Field(description=_ANNOUNCE_DOC)
    active_now: bool
    current: Occurrence | None = Field(description="the span open now, if any")
    next: Occurrence | None = Field(description="the next span to open after now, if any")
    created_at: datetime
    updated_at: datetime


class MaintenanceWindowList(Out):
    items: list[MaintenanceWindow]
    next_cursor: str | None = Field(description="pass as ?cursor= for the next page; null on the last")


class MonitorWindow(Out):
    """A window that applies to the monitor (by its id or one of its tags)."""

    id: int
    name: str
    active_now: bool
    current: Occurrence | None
    next: Occurrence | None


class SummaryWindow(Out):
    model_config = ConfigDict(populate_by_name=True)

    id: int
    name: str
    from_: datetime = Field(alias="from")
    to: datetime
    monitor_ids: list[int]
    tags: list[str]


class SummaryMaintenance(Out):
    active: list[SummaryWindow] = Field(description="the windows open now, closing first first")
    upcoming: list[SummaryWindow] = Field(
        description="the next span of each window not open now, soonest first"
    )


class PreviewSpan(Occurrence):
    local_from: str = Field(description="from, on the clock of timezone (YYYY-MM-DDTHH:MM)")
    local_to: str = Field(description="to, on the clock of timezone")
    timezone: str


class MaintenancePreviewAnswer(Out):
    items: list[PreviewSpan] = Field(
        description="the spans still to end, soonest first (the one open now first)"
    )
