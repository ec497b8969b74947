"""Batched writer: check rows by COPY, plus the state, incidents and outbox rows of
confirmed changes, all in one transaction per batch.

A batch is copied into a session-local staging table (``checks_batch``, made by
:func:`prepare_connection` on every pool connection) and moved on by one statement
(:data:`WRITE_BATCH`): into the hypertable (rows already there are skipped, so a batch
sent twice after a lost commit cannot double), into the hourly and daily rollups (only the
rows that were new), and the latest state of each monitor into ``monitor_state``. The
database does the aggregation; the scheduler's CPU per check is its own work plus the
COPY encoding.

A window's edge steps a monitor without a check (``edges.py``): :meth:`Writer.add_edge` keeps
the monitor's state after it, written with the next batch (:data:`WRITE_EDGE`: what was told,
the window, the reminders) unless a check of the monitor judged after the edge brings a newer
state first, and its alerts in order with the checks' (their cause is the latest check's).

Checks never wait on the database: :meth:`Writer.add` only appends to memory, and to the
local spool (spool.py: one write(2), no fsync on the way), which a SIGKILLed scheduler replays
at its next start (replay.py); a flush marks in the spool what it has written. (An edge's state
is not spooled: a scheduler's start steps every monitor whose stored window is stale.)
While the database is unreachable the batch grows up to ``max_buffered`` rows
(the oldest check rows are dropped beyond it, with a log line; state changes are
never dropped) and is written when the database returns.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

import asyncpg

from monitor import channels as channel_registry
from monitor import logging as mlog
from monitor import rollups
from monitor.channels import telegram
from monitor.events import Event
from monitor.models import CheckResult, MonitorSpec
from monitor.scheduler.judging import Judged
from monitor.scheduler.metrics import SchedulerMetrics
from monitor.scheduler.quorum import Located
from monitor.scheduler.spool import Spool
from monitor.scheduler.spooled import Run, notice_record, pending_record
from monitor.scheduler.state import NOTHING, UNKNOWN, Outcome, State
from monitor.scheduler.transitions import Notice, Pending
from monitor.scheduler.transitions import apply as apply_transition
from monitor.times import rfc3339

log = mlog.get(__name__)

# A state's status and streaks, as staged (a monitor's, and a location's: :func:`streak_record`).
STREAK_COLUMNS = (
    "status",
    "failures",
    "streak_started_at",
    "successes",
    "recovering_since",
    "slow",
    "slow_since",
)
# A staged row: the check's columns, then the monitor's state after it.
STAGE_COLUMNS = (
    *CheckResult.COLUMNS,
    *STREAK_COLUMNS,
    "told",
    "told_at",
    "reminders",
    "held",
    "flips",
    "flapping",
    "maintenance",
    "cert_not_after",
)

# ``details`` is staged as JSON text: COPY's binary format has no encoder for our jsonb codec,
# and the text is what the codec would produce anyway. The insert below casts it.
CREATE_STAGE = """
CREATE TEMP TABLE IF NOT EXISTS checks_batch (
    LIKE checks,
    status text,
    failures integer NOT NULL,
    streak_started_at timestamptz,
    successes integer NOT NULL,
    recovering_since timestamptz,
    slow integer NOT NULL,
    slow_since timestamptz,
    told text NOT NULL,
    told_at timestamptz,
    reminders integer NOT NULL,
    held text,
    flips timestamptz[],  -- NULL: none (most rows: an empty array costs more to encode)
    flapping boolean NOT NULL,
    maintenance text,
    cert_not_after timestamptz
) ON COMMIT DELETE ROWS;
ALTER TABLE checks_batch ALTER COLUMN details TYPE text;
CREATE TEMP TABLE IF NOT EXISTS location_batch (
    monitor_id bigint NOT NULL,
    location text NOT NULL,
    time timestamptz NOT NULL,
    ok boolean NOT NULL,
    status text NOT NULL,
    failures integer NOT NULL,
    streak_started_at timestamptz,
    successes integer NOT NULL,
    recovering_since timestamptz,
    slow integer NOT NULL,
    slow_since timestamptz,
    changed_at timestamptz,
    reason text
) ON COMMIT DELETE ROWS"""

# A row of ``location_batch``: a location's confirmed state of a monitor checked from several.
LOCATION_COLUMNS = ("monitor_id", "location", "time", "ok", *STREAK_COLUMNS, "changed_at", "reason")
WRITE_LOCATIONS = """
INSERT INTO location_state AS s (
    monitor_id, location, status, consecutive_failures, streak_started_at, consecutive_successes,
    recovering_since, consecutive_slow, slow_since, changed_at, reason, last_check_at, last_ok)
