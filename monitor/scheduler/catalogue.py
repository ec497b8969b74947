"""The scheduler's catalogue of monitors: which are active, what changed, and loading them.

Changes reach it by LISTEN/NOTIFY (the ``monitors_changed`` trigger carries the id; only that
monitor's ticker is restarted) and, as a safety net, by a periodic full comparison of
``(id, updated_at)`` with the versions running (``reconcile_interval_seconds``). Of the active
monitors it starts those that are this member's share among the live schedulers
(sharing.py): all of them when it runs alone. A change is applied under ``Sharing.lock``, so a
new division is never applied halfway through one.

Loading reads a monitor's row with its stored state and sealed secrets, turns them into the
type's runtime options once (``Check.options``), and hands the spec to the running set
(running.py), which starts its ticker; a row it cannot read (stored by a newer version, by
hand, under another key) is logged and skipped, not fatal. The LISTEN connection is this
module's too; the other channels it carries (outbox, maintenance, pings, members) are handed
to the parts that own them, and a lost connection is reopened, after which ``resync`` reads
again what was announced while nobody listened.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Any

import asyncpg

from monitor import db
from monitor import logging as mlog
from monitor.checks import REGISTRY
from monitor.checks.jobs import row_form, spec_of
from monitor.models import MonitorSpec
from monitor.scheduler.edges import Edges
from monitor.scheduler.metrics import SchedulerMetrics
from monitor.scheduler.running import RunningSet
from monitor.scheduler.sharing import DB_ERRORS, Sharing
from monitor.secrets import SecretBox

log = mlog.get(__name__)

CHANNEL = "monitors_changed"
# Read whole for each monitor loaded (its row, stored state and sealed secrets).
ROWS = """SELECT m.*, s.status, s.consecutive_failures, s.streak_started_at, s.consecutive_successes,
                 s.recovering_since, s.consecutive_slow, s.slow_since, s.told, s.told_at,
                 s.reminders, s.held, s.flips, s.flapping, s.maintenance, s.cert_not_after,
                 s.last_check_at, s.last_ok, s.last_error, x.secrets,
                 (SELECT max(p.ended_at) FROM monitor_pauses p WHERE p.monitor_id = m.id) AS resumed_at
          FROM monitors m LEFT JOIN monitor_state s ON s.monitor_id = m.id
          LEFT JOIN monitor_secrets x ON x.monitor_id = m.id
          WHERE m.id = ANY($1::bigint[])"""


class Catalogue:
    """The active monitors, their changes, and the loads that start them in the running set."""

    def __init__(
        self,
        pool: asyncpg.Pool,
        box: SecretBox,
        running: RunningSet,
        sharing: Sharing,
        edges: Edges,
        metrics: SchedulerMetrics,
        *,
        dsn: str,
        listeners: Mapping[str, Callable[[], None]],
        resync: Callable[[], Awaitable[None]],
        reconcile_every: float,
        heavy_rows: dict[int, dict[str, Any]] | None = None,
    ) -> None:
        self._pool = pool
        self._box = box
        self._running = running
        self._sharing = sharing
        self._edges = edges
        self._metrics = metrics
        self._dsn = dsn
        self._listeners = listeners
        self._resync = resync
        self._reconcile_every = reconcile_every
        # The row form of each heavy monitor loaded (checks/jobs.py), which the Dispatcher sends
        # as its jobs (a worker makes the spec of it); the few heavy monitors only.
        self.heavy_rows: dict[int, dict[str, Any]] = heavy_rows if heavy_rows is not None else {}
        # Every active monitor (its version), this scheduler's share or not: what a new
        # division of the monitors is applied to.
        self.wanted: dict[int, datetime] = {}
        # The locations of those checked from several (quorum.py); most monitors have none.
        self.locations: dict[int, tuple[str, ...]] = {}
        # After the first load, a monitor started here came from another scheduler.
        self._loaded = False
        self._changed: asyncio.Queue[int | None] = asyncio.Queue()
        self._listener: asyncpg.Connection | None = None

    # -- LISTEN/NOTIFY ---------------------------------------------------------------

    async def listen(self) -> None:
        self._listener = await db.connect(self._dsn)
        await self._listener.add_listener(CHANNEL, self._on_notify)
        for channel, wake in self._listeners.items():
            await self._listener.add_listener(channel, _called(wake))
        self._listener.add_termination_listener(lambda _conn: self._changed.put_nowait(None))

    async def close(self) -> None:
        if self._listener is not None and not self._listener.is_closed():
            await self._listener.close()

    def _on_notify(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        if payload.isdigit():
            self._changed.put_nowait(int(payload))

    async def follow(self) -> None:
        """Apply each change announced, one monitor at a time, until cancelled."""
        while True:
            monitor_id = await self._changed.get()
            try:
                if monitor_id is None:  # the LISTEN connection died: reconnect, then compare all
                    await self._relisten()
                    await self._resync()
                else:
                    await self._reload(monitor_id)
            except DB_ERRORS as exc:
                log.warning(
                    "scheduler.change_failed", monitor_id=monitor_id, error=str(exc) or type(exc).__name__
                )
                await asyncio.sleep(1)
                self._changed.put_nowait(monitor_id)

    async def _relisten(self) -> None:
        if self._listener is not None and not self._listener.is_closed():
            with contextlib.suppress(Exception):
                await self._listener.close()
        await self.listen()

    async def keep_reconciling(self) -> None:
        """The safety net: a full comparison every ``reconcile_every`` seconds."""
        while True:
            await asyncio.sleep(self._reconcile_every)
            try:
                listener = self._listener
                if listener is not None and not listener.is_closed() and not await db.writable(listener):
                    listener.terminate()  # an old primary fenced read-only: re-listen on the new one
                await self.reconcile()
            except DB_ERRORS as exc:
                log.warning("scheduler.reconcile_failed", error=str(exc) or type(exc).__name__)

    # -- what changed ----------------------------------------------------------------

    async def first_load(self, since: float, joined: float | None) -> None:
        """The load at start (see :meth:`reconcile`); monitors started after it came from
        another scheduler."""
        await self.reconcile(since=since, joined=joined)
        self._loaded = True

    async def reconcile(self, since: float | None = None, joined: float | None = None) -> None:
        """Compare every active monitor's version with the running tickers.

        ``since``: the time the new tickers count their first tick from (default: now);
        ``joined``: this member's join, when the monitors come from live members
        (``Sharing.joined_whole``): each goes on from the tick after its last stored check.
        """
        async with self._sharing.lock:  # a division is not applied halfway through this
            await self._reconcile(since, joined)

    async def _reconcile(self, since: float | None, joined: float | None = None) -> None:
        running = self._running
        rows = await self._pool.fetch("SELECT id, updated_at, locations FROM monitors WHERE NOT paused")
        wanted = self.wanted = {r["id"]: r["updated_at"] for r in rows}
        for monitor_id in [m for m in self.heavy_rows if m not in wanted]:
            del self.heavy_rows[monitor_id]
        for monitor_id in [m for m in self.locations if m not in wanted]:
            self._set_locations(monitor_id, None)
        for row in rows:
            self._set_locations(row["id"], row["locations"])
        mine, settled = self._sharing.mine, self._sharing.settled()
        for monitor_id in list(running.tickers):
            if monitor_id not in wanted or mine(monitor_id) != running.running_as(monitor_id):
                running.stop(monitor_id)
                if monitor_id not in wanted or mine(monitor_id) is None:
                    running.forget_located(monitor_id)
        stale = [
            mid
            for mid, version in wanted.items()
            if running.versions.get(mid) != version and mine(mid) and (settled or mid in running.tickers)
        ]
        missed = 0
        for chunk in range(0, len(stale), 1000):
            missed += await self._load(stale[chunk : chunk + 1000], since, joined=joined)
        running.count_handover(missed, len(stale))
        if stale:
            log.info("scheduler.reconciled", started_or_restarted=len(stale), running=len(running.tickers))

    async def _reload(self, monitor_id: int) -> None:
        async with self._sharing.lock:  # a division is not applied halfway through this
            await self._reload_one(monitor_id)

    async def _reload_one(self, monitor_id: int) -> None:
        running = self._running
        row = await self._pool.fetchrow(
            "SELECT updated_at, locations FROM monitors WHERE id = $1 AND NOT paused", monitor_id
        )
        if row is None:
            self.wanted.pop(monitor_id, None)
            self.heavy_rows.pop(monitor_id, None)
        else:
            self.wanted[monitor_id] = row["updated_at"]
        was_running = monitor_id in running.tickers
        before = running.running_as(monitor_id) if was_running else None
        self._set_locations(monitor_id, None if row is None else row["locations"])
        busy = running.busy(monitor_id)
        running.stop(monitor_id)
        role = self._sharing.mine(monitor_id)  # fixed while this holds the division's lock
        if row is None or role is None:
            running.forget_located(monitor_id)
        elif busy is not None and before != role:
            # A new role (an edit of the locations): the check in flight is judged in the old
            # one, before the monitor starts again in the new (as a handover waits, let_go).
            await asyncio.wait([busy])
        if role is not None and (was_running or self._sharing.settled()):
            await self._load([monitor_id])
        elif role is None:
            return  # another scheduler's: it logs the change
        # One line per change, so an operator (and a test) can see when it took effect.
        if monitor_id in running.tickers:
            log.info(
                "monitor.scheduled",
                monitor_id=monitor_id,
                interval_s=running.tickers[monitor_id].spec.interval_seconds,
            )
        else:
            log.info("monitor.unscheduled", monitor_id=monitor_id)

    def _set_locations(self, monitor_id: int, names: list[str] | None) -> None:
        found = tuple(names or ())
        if found != self.locations.get(monitor_id, ()):
            if found:
                self.locations[monitor_id] = found
            else:
                self.locations.pop(monitor_id, None)
            self._sharing.own.forget(monitor_id)

    # -- loading ---------------------------------------------------------------------

    async def take(self, ids: set[int]) -> None:
        """Start monitors that are this scheduler's now (a new division), each from its stored
        state."""
        running = self._running
        running.forget_states(ids)
        ordered = sorted(ids)
        missed = 0
        joined = self._sharing.joined_whole()
        for chunk in range(0, len(ordered), 1000):
            missed += await self._load(ordered[chunk : chunk + 1000], takeover=self._loaded, joined=joined)
        if self._loaded:
            self._metrics.takeovers.inc(len(ids))
        running.count_handover(missed, len(ids))
        log.info("cluster.taken_over", monitors=len(ids), running=len(running.tickers))

    async def _load(
        self, ids: list[int], since: float | None = None, takeover: bool = False, joined: float | None = None
    ) -> int:
        """Start the tickers of these monitors (those active); with ``takeover``, count the ticks
        each missed since its last stored check, and return how many. With ``joined`` (see
        :meth:`reconcile`), each starts from the tick after its last stored check, and the ticks
        passed over are counted for those another member checked after that join."""
        running = self._running
        rows = await self._pool.fetch(ROWS, ids)
        found = set()
        missed = 0
        located: dict[int, MonitorSpec] = {}
        started: list[MonitorSpec] = []
        for row in rows:
            found.add(row["id"])
            previous = running.stop(row["id"])
            if row["paused"]:
                running.forget_located(row["id"])
                continue
            spec = self._spec(row)
            if spec is None:
                continue
            # The locations as this row has them (an edit may not have been NOTIFYed yet): the
            # role is worked out from them, and a monitor no longer this member's is not started.
            self._set_locations(spec.id, row["locations"])
            role = self._sharing.mine(spec.id)
            if role is None:
                continue
            if spec.locations:  # started once its location's stored state is read (below)
                located[spec.id] = spec
            missed += running.start(spec, row, role, previous, since=since, joined=joined, counted=takeover)
            started.append(spec)
        for monitor_id in set(ids) - found:
            running.forget(monitor_id)
        await running.start_located(located, since, closing=self._sharing.closing)
        # A window that opened or closed while nobody ran these monitors (or while they moved
        # here) is said now, once, from their stored state (edges.py).
        tickers = running.tickers
        self._edges.sweep([s for s in started if (t := tickers.get(s.id)) is not None and t.spec is s])
        return missed

    def _spec(self, row: Any) -> MonitorSpec | None:
        """The monitor of ``row`` with its type's runtime options, or None if they cannot be read."""
        try:
            spec = spec_of(row, self._box)
        except Exception as exc:  # stored by a newer version, by hand, with another key: skip it
            log.error("monitor.unloadable", monitor_id=row["id"], error=str(exc)[:300] or type(exc).__name__)
            return None
        if REGISTRY.get(spec.type).heavy:
            self.heavy_rows[spec.id] = row_form(row)
        return spec


def _called(wake: Callable[[], None]) -> Callable[..., None]:
    """An asyncpg listener (connection, pid, channel, payload) that only wakes its owner."""
    return lambda *_: wake()
