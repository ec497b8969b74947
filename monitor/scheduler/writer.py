"""Batched writer: check rows by COPY, plus the state, incidents and outbox rows of
confirmed changes, all in one transaction per batch.

A batch is copied into a session-local staging table (``checks_batch``, made by
:func:`prepare_connection` on every pool connection) and moved on by one statement
(:data:`WRITE_BATCH`): into the hypertable (rows already there are skipped, so a batch
sent twice after a lost commit cannot double), into the hourly and daily rollups (only the
rows that were new), and the latest state of each monitor into ``monitor_state``. The
database does the aggregation; the scheduler's CPU per check is its own work plus the
COPY encoding.

Checks never wait on the database: :meth:`Writer.add` only appends to memory.
While the database is unreachable the batch grows up to ``max_buffered`` rows
(the oldest check rows are dropped beyond it, with a log line; state changes are
never dropped) and is written when the database returns.
"""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import asyncpg

from monitor import logging as mlog
from monitor import rollups
from monitor.alerter import channels as channel_registry
from monitor.events import Event
from monitor.models import CheckResult, MonitorSpec
from monitor.scheduler.metrics import SchedulerMetrics
from monitor.scheduler.state import State, Transition

log = mlog.get(__name__)

# A staged row: the check's columns, then the monitor's state after it.
STAGE_COLUMNS = (
    *CheckResult.COLUMNS,
    "status",
    "failures",
    "streak_started_at",
    "successes",
    "recovering_since",
)

# ``details`` is staged as JSON text: COPY's binary format has no encoder for our jsonb codec,
# and the text is what the codec would produce anyway. The insert below casts it.
CREATE_STAGE = """
CREATE TEMP TABLE IF NOT EXISTS checks_batch (
    LIKE checks,
    status text NOT NULL,
    failures integer NOT NULL,
    streak_started_at timestamptz,
    successes integer NOT NULL,
    recovering_since timestamptz
) ON COMMIT DELETE ROWS;
ALTER TABLE checks_batch ALTER COLUMN details TYPE text"""

_CHECK_COLUMNS = ", ".join(CheckResult.COLUMNS)
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
    last_check_at, last_ok, last_error, last_status_code, last_latency_ms)
SELECT DISTINCT ON (b.monitor_id) b.monitor_id, b.status, b.failures, b.streak_started_at,
       b.successes, b.recovering_since, b.time, b.ok, b.error, b.status_code, b.latency_ms
FROM checks_batch b
-- A monitor deleted while its check ran has no state row to keep.
WHERE EXISTS (SELECT 1 FROM monitors m WHERE m.id = b.monitor_id)
ORDER BY b.monitor_id, b.time DESC
ON CONFLICT (monitor_id) DO UPDATE SET
    changed_at = CASE WHEN s.status <> excluded.status
                      THEN excluded.last_check_at ELSE s.changed_at END,
    status = excluded.status, consecutive_failures = excluded.consecutive_failures,
    streak_started_at = excluded.streak_started_at,
    consecutive_successes = excluded.consecutive_successes, recovering_since = excluded.recovering_since,
    last_check_at = excluded.last_check_at,
    last_ok = excluded.last_ok, last_error = excluded.last_error,
    last_status_code = excluded.last_status_code, last_latency_ms = excluded.last_latency_ms
WHERE s.last_check_at IS NULL OR s.last_check_at <= excluded.last_check_at"""


async def prepare_connection(conn: asyncpg.Connection) -> None:
    """Pool ``init`` hook of a pool the writer uses: the session's staging table."""
    await conn.execute(CREATE_STAGE)


@dataclass
class Pending:
    """A confirmed state change waiting to be written with its check rows."""

    spec: MonitorSpec
    transition: Transition
    result: CheckResult
    event_id: uuid.UUID = field(default_factory=uuid.uuid4)