SELECT b.monitor_id, b.location, b.status, b.failures, b.streak_started_at, b.successes,
       b.recovering_since, b.slow, b.slow_since, b.changed_at, b.reason, b.time, b.ok
FROM location_batch b WHERE EXISTS (SELECT 1 FROM monitors m WHERE m.id = b.monitor_id)
ON CONFLICT (monitor_id, location) DO UPDATE SET
    status = excluded.status, consecutive_failures = excluded.consecutive_failures,
    streak_started_at = excluded.streak_started_at,
    consecutive_successes = excluded.consecutive_successes, recovering_since = excluded.recovering_since,
    consecutive_slow = excluded.consecutive_slow, slow_since = excluded.slow_since,
    changed_at = excluded.changed_at, reason = excluded.reason,
    last_check_at = excluded.last_check_at, last_ok = excluded.last_ok
WHERE s.last_check_at <= excluded.last_check_at"""

_CHECK_COLUMNS = ", ".join(CheckResult.COLUMNS)
_TIME = CheckResult.COLUMNS.index("time")
_STAGED_COLUMNS = _CHECK_COLUMNS.replace("details", "details::jsonb")
WRITE_BATCH = f"""
WITH new AS (
    INSERT INTO checks ({_CHECK_COLUMNS}) SELECT {_STAGED_COLUMNS} FROM checks_batch
    ON CONFLICT DO NOTHING
    RETURNING monitor_id, time, ok, latency_ms
), hourly AS (
    {rollups.upsert_from("new", "checks_hourly", "hour", "1 hour")}
), daily AS (
    {rollups.upsert_from("new", "checks_daily", "day", "1 day")}
)
INSERT INTO monitor_state AS s (
    monitor_id, status, consecutive_failures, streak_started_at, consecutive_successes, recovering_since,
    consecutive_slow, slow_since, told, told_at, reminders, held, flips, flapping, maintenance,
    cert_not_after, last_check_at, last_ok, last_error, last_status_code, last_latency_ms)
SELECT DISTINCT ON (b.monitor_id) b.monitor_id, b.status, b.failures, b.streak_started_at,
       b.successes, b.recovering_since, b.slow, b.slow_since, b.told, b.told_at, b.reminders, b.held,
       coalesce(b.flips, '{{}}'), b.flapping, b.maintenance::jsonb, b.cert_not_after,
       b.time, b.ok, b.error, b.status_code, b.latency_ms
