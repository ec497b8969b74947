"""Heartbeat (push) monitors: the user's job calls a secret URL; silence past its deadline is down.

No outside request can see a backup that did not run or a queue worker that hung; the job
itself can say so. As in Healthchecks.io, a heartbeat monitor gets a URL of its own,
``/ping/<token>`` (``new_token``: 192 random bits, nothing else of the account in it), that the
job calls with GET or POST when it succeeds, ``/ping/<token>/start`` when it begins (so the next
success reports how long the run took) and ``/ping/<token>/fail`` when it fails. A POST body of
up to ``MAX_BODY_BYTES`` (a log tail, an error) is kept with the result.

The schedule is ``interval_seconds`` (the job runs every so often) or a ``cron`` expression in
a ``timezone`` (the job runs at those times), plus ``grace_seconds`` (how late it may be):

    deadline after a ping at t = (t + interval, or the first cron time after t + 1 min) + grace

(the minute, at most the grace: a ping a little before its run's time is that run's).

Each missed deadline is one failing result ("no ping since ..."); further misses follow every
interval (or cron time) while the job stays silent, so reminders and uptime see the outage as
they see a failing check. A ping is an ok result, a ``/fail`` a failing one; ``/start`` is not a
result (a job that starts is neither up nor down), and it does not move the deadline.

Pings reach the scheduler through the ``pings`` table (sql/012): the api inserts one row per
ping, the scheduler turns rows into results and deletes them in the transaction that writes
those results (``scheduler/heartbeat.py``). The schedule here is pure.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, ClassVar
from zoneinfo import ZoneInfo

from croniter import croniter
from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationInfo, field_validator

from monitor.checks.base import Check, CheckContext, ResultDetails
from monitor.maintenance import RuleError, parse_cron, to_local, to_utc, zone
from monitor.models import CheckResult, Failure, MonitorSpec

KIND = "heartbeat"
# The body of a ping kept with its result; more is cut (and the result says so).
MAX_BODY_BYTES = 10_000
# What a ping's path may end in, and the result each gives.
PING_KINDS = {"": "ok", "start": "start", "fail": "fail"}
DEFAULT_GRACE_SECONDS = 300
# How early a ping may come and still be the run due at the next cron time (at most the grace).
EARLY_ALLOWANCE = timedelta(minutes=1)
MAX_GRACE_SECONDS = 7 * 86400
# A token is 32 URL-safe characters (24 random bytes): what the ping route accepts.
TOKEN_BYTES = 24
TOKEN_LENGTH = 32


def new_token() -> str:
    """A fresh ping token: random and nothing else, so it says nothing about its account."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def plausible_token(text: str) -> bool:
    """Whether ``text`` has a token's shape (checked before any lookup)."""
    return len(text) == TOKEN_LENGTH and all(c.isalnum() or c in "-_" for c in text) and text.isascii()


class HeartbeatSettings(BaseModel):
    """A heartbeat (push) monitor: the job it watches calls its ``ping_url``; no ping within
    ``interval_seconds`` (or by the next ``cron`` time) plus ``grace_seconds`` is down."""

    model_config = ConfigDict(extra="forbid")

    cron: str | None = Field(
        None,
        max_length=200,
        description="5-field cron expression of when the job runs (instead of interval_seconds)",
    )
    timezone: str = Field("UTC", max_length=64, description="the IANA zone the cron expression is read in")
    grace_seconds: StrictInt = Field(
        DEFAULT_GRACE_SECONDS,
        ge=1,
        le=MAX_GRACE_SECONDS,
        description="how late a ping may come before the monitor is down",
    )

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            return parse_cron(value)
        except RuleError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, value: str, info: ValidationInfo) -> str:
        try:
            zone(value)
        except RuleError as exc:
            raise ValueError(str(exc)) from None
        # cron comes first: absent from info.data only when it was invalid (its own error).
        if value != "UTC" and "cron" in info.data and info.data["cron"] is None:
            raise ValueError("applies to a cron schedule; give cron too")
        return value