@dataclass
class Stats:
    rows_written: int = 0
    rows_dropped: int = 0
    batches: int = 0
    failures: int = 0


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
    ) -> None:
        self._pool = pool
        self._batch_rows = batch_rows
        self._interval = interval
        self._max_buffered = max_buffered
        self._rows: deque[tuple[Any, ...]] = deque()
        self._transitions: list[Pending] = []
        self._wake = asyncio.Event()
        self._on_transitions = on_transitions
        self.stats = Stats()
        self._metrics = metrics or SchedulerMetrics()
        self._metrics.buffered.set_function(lambda: len(self._rows))
        self._task: asyncio.Task[None] | None = None
        self._closing = False

    @property
    def buffered(self) -> int:
        return len(self._rows)

    def add(
        self, spec: MonitorSpec, result: CheckResult, state: State, transition: Transition | None
    ) -> None:
        self._rows.append(
            (
                *result.record(),
                state.status,
                state.failures,
                state.streak_started_at,
                state.successes,
                state.recovering_since,
            )
        )
        if transition is not None:
            self._transitions.append(Pending(spec, transition, result))
        overflow = len(self._rows) - self._max_buffered
        if overflow > 0:
            for _ in range(overflow):
                self._rows.popleft()
            self.stats.rows_dropped += overflow
            self._metrics.dropped.inc(overflow)
            log.warning("writer.rows_dropped", dropped=overflow, max_buffered=self._max_buffered)
        if len(self._rows) >= self._batch_rows:
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
        """Write what is buffered; False (and nothing lost) if the database failed."""
        while self._rows or self._transitions:
            rows = list(itertools.islice(self._rows, self._batch_rows * 10))
            # Changes go with the batch that ends the backlog, after the states they follow.
            transitions = list(self._transitions) if len(rows) == len(self._rows) else []
            try:
                await self._write(rows, transitions)
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
            self.stats.rows_written += len(rows)
            self.stats.batches += 1
            self._metrics.batch_rows.observe(len(rows))
            if transitions and self._on_transitions is not None:
                self._on_transitions()
        return True

    async def _write(self, rows: list[tuple[Any, ...]], transitions: list[Pending]) -> None:
        async with self._pool.acquire(timeout=5) as conn, conn.transaction():
            if rows:
                await conn.copy_records_to_table("checks_batch", records=rows, columns=STAGE_COLUMNS)
                await conn.execute(WRITE_BATCH)
            for pending in transitions:
                await _apply_transition(conn, pending)

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


async def _apply_transition(conn: asyncpg.Connection, pending: Pending) -> None:
    # Idempotent: a batch retried after a lost commit must not open a second incident.
    if await conn.fetchval("SELECT 1 FROM outbox WHERE event_id = $1", pending.event_id):
        return
    spec, transition, result = pending.spec, pending.transition, pending.result
    monitor_exists = await conn.fetchval("SELECT 1 FROM monitors WHERE id = $1", spec.id)
    if not monitor_exists:
        return  # deleted while the check ran: nobody to alert
    started_at = ended_at = None
    after_event_id: str | None = None
    if transition.kind == "down":
        incident_id = await conn.fetchval(
            """INSERT INTO incidents (monitor_id, started_at, status_code, error)
               VALUES ($1, $2, $3, $4)
               ON CONFLICT (monitor_id) WHERE ended_at IS NULL DO NOTHING RETURNING id""",
            spec.id,
            transition.at,
            result.status_code,
            result.error,
        )
        if incident_id is None:
            return  # an incident is already open (state lost and rebuilt): no second alert
        started_at = transition.at
    else:
        row = await conn.fetchrow(
            """UPDATE incidents SET ended_at = greatest($2, started_at)
               WHERE monitor_id = $1 AND ended_at IS NULL RETURNING id, started_at, ended_at""",
            spec.id,
            transition.at,
        )
        if row is None:
            return  # no open incident: nothing to recover from
        incident_id, started_at, ended_at = row["id"], row["started_at"], row["ended_at"]
        after_event_id = await conn.fetchval(
            """SELECT event_id::text FROM outbox
               WHERE monitor_id = $1 AND kind = 'down' AND payload ->> 'incident_id' = $2
               ORDER BY id DESC LIMIT 1""",
            spec.id,
            str(incident_id),
        )
    await conn.execute(
        "UPDATE monitor_state SET changed_at = $2 WHERE monitor_id = $1", spec.id, transition.at
    )
    channels = [
        {"id": r["id"], "kind": r["kind"], "name": r["name"], **r["config"]}
        for r in await conn.fetch(
            """SELECT c.id, c.kind, c.name, c.config FROM monitor_channels mc
               JOIN channels c ON c.id = mc.channel_id WHERE mc.monitor_id = $1 ORDER BY c.id""",
            spec.id,
        )
    ]
    # The monitor's next place in its sequence: alerters deliver its events to each destination
    # in this order (outbox rows are never deleted, and the unique index refuses a second
    # writer that raced to the same number: its transaction is retried).
    seq = await conn.fetchval("SELECT coalesce(max(seq), 0) + 1 FROM outbox WHERE monitor_id = $1", spec.id)
    event = Event.build(
        event_id=pending.event_id,
        kind=transition.kind,
        spec=spec,
        incident_id=incident_id,
        at=transition.at,
        started_at=started_at,
        ended_at=ended_at,
        result=result,
        channels=channels,
        after_event_id=after_event_id,
        seq=seq,
    )
    await conn.execute(
        """INSERT INTO outbox (event_id, monitor_id, kind, payload, seq, destinations)
           VALUES ($1, $2, $3, $4, $5, $6)""",
        pending.event_id,
        spec.id,
        transition.kind,
        event.to_dict(),
        seq,
        list(event.targets(channel_registry.destination)),
    )