FROM checks_batch b
-- A monitor deleted while its check ran has no state row to keep; a writer fenced off
-- (its scheduler's lease lapsed, another runs its monitors now) keeps none either, nor does a
-- location that is not the monitor's primary (no status staged: quorum.py).
WHERE $1::boolean AND b.status IS NOT NULL AND EXISTS (SELECT 1 FROM monitors m WHERE m.id = b.monitor_id)
ORDER BY b.monitor_id, b.time DESC
ON CONFLICT (monitor_id) DO UPDATE SET
    changed_at = CASE WHEN s.status <> excluded.status
                      THEN excluded.last_check_at ELSE s.changed_at END,
    status = excluded.status, consecutive_failures = excluded.consecutive_failures,
    streak_started_at = excluded.streak_started_at,
    consecutive_successes = excluded.consecutive_successes, recovering_since = excluded.recovering_since,
    consecutive_slow = excluded.consecutive_slow, slow_since = excluded.slow_since,
    told = excluded.told, told_at = excluded.told_at, reminders = excluded.reminders,
    held = excluded.held, flips = excluded.flips, flapping = excluded.flapping,
    maintenance = excluded.maintenance, cert_not_after = excluded.cert_not_after,
    last_check_at = excluded.last_check_at,
    last_ok = excluded.last_ok, last_error = excluded.last_error,
    last_status_code = excluded.last_status_code, last_latency_ms = excluded.last_latency_ms
WHERE s.last_check_at IS NULL OR s.last_check_at <= excluded.last_check_at"""


# A monitor's state after a window's edge (the check columns stay the latest check's). Its
# status and streaks are those the batch's checks wrote; a row is new only for a monitor never
# checked yet (a window that opened before its first check). The window is JSON text, as staged
# (a text parameter cast in SQL: the pool's jsonb codec would store it as a JSON string).
_EDGE_COLUMNS = ("told", "told_at", "reminders", "held", "flips", "flapping", "maintenance")
WRITE_EDGE = f"""
INSERT INTO monitor_state AS s (
    monitor_id, status, consecutive_failures, streak_started_at, consecutive_successes, recovering_since,
    consecutive_slow, slow_since, told, told_at, reminders, held, flips, flapping, maintenance,
    cert_not_after)
SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, coalesce($13::timestamptz[], '{{}}'), $14,
       $15::text::jsonb, $16
WHERE EXISTS (SELECT 1 FROM monitors m WHERE m.id = $1)
ON CONFLICT (monitor_id) DO UPDATE SET {", ".join(f"{c} = excluded.{c}" for c in _EDGE_COLUMNS)}"""


async def prepare_connection(conn: asyncpg.Connection) -> None:
    """Pool ``init`` hook of a pool the writer uses: the session's staging table."""
    await conn.execute(CREATE_STAGE)


@dataclass
class Stats:
    rows_written: int = 0
    rows_dropped: int = 0
    batches: int = 0
    failures: int = 0


class _Fenced(Exception):
    """Raised inside a batch's transaction to roll it back: its member's row is gone."""


class Fence(Protocol):
    """A scheduler's membership as the writer needs it (membership.Membership)."""

    epoch: int | None
    lease: float  # seconds

    def lease_end(self) -> float: ...


class Writer:
    def __init__(
        self,
        pool: asyncpg.Pool,
        *,
        batch_rows: int = 1000,
        interval: float = 1.0,
        max_buffered: int = 1_000_000,
        on_transitions: Callable[[], None] | None = None,
        metrics: SchedulerMetrics | None = None,
        operator_chat: str | None = None,
        operator_channel: int | None = None,
        fence: Fence | None = None,
        spool: Spool | None = None,
    ) -> None:
        # Every record taken is appended here too, and dropped once written (spool.py).
        self._spool = spool
        # This scheduler's membership of the cluster (membership.py); None: not fenced.
        self._fence = fence
        self._operator_chat = operator_chat
        self._operator_channel = operator_channel
        self._pool = pool
        self._batch_rows = batch_rows
        self._interval = interval
        self._max_buffered = max_buffered
        self._rows: deque[tuple[Any, ...]] = deque()
        # The latest confirmed state of each (monitor, location) checked here (quorum.py):
        # only the last counts, so a long outage of the database keeps one per monitor.
        self._located: dict[tuple[int, str], tuple[Any, ...]] = {}
        self._transitions: list[Pending | Notice] = []
        # Each monitor's state after its latest window edge, until a later check or a write
        # takes it (add, _flush): most of the time empty.
        self._edges: dict[int, tuple[Any, ...]] = {}
        # Rows of ``pings`` made into results: deleted in the transaction that writes them.
        self._pings: list[int] = []
        self._wake = asyncio.Event()
        self._flushing = asyncio.Lock()
        self._on_transitions = on_transitions
        self.stats = Stats()
        self._metrics = metrics or SchedulerMetrics()
        self._metrics.buffered.set_function(lambda: len(self._rows))
        self._task: asyncio.Task[None] | None = None
        self._closing = False

    @property
    def buffered(self) -> int:
        return len(self._rows)

    @property
    def drained(self) -> bool:
        """Whether everything taken has been written."""
        return not (self._rows or self._transitions or self._pings or self._located)

    def restore(self, run: Run) -> None:
        """What a spool held (replay.py), for the next flush to write; not spooled again."""
        self._rows.extend(run.rows)
        self._transitions.extend(run.transitions)
        self._pings.extend(run.pings)
        for record in run.located:
            self._located[(record[0], record[1])] = record

    def add(self, spec: MonitorSpec, result: CheckResult, judged: Judged) -> None:
        """A check's result and its judgement (``judging.Judged``): its row, the monitor's
        state, and the changes and alerts to make."""
        spool = self._spool
        located = judged.located
        if located is None:
            # Joined, not unpacked into a new tuple: one C step per row (the quiet path's cost).
            row = result.row(judged.error, judged.lateness_ms, judged.checked_from) + state_record(
                judged.state
            )
            self._rows.append(row)
            if spool is not None:
                spool.append(("R", row))
            outcome = judged.outcome
            if outcome is not NOTHING and outcome:  # NOTHING: the quiet path, without a call
                pending = Pending(spec, outcome, judged.told(result))
                self._transitions.append(pending)
                if spool is not None:
                    spool.append(pending_record(pending))
        else:
            self._add_located(spec, result, judged, located)
        if self._edges and (located is None or located.primary):
            # Judged after the edge, from the state the edge left: its state is the newer.
            self._edges.pop(spec.id, None)
        overflow = len(self._rows) - self._max_buffered
        if overflow > 0:
            for _ in range(overflow):
                self._rows.popleft()
            self.stats.rows_dropped += overflow
            self._metrics.dropped.inc(overflow)
            log.warning("writer.rows_dropped", dropped=overflow, max_buffered=self._max_buffered)
        if len(self._rows) >= self._batch_rows:
            self._wake.set()

    def _add_located(self, spec: MonitorSpec, result: CheckResult, judged: Judged, located: Located) -> None:
        """A check from one of several locations: its row, the location's state, and the
        overall state and alerts only from the monitor's primary (a failure it alerts on is
        told with the locations that saw it, not this check's own error alone)."""
        stored = result.row(judged.error, judged.lateness_ms, judged.checked_from)
        row = stored + (state_record(judged.state) if located.primary else SECONDARY)
        self._rows.append(row)
        where = self._located[(spec.id, located.location)] = (
            spec.id,
            located.location,
            result.time,
            result.ok,
            *streak_record(located.state),
            located.seen.since,
            located.seen.reason,
        )
        if self._spool is not None:
            self._spool.append(("R", row))
            self._spool.append(("X", where))
        outcome = judged.outcome
        if outcome or located.changes:
            pending = Pending(spec, outcome, judged.told(result), located=located)
            self._transitions.append(pending)
            if self._spool is not None:
                self._spool.append(pending_record(pending))

    def add_edge(self, spec: MonitorSpec, state: State, outcome: Outcome, at: datetime) -> None:
        """A monitor's state after a window's edge at ``at`` (no check), and its alerts; written
        at once (the writer is woken), their cause read from the monitor's latest check."""
        self._edges[spec.id] = (spec.id, *state_record(state))
        if outcome:
            placeholder = CheckResult(spec.id, at, ok=state.status != "down")
            self._transitions.append(Pending(spec, outcome, placeholder, edge=True))
        self._wake.set()

    def add_notice(self, notice: Notice) -> None:
        """An operator alert, written with the next batch (in order with the monitors' alerts)."""
        if self._operator_chat is None and self._operator_channel is None:
            log.warning("operator.not_configured", kind=notice.kind, **notice.details)
            return
        self._transitions.append(notice)
        if self._spool is not None:
            self._spool.append(notice_record(notice))
        self._wake.set()

    def take_pings(self, ids: list[int]) -> None:
        """Delete these ``pings`` rows with the batch that writes their results (added before
        this call): a ping becomes a result exactly once, even across a crash."""
        self._pings.extend(ids)
        if self._spool is not None:
            self._spool.append(("P", ids))
        self._wake.set()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="writer")

    async def _run(self) -> None:
        backoff = self._interval
        while not self._closing:
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=backoff)
            except TimeoutError:
                pass
            self._wake.clear()
            if await self.flush():
                backoff = self._interval
            else:
                backoff = min(backoff * 2, 10.0)

    async def flush(self) -> bool:
        """Write what is buffered; False (and nothing lost) if the database failed. One flush
        runs at a time (the timer's, and a handover's that must see its monitors written)."""
        async with self._flushing:
            return await self._flush()

    async def _flush(self) -> bool:
        # What is buffered now, not what comes in meanwhile: a flush ends however fast checks
        # arrive (a handover between schedulers waits for one), and the next one follows at
        # once if the buffer filled up again (``add`` wakes the writer).
        rows_left, transitions_left, pings_left = len(self._rows), len(self._transitions), len(self._pings)
        # Taken with the transitions: an edge's state is never stored without its alerts.
        edges_now = list(self._edges.items())
        # The spool's segments before the mark hold only what this flush is to write.
        mark = self._spool.mark() if self._spool is not None else None
        while rows_left or transitions_left or pings_left or edges_now:
            rows = list(itertools.islice(self._rows, min(self._batch_rows * 10, rows_left)))
            # Changes go with the batch that ends the backlog, after the states they follow;
            # so do the pings whose results are in it.
            last = len(rows) == rows_left
            transitions = self._transitions[:transitions_left] if last else []
            pings = self._pings[:pings_left] if last else []
            located = list(self._located.items()) if last else []
            edges = edges_now if last else []
            try:
                await self._write(rows, transitions, pings, [r for _, r in located], [r for _, r in edges])
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError) as exc:
                self.stats.failures += 1
                self._metrics.write_failures.inc()
                log.warning(
                    "writer.flush_failed", error=str(exc) or type(exc).__name__, buffered=len(self._rows)
                )
                return False
            for _ in rows:
                self._rows.popleft()
            del self._transitions[: len(transitions)]
            del self._pings[: len(pings)]
            for key, record in located:  # unless a newer check replaced it meanwhile
                if self._located.get(key) is record:
                    del self._located[key]
            for monitor_id, record in edges:  # unless a newer edge replaced it meanwhile
                if self._edges.get(monitor_id) is record:
                    del self._edges[monitor_id]
            rows_left -= len(rows)
            if last:
                transitions_left = pings_left = 0
                edges_now = []
            self.stats.rows_written += len(rows)
            self.stats.batches += 1
            self._metrics.batch_rows.observe(len(rows))
            if transitions and self._on_transitions is not None:
                self._on_transitions()
        if self._spool is not None and mark is not None:
            self._spool.release(mark)
        return True

    async def _write(
        self,
        rows: list[tuple[Any, ...]],
        transitions: list[Pending | Notice],
        pings: list[int],
        located: list[tuple[Any, ...]],
        edges: list[tuple[Any, ...]],
    ) -> None:
        async with self._pool.acquire(timeout=5) as conn:
            try:
                async with conn.transaction():
                    await self._bound(conn)
                    if pings:
                        await conn.execute("DELETE FROM pings WHERE id = ANY($1::bigint[])", pings)
                    await _store_checks(conn, rows, with_state=True)
                    if located:
                        await conn.copy_records_to_table(
                            "location_batch", records=located, columns=LOCATION_COLUMNS
                        )
                        await conn.execute(WRITE_LOCATIONS)
                    if edges:
                        await conn.executemany(WRITE_EDGE, edges)
                    for pending in transitions:
                        if isinstance(pending, Notice):
                            await self._write_notice(conn, pending)
                        else:
                            await apply_transition(conn, pending)
                    # Last, just before the commit: the member row is locked only that long.
                    if not await self._holds(conn):
                        raise _Fenced
            except _Fenced:
                await self._write_fenced(conn, rows, transitions, pings)

    async def _write_fenced(
        self,
        conn: asyncpg.Connection,
        rows: list[tuple[Any, ...]],
        transitions: list[Pending | Notice],
        pings: list[int],
    ) -> None:
        """Another member runs these monitors now and read their state when it took them: the
        checks that started within the lease are stored (their ticks were this member's), the
        later ones, their state and alerts are not, and the pings stay for the new owner. The
        operator's notices (no monitor's) are written all the same."""
        assert self._fence is not None
        end = self._fence.lease_end()
        kept = [r for r in rows if r[_TIME].timestamp() < end]
        if len(kept) < len(rows):
            log.warning("writer.fenced_rows", dropped=len(rows) - len(kept))
        dropped = [p for p in transitions if not isinstance(p, Notice)]
        if dropped or pings:
            log.warning("writer.fenced", dropped_transitions=len(dropped), pings_left=len(pings))
        async with conn.transaction():
            await self._bound(conn)  # it holds rollup rows the new owner writes too
            await _store_checks(conn, kept, with_state=False)
            for notice in transitions:
                if isinstance(notice, Notice):
                    await self._write_notice(conn, notice)

    async def _bound(self, conn: asyncpg.Connection) -> None:
        """Have the database end this transaction if this process freezes inside it (SIGSTOP, a
        paused VM, a machine gone with its connection half open): it holds the rows it wrote
        (the rollups' among them, which the monitors' next owner writes too) and, at the end,
        its member row, for as long as the server keeps the connection otherwise: hours. Idle
        for a lease ends it; so does, on PostgreSQL 17, a minute in all (the only bound on a
        client frozen between two messages of one statement, where the server waits for the
        client and counts it neither idle nor a statement's time), generous to a long batch."""
        if self._fence is None:
            return
        lease_ms = round(self._fence.lease * 1000)
        bounds = [f"SET LOCAL idle_in_transaction_session_timeout = {lease_ms}"]
        if conn.get_server_version().major >= 17:
            bounds.append(f"SET LOCAL transaction_timeout = {max(60_000, 6 * lease_ms)}")
        await conn.execute("; ".join(bounds))

    async def _holds(self, conn: asyncpg.Connection) -> bool:
        """Whether this scheduler is still a member: its row, locked until the commit so that
        no other member can remove it (and take its monitors) while this batch commits."""
        if self._fence is None:
            return True
        epoch = self._fence.epoch
        if epoch is None:
            return False
        # KEY SHARE blocks the row's removal but not the member's own renewals (an UPDATE of
        # other columns). It is taken last, so the lock lasts one round trip and the commit.
        return bool(
            await conn.fetchval("SELECT true FROM scheduler_members WHERE epoch = $1 FOR KEY SHARE", epoch)
        )

    async def _write_notice(self, conn: asyncpg.Connection, notice: Notice) -> None:
        if await conn.fetchval("SELECT 1 FROM outbox WHERE event_id = $1", notice.event_id):
            return
        channels: list[dict[str, Any]] = []
        if self._operator_chat is not None:
            channels.append(telegram.operator_channel(self._operator_chat))
        if self._operator_channel is not None:
            row = await conn.fetchrow(
                "SELECT id, kind, name, config FROM channels WHERE id = $1", self._operator_channel
            )
            if row is None:
                log.error("operator.channel_missing", channel_id=self._operator_channel)
            else:
                channels.append(channel_registry.carried(row))
        event = Event(
            event_id=str(notice.event_id),
            kind=notice.kind,
            monitor_id=None,
            monitor_name="",
            monitor_url=None,
            telegram_chat_id=None,
            incident_id=0,
            at=rfc3339(notice.at),
            started_at=None,
            ended_at=None,
            duration_seconds=notice.duration_seconds,
            cause={},
            channels=channels,
            details=notice.details,
        )
        await conn.execute(
            """INSERT INTO outbox (event_id, monitor_id, kind, payload, destinations)
               VALUES ($1, NULL, $2, $3, $4)""",
            notice.event_id,
            notice.kind,
            event.to_dict(),
            list(event.targets(channel_registry.destination)),
        )

    async def close(self) -> None:
        """Stop the timer and write what is left (one last attempt)."""
        self._closing = True
        self._wake.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
        for attempt in range(3):
            if await self.flush():
                return
            # A pool that lived through an outage may hand out a dead connection first.
            await asyncio.sleep(0.2 * (attempt + 1))
        log.error("writer.unflushed_at_exit", rows=len(self._rows), transitions=len(self._transitions))


