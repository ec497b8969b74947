"""The scheduler's view of a monitor row (with its alert rules), and of a check's result."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import Enum
from typing import Any


@dataclass(frozen=True)
class Policy:
    """A monitor's alert rules (from its row), as the state machine (scheduler/state.py) applies them."""

    confirm_after: int = 1
    recover_after: int = 1
    remind_every: timedelta | None = None
    remind_max: int | None = None
    flap_threshold: int | None = None
    flap_window: timedelta = timedelta(minutes=30)


DEFAULT_POLICY = Policy()


# Most monitors share a handful of combinations of alert rules: keep one of each (memory per
# monitor matters when one scheduler carries 100,000 of them).
_POLICIES: dict[Policy, Policy] = {DEFAULT_POLICY: DEFAULT_POLICY}


def _policy(row: Any) -> Policy:
    remind = row.get("remind_every_minutes")
    policy = Policy(
        confirm_after=int(row["confirm_after"]),
        recover_after=int(row.get("recover_after") or 1),
        remind_every=timedelta(minutes=remind) if remind else None,
        remind_max=row.get("remind_max"),
        flap_threshold=row.get("flap_threshold"),
        flap_window=timedelta(minutes=row.get("flap_window_minutes") or 30),
    )
    return _POLICIES.setdefault(policy, policy)


@dataclass(frozen=True, slots=True)
class MonitorSpec:
    id: int
    name: str
    type: str
    url: str
    interval_seconds: float
    timeout_seconds: float
    confirm_after: int
    paused: bool
    recover_after: int = 1
    policy: Policy = DEFAULT_POLICY
    # Degraded when a successful check takes longer (ms), or its certificate expires sooner (days).
    degraded_above_ms: float | None = None
    cert_warn_days: int = 14
    # Monitors this one depends on (their outage holds its alerts), and its tags (maintenance).
    depends_on: tuple[int, ...] = ()
    tags: tuple[str, ...] = ()
    # The owner: a tag window applies only to its own account's monitors.
    account_id: int | None = None
    # The check type's runtime options (``Check.options``: for http, ``HttpOptions``, which holds
    # its expected statuses); None for a monitor with default settings, so 100,000 plain
    # monitors pay nothing for them.
    options: Any = None
    # Where it is checked (sql/015): each of these locations checks it and confirms its own
    # streak, and it goes down when ``quorum`` of the live ones agree (None: a majority).
    # Empty: one check per tick, by whichever scheduler the division gives it to.
    locations: tuple[str, ...] = ()
    quorum: int | None = None

    @classmethod
    def from_row(cls, row: Any, options: Any = None) -> MonitorSpec:
        return cls(
            id=row["id"],
            name=row["name"],
            type=sys.intern(row["type"]),
            url=row["url"],
            interval_seconds=float(row["interval_seconds"]),
            timeout_seconds=float(row["timeout_seconds"]),
            confirm_after=int(row["confirm_after"]),
            paused=bool(row["paused"]),
            recover_after=int(row.get("recover_after") or 1),
            policy=_policy(row),
            degraded_above_ms=row.get("degraded_above_ms"),
            cert_warn_days=int(row.get("cert_warn_days") if row.get("cert_warn_days") is not None else 14),
            depends_on=tuple(row.get("depends_on") or ()),
            tags=tuple(sys.intern(t) for t in row.get("tags") or ()),
            account_id=row.get("account_id"),
            options=options,
            locations=tuple(sys.intern(x) for x in row.get("locations") or ()),
            quorum=row.get("quorum"),
        )


class Failure(Enum):
    """Why a check failed, as the scheduler weighs it (``error`` says it to a person, and is
    what is stored). A target the check refused to dial (``REFUSED``, ``INVALID_TARGET``) says
    nothing of the network: the connectivity guard does not count it, and a refusal is counted
    as ``blocked``, not ``down``."""

    REFUSED = "refused"  # the address policy denied the target; nothing was dialled ("blocked: ...")
    INVALID_TARGET = "invalid target"  # the target cannot be dialled as written ("invalid target: ...")
    TIMEOUT = "timeout"  # the monitor's timeout cut the check (the error names where it was)
    NETWORK = "network"  # no answer: connection refused or reset, no route, name not resolved
    TLS = "tls handshake"  # the TLS handshake or the certificate it showed was refused
    ASSERTION = "assertion"  # the target answered, not as expected (status, assertions, text, records)
    MISSED = "missed"  # a heartbeat's ping did not come in time, or came as a failure
    # The checker itself: the check raised ("internal error: ...") or lacks what it needs (an
    # ICMP socket).
    CHECKER = "checker"
    # A heavy check no worker finished in time (none running, or the one that took it died too
    # late for another): written as not run, judged as unknown, never as down.
    NOT_RUN = "not run"


@dataclass
class CheckResult:
    monitor_id: int
    time: datetime
    ok: bool
    status_code: int | None = None
    latency_ms: float | None = None
    error: str | None = None
    location: str | None = None
    lateness_ms: float | None = None
    timings: dict[str, float | None] = field(default_factory=dict)
    # The location of the scheduler that made it (sql/016); None: the default location.
    checked_from: str | None = None
    # Type-specific observations (assertion outcomes, body cut, certificate not checked);
    # None for a plain check. The ``checks.details`` JSONB column.
    details: dict[str, Any] | None = None
    # The target answered, whatever it said (a TCP connect, a DNS reply, an ICMP echo): the
    # network to it works. Not stored; the connectivity guard reads it (http: status_code).
    answered: bool = False
    # Why it failed (None when ok); not stored. Set by the check that made the result.
    failure: Failure | None = None

    # Column order of the ``checks`` table, for COPY.
    COLUMNS = (
        "time",
        "monitor_id",
        "ok",
        "status_code",
        "latency_ms",
        "error",
        "location",
        "lateness_ms",
        "dns_ms",
        "connect_ms",
        "tls_ms",
        "ttfb_ms",
        "details",
        "checked_from",
    )

    @classmethod
    def from_record(cls, record: list[Any] | tuple[Any, ...]) -> CheckResult:
        """A result from its :meth:`record` (read back from the spool)."""
        (at, monitor_id, ok, status_code, latency_ms, error, location, lateness_ms) = record[:8]
        timings = dict(zip(("dns_ms", "connect_ms", "tls_ms", "ttfb_ms"), record[8:12], strict=True))
        details = json.loads(record[12]) if record[12] is not None else None
        return cls(
            monitor_id, at, ok, status_code, latency_ms, error, location, lateness_ms,
            {k: v for k, v in timings.items() if v is not None}, record[13], details,
        )  # fmt: skip

    def record(self) -> tuple[Any, ...]:
        return self.row(self.error, self.lateness_ms, self.checked_from)

    def row(self, error: str | None, lateness_ms: float | None, checked_from: str | None) -> tuple[Any, ...]:
        """Its ``checks`` row (COLUMNS) with the error as judged and the scheduler's stamps
        (``judging.Judged``): the check's own result is never rewritten."""
        t = self.timings
        return (
            self.time,
            self.monitor_id,
            self.ok,
            self.status_code,
            self.latency_ms,
            error,
            self.location,
            lateness_ms,
            t.get("dns_ms"),
            t.get("connect_ms"),
            t.get("tls_ms"),
            t.get("ttfb_ms"),
            json.dumps(self.details, separators=(",", ":")) if self.details is not None else None,
            checked_from,
        )
