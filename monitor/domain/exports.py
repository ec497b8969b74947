"""A monitor's raw history out, whole: every check or incident of a range, oldest first, in
batches a face streams as it gets them (``api/exports.py``: CSV or NDJSON; ``monitor
export-checks``: a whole account's checks).

Same rule as the JSON pages (``domain/history.py``): a viewer and up reads, another account's
monitor is a 404, and every parameter is judged before the monitor is looked up. The rule runs
when an export is *opened*, and so does its first batch, so a face answers a refusal or an
unreachable database as a JSON error before it writes the first byte.

Why keyset batches rather than one server-side cursor: a cursor lives in a transaction, and a
transaction open for the minutes a million rows take to reach a slow client holds a lock on
every chunk it has read, which the retention's ``drop_chunks`` would queue behind (and the
writes behind that). Each batch here is one short statement on a connection taken from the pool
and given back, so memory is one batch (``BATCH`` rows) whatever the range, and an export that
outlives a database restart goes on with the next batch.

Every row carries its ``cursor``; ``after=`` that cursor resumes the export with exactly the rows
after it:

- checks: ``[monitor_id, time in µs since the epoch]``. A monitor's checks are unique by time
  (the table's key is ``(time, monitor_id)``) and times are whole microseconds, so "after" is
  ``time >= last + 1 µs``; an account's export goes monitor by monitor (each read by its own
  index, ``checks_monitor_time``), so rows of two monitors at the same instant neither repeat
  nor go missing. A check cursor names its monitor: one of another monitor's export is refused.
- incidents: ``[monitor_id, started_at in µs, id]``, ordered by ``(started_at, id)``: two
  incidents that started at the same instant are told apart by their id.

The shapes differ from each other and from the JSON pages' cursors (one integer, newest first),
so one cannot be mistaken for another.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from monitor.domain import paging
from monitor.domain.context import Actor, Deps
from monitor.domain.errors import DomainError, not_found
from monitor.domain.history import RESOURCE, render_check, render_incident
from monitor.domain.roles import authorize
from monitor.domain.schemas.locations import LOCATION

# Rows per statement: ~1 MB of CSV, a few ms of database time; the figures in bench/README.md.
BATCH = 2000
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
END_OF_TIME = datetime(9999, 12, 31, tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)

CHECK_COLUMNS = "time, monitor_id, ok, status_code, latency_ms, error, location, checked_from, dns_ms, " \
    "connect_ms, tls_ms, ttfb_ms, details"  # fmt: skip
CHECKS_SQL = f"""SELECT {CHECK_COLUMNS} FROM checks
   WHERE monitor_id = $1 AND time >= $2 AND time < $3 AND ($4::text IS NULL OR checked_from = $4)
   ORDER BY time LIMIT $5"""
INCIDENTS_SQL = """SELECT * FROM incidents
   WHERE monitor_id = $1 AND coalesce(ended_at, 'infinity') > $2 AND started_at < $3
     AND (started_at, id) > ($4, $5)
   ORDER BY started_at, id LIMIT $6"""

Batches = AsyncIterator[list[dict[str, Any]]]


@dataclass(frozen=True)
class Export:
    """An export opened: the monitor(s) it reads, and its rows batch by batch. ``first`` is
    read already (the refusals and the database's errors come before any row is written)."""

    first: list[dict[str, Any]]
    rest: Batches

    async def batches(self) -> Batches:
        if self.first:
            yield self.first
        async for batch in self.rest:
            yield batch


def _us(value: datetime) -> int:
    return (value - EPOCH) // MICROSECOND


def _time(us: int) -> datetime:
    try:
        return EPOCH + timedelta(microseconds=us)
    except OverflowError:
        raise DomainError(400, "invalid", "after: not a cursor this export issued", "after") from None


def check_cursor(row: Mapping[str, Any]) -> str:
    return paging.encode_cursor([row["monitor_id"], _us(row["time"])])


def incident_cursor(row: Mapping[str, Any]) -> str:
    return paging.encode_cursor([row["monitor_id"], _us(row["started_at"]), row["id"]])


def _after(raw: str | None, shape: tuple[type, ...]) -> list[Any] | None:
    try:
        return paging.decode_cursor(raw, shape)
    except DomainError:
        raise DomainError(400, "invalid", "after: not a cursor this export issued", "after") from None


def _checked_from(value: str | None) -> None:
    if value is not None and not LOCATION.match(value):
        raise DomainError(
            400, "invalid", "checked_from: not a location name (as MONITOR_LOCATION)", "checked_from"
        )


async def _open(rest: Batches) -> Export:
    first: list[dict[str, Any]] = await anext(rest, [])
    return Export(first, rest)


# -- one monitor --------------------------------------------------------------------------------


async def checks(
    deps: Deps,
    actor: Actor,
    monitor_id: int,
    *,
    start: datetime | None = None,
    end: datetime | None = None,
    after: str | None = None,
    checked_from: str | None = None,
) -> Export:
    """The monitor's checks in [start, end) after the cursor ``after``, oldest first; each row
    is as the JSON pages show a check, with its ``cursor``."""
    authorize(actor, RESOURCE, "read")
    resume = _after(after, (int, int))
    _checked_from(checked_from)
    lower = start or EPOCH
    if resume is not None:
        if resume[0] != monitor_id:
            raise DomainError(400, "invalid", "after: a cursor of another monitor's export", "after")
        lower = max(lower, _time(resume[1]) + MICROSECOND)
    await _owned(deps, actor, monitor_id)
    return await _open(_checks_of(deps, monitor_id, lower, end or END_OF_TIME, checked_from))


async def incidents(
    deps: Deps,
    actor: Actor,
    monitor_id: int,
    *,
    start: datetime | None = None,
    end: datetime | None = None,
    after: str | None = None,
) -> Export:
    """The monitor's incidents that overlap [start, end) after the cursor ``after``, by start
    (oldest first); each row is as the JSON pages show an incident, with its ``cursor``."""
    authorize(actor, RESOURCE, "read")
    resume = _after(after, (int, int, int))
    if resume is not None and resume[0] != monitor_id:
        raise DomainError(400, "invalid", "after: a cursor of another monitor's export", "after")
    key = (EPOCH - MICROSECOND, 0) if resume is None else (_time(resume[1]), resume[2])
    await _owned(deps, actor, monitor_id)
    return await _open(_incidents_of(deps, monitor_id, start or EPOCH, end or END_OF_TIME, key))


async def _checks_of(deps: Deps, monitor_id: int, lower: datetime, end: datetime, at: str | None) -> Batches:
    while True:
        async with deps.pool.acquire() as conn:
            rows = await conn.fetch(CHECKS_SQL, monitor_id, lower, end, at, BATCH)
        if not rows:
            return
        yield [{**render_check(r), "cursor": check_cursor(r)} for r in rows]
        if len(rows) < BATCH:
            return
        lower = rows[-1]["time"] + MICROSECOND


async def _incidents_of(
    deps: Deps, monitor_id: int, start: datetime, end: datetime, key: tuple[datetime, int]
) -> Batches:
    while True:
        async with deps.pool.acquire() as conn:
            now = await conn.fetchval("SELECT now()")
            rows = await conn.fetch(INCIDENTS_SQL, monitor_id, start, end, *key, BATCH)
        if not rows:
            return
        yield [{**render_incident(r, now), "cursor": incident_cursor(r)} for r in rows]
        if len(rows) < BATCH:
            return
        key = (rows[-1]["started_at"], rows[-1]["id"])


# -- a whole account ----------------------------------------------------------------------------


async def account_checks(
    deps: Deps,
    actor: Actor,
    *,
    start: datetime | None = None,
    end: datetime | None = None,
    after: str | None = None,
) -> Export:
    """Every check of every monitor of the account in [start, end), monitor by monitor (by id),
    each monitor's oldest first; each row with its ``monitor_id``, ``monitor_name`` and
    ``cursor``. ``after``: a cursor of this export, or of one monitor's."""
    authorize(actor, RESOURCE, "read")
    if start is not None and end is not None and start >= end:
        raise DomainError(400, "invalid", "from: must be before to", "from")
    resume = _after(after, (int, int))
    first_id, first_lower = (0, None) if resume is None else (resume[0], _time(resume[1]) + MICROSECOND)
    monitors = await deps.pool.fetch(
        "SELECT id, name FROM monitors WHERE account_id = $1 AND id >= $2 ORDER BY id",
        actor.account_id,
        first_id,
    )
    if resume is not None and (not monitors or monitors[0]["id"] != first_id):
        # The cursor's monitor is gone (or was never this account's): after it, then.
        first_lower = None
    return await _open(_account_batches(deps, monitors, first_id, first_lower, start or EPOCH, end))


async def _account_batches(
    deps: Deps,
    monitors: list[Any],
    first_id: int,
    first_lower: datetime | None,
    start: datetime,
    end: datetime | None,
) -> Batches:
    for monitor in monitors:
        lower = start
        if monitor["id"] == first_id and first_lower is not None:
            lower = max(start, first_lower)
        extra = {"monitor_id": monitor["id"], "monitor_name": monitor["name"]}
        async for batch in _checks_of(deps, monitor["id"], lower, end or END_OF_TIME, None):
            yield [{**extra, **row} for row in batch]


async def _owned(deps: Deps, actor: Actor, monitor_id: int) -> None:
    found = await deps.pool.fetchval(
        "SELECT 1 FROM monitors WHERE id = $1 AND account_id = $2", monitor_id, actor.account_id
    )
    if found is None:
        raise not_found("monitor")