async def _store_checks(conn: asyncpg.Connection, rows: list[tuple[Any, ...]], *, with_state: bool) -> None:
    """Stage ``rows`` and move them on (:data:`WRITE_BATCH`); the monitors' state too if
    ``with_state`` (a fenced writer stores the checks only)."""
    if rows:
        await conn.copy_records_to_table("checks_batch", records=rows, columns=STAGE_COLUMNS)
        await conn.execute(WRITE_BATCH, with_state)


def streak_record(state: State) -> tuple[Any, ...]:
    """The state's :data:`STREAK_COLUMNS`."""
    return (
        state.status,
        state.failures,
        state.streak_started_at,
        state.successes,
        state.recovering_since,
        state.slow,
        state.slow_since,
    )


def state_record(state: State) -> tuple[Any, ...]:
    """The state's columns of a staged row (:data:`STAGE_COLUMNS` after the check's)."""
    window = state.window
    return (  # streak_record's columns spelled out: one call fewer a check
        state.status,
        state.failures,
        state.streak_started_at,
        state.successes,
        state.recovering_since,
        state.slow,
        state.slow_since,
        state.told,
        state.told_at,
        state.reminders,
        state.held,
        list(state.flips) if state.flips else None,
        state.flapping,
        None
        if window is None
        else json.dumps(
            {"id": window.id, "name": window.name, "until": window.until.isoformat(), "notify": window.notify}
        ),
        state.cert_not_after,
    )


# The state columns of a row checked from a location that is not the monitor's primary: no
# status, so no ``monitor_state`` row is written from it (:data:`WRITE_BATCH`).
SECONDARY: tuple[Any, ...] = (None, *state_record(UNKNOWN)[1:])