@dataclass(frozen=True, slots=True)
class Schedule:
    """When a job is expected (runtime form of ``HeartbeatSettings``), pure."""

    interval: timedelta
    grace: timedelta
    cron: str | None = None
    tz: ZoneInfo | None = None

    def expected_after(self, at: datetime) -> datetime:
        """The next time the job should run after ``at`` (aware)."""
        if self.cron is None or self.tz is None:
            return at + self.interval
        local = croniter(self.cron, to_local(at, self.tz)).get_next(datetime)
        return to_utc(local, self.tz)

    def deadline(self, last_ping: datetime) -> datetime:
        """When silence after a ping at ``last_ping`` becomes down. On a cron schedule, a ping a
        little before a run's time (the job's host clock runs fast) is that run's: without the
        allowance, the run would be expected again at once and missed a grace time later."""
        if self.cron is not None:
            last_ping += min(self.grace, EARLY_ALLOWANCE)
        return self.expected_after(last_ping) + self.grace

    def next_miss(self, missed_at: datetime) -> datetime:
        """After a missed deadline, when the next one is missed if the job stays silent: a
        period later (the grace is in the first deadline already), or the next cron run's
        time plus the grace (the job may still ping for that run within it)."""
        if self.cron is None:
            return missed_at + self.interval
        return self.expected_after(missed_at) + self.grace

    def describe(self) -> str:
        every = f"on {self.cron!r} ({self.tz})" if self.cron else f"every {_span(self.interval)}"
        return f"expected {every}, grace {_span(self.grace)}"


def schedule_of(got: HeartbeatSettings, interval_seconds: float) -> Schedule:
    return Schedule(
        interval=timedelta(seconds=interval_seconds),
        grace=timedelta(seconds=got.grace_seconds),
        cron=got.cron,
        tz=zone(got.timezone) if got.cron else None,
    )


def missed(monitor_id: int, at: datetime, last_ping: datetime | None, schedule: Schedule) -> CheckResult:
    """The failing result of a deadline passed in silence."""
    since = f"no ping since {_when(last_ping)}" if last_ping is not None else "no ping yet"
    return CheckResult(
        monitor_id,
        at,
        ok=False,
        error=f"{since} ({schedule.describe()})",
        details={"heartbeat": {"missed": True, "last_ping": _when(last_ping) if last_ping else None}},
        failure=Failure.MISSED,
    )


def ping_result(
    monitor_id: int,
    at: datetime,
    kind: str,
    body: str | None,
    body_truncated: bool,
    started_at: datetime | None,
) -> CheckResult:
    """The result of an ``ok`` or ``fail`` ping (a ``start`` is no result)."""
    details: dict[str, Any] = {"ping": kind}
    if body:
        details["body"] = body
    if body_truncated:
        details["body_truncated"] = True
    if started_at is not None and started_at <= at:
        details["run_seconds"] = round((at - started_at).total_seconds(), 3)
    error = None
    if kind == "fail":
        first = (body or "").strip().splitlines()[:1]
        error = "the job reported a failure" + (f": {first[0][:200]}" if first and first[0] else "")
    failure = None if error is None else Failure.MISSED
    return CheckResult(
        monitor_id, at, ok=error is None, error=error, details={"heartbeat": details}, failure=failure
    )


def _span(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"


def _when(at: datetime | None) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ") if at is not None else "never"


class Heard(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ping: str | None = None
    body: str | None = None
    body_truncated: bool | None = None
    run_seconds: float | None = None
    missed: bool | None = None
    last_ping: str | None = None


class HeartbeatDetails(ResultDetails):
    heartbeat: Heard | None = None


class HeartbeatCheck(Check):
    kind: ClassVar[str] = KIND
    Settings: ClassVar[type[BaseModel]] = HeartbeatSettings
    Details: ClassVar[type[ResultDetails] | None] = HeartbeatDetails
    scheduled: ClassVar[bool] = False
    confirm_after: ClassVar[int] = 1

    def target(self, settings: Any) -> str:
        return ""  # nothing is dialled; the ping URL is a secret, not a target to show

    def options(self, settings: dict[str, Any] | None, secrets: dict[str, Any] | None) -> Any:
        return self.stored(settings)

    async def run(self, monitor: MonitorSpec, ctx: CheckContext, started: datetime) -> CheckResult:
        raise TypeError("a heartbeat monitor is not checked: its results come from pings")
