"""The scheduler service: reconciles monitor rows to tickers and owns the shared parts.

Changes reach it by LISTEN/NOTIFY (the ``monitors_changed`` trigger carries the id;
only that monitor's ticker is restarted) and, as a safety net, by a periodic full
comparison of ``(id, updated_at)``. Of the active monitors it runs those that are its share
among the live schedulers (sharing.py): all of them when it runs alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import asyncpg
import redis.asyncio as aioredis
from aiohttp import web

from monitor import db, probes, redisconn
from monitor import logging as mlog
from monitor.aio import Slots
from monitor.checks import REGISTRY, CheckContext
from monitor.config import Settings
from monitor.health import ping_database, ping_redis, watch_loop
from monitor.models import MonitorSpec
from monitor.net.client import HttpSession, make_session
from monitor.net.policy import AddressPolicy, log_allow_list
from monitor.net.resolver import VettedResolver
from monitor.net.session import tls_context
from monitor.scheduler import locations, replay, retention, writer
from monitor.scheduler import membership as cluster_membership
from monitor.scheduler.calendar import Calendar
from monitor.scheduler.cluster import Role, missed_ticks, resume_since
from monitor.scheduler.connectivity import Change, Guard, ReferenceProbe
from monitor.scheduler.edges import Edges
from monitor.scheduler.heartbeat import HeartbeatTicker, PingIntake
from monitor.scheduler.judging import Judging
from monitor.scheduler.metrics import SchedulerMetrics
from monitor.scheduler.relay import Relay
from monitor.scheduler.sharing import DB_ERRORS, Sharing, read_foreign_parents
from monitor.scheduler.spool import Spool
from monitor.scheduler.state import State, Window
from monitor.scheduler.ticker import MonitorTicker, TickerShared, first_tick, stable_offset
from monitor.scheduler.tickers import make_ticker
from monitor.scheduler.writer import Notice, Writer
from monitor.secrets import SecretBox, open_monitor_secrets

log = mlog.get(__name__)

CHANNEL = "monitors_changed"
OUTBOX_CHANNEL = "outbox_added"
MAINTENANCE_CHANNEL = "maintenance_changed"
PINGS_CHANNEL = "pings_added"


class Scheduler:
    name = "scheduler"

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.tickers: dict[int, MonitorTicker | HeartbeatTicker] = {}
        self.versions: dict[int, datetime] = {}
        # Every active monitor (its version), this scheduler's share or not: what a new
        # division of the monitors is applied to.
        self._wanted: dict[int, datetime] = {}
        # The locations of those checked from several (quorum.py); most monitors have none.
        self._locations: dict[int, tuple[str, ...]] = {}
        self.sharing: Sharing | None = None
        self._cluster_task: asyncio.Task[None] | None = None
        # After the first load, a monitor started here came from another scheduler.
        self._loaded = False
        # Monitors run elsewhere whose stored status is in the shared states (a dependant here
        # is held by them): not a state to start from if they move here.
        self._foreign: set[int] = set()
        self.metrics = SchedulerMetrics()
        self._shared: TickerShared | None = None
        self._changed: asyncio.Queue[int | None] = asyncio.Queue()
        self._background: list[asyncio.Task[None]] = []
        self._pool: asyncpg.Pool | None = None
        self._listener: asyncpg.Connection | None = None
        self._redis: aioredis.Redis | None = None
        self._resolver: VettedResolver | None = None
        self._session: HttpSession | None = None
        self.writer: Writer | None = None
        self.spool: Spool | None = None
        self.relay: Relay | None = None
        self._probes: web.AppRunner | None = None
        self._box: SecretBox | None = None
        self.guard: Guard | None = None
        self.calendar = Calendar()
        # Set by NOTIFY maintenance_changed (and a new LISTEN connection): one task reloads
        # the calendar, once for any number of notifications that arrived meanwhile.
        self._calendar_stale = asyncio.Event()
        self._reference_probe: ReferenceProbe | None = None
        self.pings: PingIntake | None = None
        # The timers at the windows' edges (edges.py), made with the shared parts.
        self.edges: Edges | None = None

    # -- lifecycle -----------------------------------------------------------------

    async def start(self) -> None:
        s = self.settings
        s.require("database_url", "redis_url", "secret_key")
        self._box = s.secret_box()
        policy = AddressPolicy(s.allow_cidrs)
        log_allow_list(log, policy)
        self._pool = await db.create_pool(s.dsn, min_size=0, max_size=6, init=writer.prepare_connection)
        self._redis = redisconn.from_settings(s, socket_timeout=5, socket_connect_timeout=5)
        member = cluster_membership.Membership(
            lambda: db.connect(s.dsn),
            s.scheduler_name or cluster_membership.default_name(),
            s.location,
            s.lease_seconds,
        )
        self.sharing = Sharing(
            member,
            self.metrics,
            wanted=lambda: self._wanted,
            running=lambda: self.tickers,
            locations=lambda monitor_id: self._locations.get(monitor_id, ()),
            running_as=self._running_as,
            stop=self._let_go,
            start=self._take,
            flush=self._flush,
            redivided=self._redivided,
            each_round=self._each_round,
        )
        self._resolver = VettedResolver(policy, s.dns_servers)
        self._session = make_session(
            self._resolver,
            limit=s.check_concurrency,
            max_head_bytes=s.http_max_head_bytes,
            max_headers=s.http_max_headers,
            ssl_context=tls_context(s.ca_file),
        )
        self.relay = Relay(self._pool, self._redis, metrics=self.metrics)
        self.spool = await replay.open_spool(s, member.name, self._pool, self.metrics)
        self.writer = Writer(
            self._pool,
            batch_rows=s.write_batch_rows,
            interval=s.write_interval_seconds,
            max_buffered=s.write_buffer_max_rows,
            on_transitions=self.relay.wake,
            metrics=self.metrics,
            operator_chat=s.operator_chat,
            operator_channel=s.operator_channel,
            fence=member,
            spool=self.spool,
        )
        if self.spool is not None:
            # Before this member joins: the results a killed predecessor held are written first,
            # so its monitors (this member's, or the others') start from what it had seen.
            await replay.replay_all(
                self._pool,
                self.spool,
                lease=s.lease_seconds,
                metrics=self.metrics,
                on_transitions=self.relay.wake,
                operator_chat=s.operator_chat,
                operator_channel=s.operator_channel,
            )
            self.spool.start()
            member.on_lease = self.spool.lease
        if s.connectivity_targets:
            self._reference_probe = ReferenceProbe(self._resolver, ssl_context=tls_context(s.ca_file))
        self.guard = Guard(
            s.connectivity_targets,
            self._reference_probe,
            window=s.connectivity_window_seconds,
            min_monitors=s.connectivity_min_monitors,
            failing_share=s.connectivity_failing_share,
            on_change=self._on_connectivity,
        )
        self._shared = TickerShared(
            ctx=CheckContext(
                session=self._session,
                policy=policy,
                allow_insecure_tls=s.allow_insecure_tls,
                http_max_body_bytes=s.http_max_body_bytes,
            ),
            metrics=self.metrics,
            limit=Slots(s.check_concurrency),
            judging=Judging(
                self.writer.add, self.metrics, guard=self.guard, calendar=self.calendar, location=s.location
            ),
            slot=s.tick_slot_ms / 1000,
            may_start=member.may_check,
        )
        self.edges = Edges(self.calendar, self._shared, lambda: self.tickers, self.writer.add_edge)
        self.metrics.monitors.set_function(lambda: len(self.tickers))
        # Bind the listener before any work starts: a port in use fails the start cleanly.
        self._probes = await probes.start(
            s.probe_host, s.scheduler_http_port, self.metrics.registry, self._ready
        )
        mode = await retention.setup(self._pool, s.retention_days)
        if mode == "timer":
            self._spawn(retention.run_timer(self._pool, s.retention_days), "retention")
        self.writer.start()
        self.relay.start()
        await self.calendar.load(self._pool)
        self.edges.arm()
        await self._listen()
        # Before the monitors load: a heartbeat's deadline reads the stored pings before it fires.
        self.pings = PingIntake(self._pool, self.writer, self.tickers, owns=self.sharing.runs)
        await self.sharing.join()
        loop = asyncio.get_running_loop()
        await self.sharing.first_division(loop.time() + s.lease_seconds)
        # Counted from the settled division, not from the process start: a monitor's previous
        # owner checked its ticks until it acked, and a tick due before now would run twice;
        # unless nobody left since this member joined: then every monitor goes on from the tick
        # after its last stored check (cluster.resume_since), none passed over.
        self._cluster_task = asyncio.create_task(self.sharing.run(), name="cluster")
        await self.reconcile(since=time.time(), joined=self.sharing.joined_whole())
        self._loaded = True
        self._spawn(self.pings.run(), "pings")
        self._spawn(self._apply_changes(), "changes")
        self._spawn(self._keep_calendar(), "calendar")
        self._spawn(self._periodic_reconcile(), "reconcile")
        self._spawn(watch_loop(self.metrics.loop_blocked), "loop-watch")
        self._spawn(self.guard.run(), "connectivity")
        # The monitors just loaded live as long as the process: move them out of the cyclic
        # collector's reach, so its full passes stay short and do not delay ticks (lateness).
        gc.collect()
        gc.freeze()

    def _on_connectivity(self, change: Change) -> None:
        """The checker was cut off, or is back: one alert to the operator each way."""
        if self.writer is None:
            return
        at = datetime.fromtimestamp(change.at, UTC)
        if change.kind == "lost":
            self.writer.add_notice(Notice("connectivity_lost", at, {"reason": change.reason}))
        else:
            self.writer.add_notice(
                Notice("connectivity_restored", at, {"reason": change.reason}, duration_seconds=change.lasted)
            )

    async def _ready(self) -> dict[str, bool]:
        assert self._pool is not None and self._redis is not None
        return {"database": await ping_database(self._pool), "redis": await ping_redis(self._redis)}

    async def _stop_intake(self) -> None:
        if self.edges is not None:
            self.edges.close()
        for task in self._background:
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        for ticker in self.tickers.values():
            ticker.stop()

    async def drain(self) -> None:
        """Stop starting checks, then wait for the ones in flight (the lease is still renewed:
        no other scheduler takes these monitors until their last results are written)."""
        if self.sharing is not None:
            self.sharing.closing = True
        await self._stop_intake()
        in_flight = self._shared.in_flight if self._shared else set()
        if in_flight:
            log.info("scheduler.waiting_for_checks", in_flight=len(in_flight))
            # asyncio.wait, unlike gather, does not cancel the checks if this wait is cut
            # short, so abandoned() can still name them before close() cancels them.
            await asyncio.wait(list(in_flight))

    def abandoned(self) -> list[str]:
        in_flight = self._shared.in_flight if self._shared else set()
        return [f"{len(in_flight)} checks in flight (their results are lost)"] if in_flight else []

    async def close(self) -> None:
        await self._stop_intake()  # again: after a failed start, drain never ran
        for task in list(self._shared.in_flight if self._shared else ()):
            task.cancel()
        if self._probes is not None:
            await self._probes.cleanup()
        # Results of finished checks are in the writer: flush them, then relay their events.
        if self.writer is not None:
            await self.writer.close()
        if self._cluster_task is not None:
            self._cluster_task.cancel()
            await asyncio.gather(self._cluster_task, return_exceptions=True)
        if self.sharing is not None:
            if self.writer is None or self.writer.drained:
                await self.sharing.leave()
            else:  # its lease lapses instead; the next start replays the spool under it
                log.warning(
                    "cluster.kept_lease", reason="results not written", spooled=self.spool is not None
                )
            await self.sharing.membership.close()
        if self.spool is not None:
            self.spool.close()
        if self.relay is not None:
            await self.relay.close()
        if self.guard is not None:
            await self.guard.close()
        if self._reference_probe is not None:
            await self._reference_probe.close()
        await REGISTRY.close()
        if self._session is not None:
            await self._session.close()
        if self._resolver is not None:
            await self._resolver.close()
        if self._listener is not None and not self._listener.is_closed():
            await self._listener.close()
        if self._redis is not None:
            await self._redis.aclose()
        if self._pool is not None:
            await self._pool.close()

    # -- reconcile -----------------------------------------------------------------

    def _spawn(self, coro: Any, name: str) -> None:
        self._background.append(asyncio.create_task(coro, name=name))

    async def _listen(self) -> None:
        self._listener = await db.connect(self.settings.dsn)
        await self._listener.add_listener(CHANNEL, self._on_notify)
        await self._listener.add_listener(OUTBOX_CHANNEL, self._on_outbox)
        await self._listener.add_listener(MAINTENANCE_CHANNEL, self._on_maintenance)
        await self._listener.add_listener(PINGS_CHANNEL, self._on_pings)
        if self.sharing is not None:
            await self._listener.add_listener(cluster_membership.CHANNEL, self.sharing.wake)
        self._listener.add_termination_listener(lambda _conn: self._changed.put_nowait(None))

    def _on_maintenance(self, _conn: Any, _pid: int, _channel: str, _payload: str) -> None:
        self._calendar_stale.set()

    async def _keep_calendar(self) -> None:
        """Read every window again when one changed (few windows, rare changes); a failed read
        is tried again a second later, so a window is never missed for long."""
        assert self._pool is not None
        while True:
            await self._calendar_stale.wait()
            self._calendar_stale.clear()
            try:
                await self.calendar.load(self._pool)
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError) as exc:
                log.warning("scheduler.calendar_failed", error=str(exc) or type(exc).__name__)
                await asyncio.sleep(1)
                self._calendar_stale.set()
                continue
            if self.edges is not None:
                # A window made, moved or deleted while open is an edge now.
                self.edges.arm()
                self.edges.sweep([t.spec for t in self.tickers.values()])

    def _on_pings(self, *_: Any) -> None:
        if self.pings is not None:
            self.pings.wake()

    def _on_outbox(self, _conn: Any, _pid: int, _channel: str, _payload: str) -> None:
        if self.relay is not None:
            self.relay.wake()

    def _on_notify(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        if payload.isdigit():
            self._changed.put_nowait(int(payload))

    async def _apply_changes(self) -> None:
        while True:
            monitor_id = await self._changed.get()
            try:
                if monitor_id is None:  # the LISTEN connection died: reconnect, then compare all
                    await self._relisten()
                    self._calendar_stale.set()  # windows changed while nobody listened
                    await self.reconcile()
                    if self.relay is not None:
                        self.relay.wake()  # outbox rows announced while nobody listened
                    if self.pings is not None:
                        self.pings.wake()  # and pings
                    if self.sharing is not None:
                        self.sharing.wake()  # and changes of the cluster
                else:
                    await self._reload(monitor_id)
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError) as exc:
                log.warning(
                    "scheduler.change_failed", monitor_id=monitor_id, error=str(exc) or type(exc).__name__
                )
                await asyncio.sleep(1)
                self._changed.put_nowait(monitor_id)

    async def _relisten(self) -> None:
        if self._listener is not None and not self._listener.is_closed():
            with contextlib.suppress(Exception):
                await self._listener.close()
        await self._listen()

    async def _periodic_reconcile(self) -> None:
        while True:
            await asyncio.sleep(self.settings.reconcile_interval_seconds)
            try:
                listener = self._listener
                if listener is not None and not listener.is_closed() and not await db.writable(listener):
                    listener.terminate()  # an old primary fenced read-only: re-listen on the new one
                await self.reconcile()
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError) as exc:
                log.warning("scheduler.reconcile_failed", error=str(exc) or type(exc).__name__)

    async def reconcile(self, since: float | None = None, joined: float | None = None) -> None:
        """Compare every active monitor's version with the running tickers.

        ``since``: the time the new tickers count their first tick from (default: now);
        ``joined``: this member's join, when the monitors come from live members
        (``Sharing.joined_whole``): each goes on from the tick after its last stored check.
        """
        assert self.sharing is not None
        async with self.sharing.lock:  # a division is not applied halfway through this
            await self._reconcile(since, joined)

    async def _reconcile(self, since: float | None, joined: float | None = None) -> None:
        assert self._pool is not None and self.sharing is not None
        rows = await self._pool.fetch("SELECT id, updated_at, locations FROM monitors WHERE NOT paused")
        wanted = self._wanted = {r["id"]: r["updated_at"] for r in rows}
        for monitor_id in [m for m in self._locations if m not in wanted]:
            self._set_locations(monitor_id, None)
        for row in rows:
            self._set_locations(row["id"], row["locations"])
        mine, settled = self.sharing.mine, self.sharing.settled()
        for monitor_id in list(self.tickers):
            if monitor_id not in wanted or mine(monitor_id) != self._running_as(monitor_id):
                self._stop(monitor_id)
                if monitor_id not in wanted or mine(monitor_id) is None:
                    self._forget_located(monitor_id)
        stale = [
            mid
            for mid, version in wanted.items()
            if self.versions.get(mid) != version and mine(mid) and (settled or mid in self.tickers)
        ]
        missed = 0
        for chunk in range(0, len(stale), 1000):
            missed += await self._load(stale[chunk : chunk + 1000], since, joined=joined)
        self._count_handover(missed, len(stale))
        if stale:
            log.info("scheduler.reconciled", started_or_restarted=len(stale), running=len(self.tickers))

    async def _reload(self, monitor_id: int) -> None:
        assert self.sharing is not None
        async with self.sharing.lock:  # a division is not applied halfway through this
            await self._reload_one(monitor_id)

    async def _reload_one(self, monitor_id: int) -> None:
        assert self._pool is not None and self.sharing is not None
        row = await self._pool.fetchrow(
            "SELECT updated_at, locations FROM monitors WHERE id = $1 AND NOT paused", monitor_id
        )
        if row is None:
            self._wanted.pop(monitor_id, None)
        else:
            self._wanted[monitor_id] = row["updated_at"]
        ticker = self.tickers.get(monitor_id)
        before = self._running_as(monitor_id) if ticker is not None else None
        self._set_locations(monitor_id, None if row is None else row["locations"])
        running = ticker is not None
        busy = ticker.busy() if ticker is not None and not isinstance(ticker, HeartbeatTicker) else None
        self._stop(monitor_id)
        role = self.sharing.mine(monitor_id)  # fixed while this holds the division's lock
        if row is None or role is None:
            self._forget_located(monitor_id)
        elif busy is not None and before != role:
            # A new role (an edit of the locations): the check in flight is judged in the old
            # one, before the monitor starts again in the new (as a handover waits, _let_go).
            await asyncio.wait([busy])
        if role is not None and (running or self.sharing.settled()):
            await self._load([monitor_id])
        elif role is None:
            return  # another scheduler's: it logs the change
        # One line per change, so an operator (and a test) can see when it took effect.
        if monitor_id in self.tickers:
            log.info(
                "monitor.scheduled",
                monitor_id=monitor_id,
                interval_s=self.tickers[monitor_id].spec.interval_seconds,
            )
        else:
            log.info("monitor.unscheduled", monitor_id=monitor_id)

    async def _load(
        self, ids: list[int], since: float | None = None, takeover: bool = False, joined: float | None = None
    ) -> int:
        """Start the tickers of these monitors (those active); with ``takeover``, count the ticks
        each missed since its last stored check, and return how many. With ``joined`` (see
        :meth:`reconcile`), each starts from the tick after its last stored check, and the ticks
        passed over are counted for those another member checked after that join."""
        assert self._pool is not None and self._shared is not None and self._box is not None
        shared = self._shared
        rows = await self._pool.fetch(
            """SELECT m.*, s.status, s.consecutive_failures, s.streak_started_at, s.consecutive_successes,
                      s.recovering_since, s.consecutive_slow, s.slow_since, s.told, s.told_at,
                      s.reminders, s.held, s.flips, s.flapping, s.maintenance, s.cert_not_after,
                      s.last_check_at, s.last_ok, s.last_error, x.secrets,
                      (SELECT max(p.ended_at) FROM monitor_pauses p WHERE p.monitor_id = m.id) AS resumed_at
               FROM monitors m LEFT JOIN monitor_state s ON s.monitor_id = m.id
               LEFT JOIN monitor_secrets x ON x.monitor_id = m.id
               WHERE m.id = ANY($1::bigint[])""",
            ids,
        )
        found = set()
        missed = 0
        located: dict[int, MonitorSpec] = {}
        started: list[MonitorSpec] = []
        for row in rows:
            found.add(row["id"])
            previous = self.tickers.get(row["id"])
            self._stop(row["id"])
            if row["paused"]:
                self._forget_located(row["id"])
                continue
            try:
                secrets = open_monitor_secrets(self._box, row["secrets"])
                options = REGISTRY.get(row["type"]).options(row["settings"], secrets)
            except Exception as exc:  # stored by a newer version, by hand, with another key: skip it
                log.error(
                    "monitor.unloadable", monitor_id=row["id"], error=str(exc)[:300] or type(exc).__name__
                )
                continue
            spec = MonitorSpec.from_row(row, options)
            # The locations as this row has them (an edit may not have been NOTIFYed yet): the
            # role is worked out from them, and a monitor no longer this member's is not started.
            self._set_locations(spec.id, row["locations"])
            role = self.sharing.mine(spec.id) if self.sharing is not None else "primary"
            if role is None:
                continue
            shared.judging.names[spec.id] = spec.name
            if role == "secondary":
                shared.judging.secondary.add(spec.id)
            else:
                shared.judging.secondary.discard(spec.id)
            if spec.id in self._foreign:  # a status read for a dependant here, not its state
                self._foreign.discard(spec.id)
                shared.judging.states.pop(spec.id, None)
            if spec.id not in shared.judging.states and row["status"] is not None:
                shared.judging.states[spec.id] = stored_state(row)
            ticker: MonitorTicker | HeartbeatTicker
            if REGISTRY.get(spec.type).scheduled:
                ticker = make_ticker(self.settings.ticker, spec, shared)
            else:
                drain = self.pings.drain if self.pings is not None else None
                ticker = HeartbeatTicker(spec, shared, row, previous=previous, drain=drain)
            last = row["last_check_at"].timestamp() if row["last_check_at"] is not None else None
            start_at = since
            if spec.locations:  # started once its location's stored state is read (below)
                located[spec.id] = spec
            elif isinstance(ticker, HeartbeatTicker):
                ticker.start(since)
            else:
                if joined is not None:
                    now = time.time() if since is None else since
                    start_at = resume_since(last, joined, now, self._offset(spec), spec.interval_seconds)
                ticker.start(start_at)
            self.tickers[spec.id] = ticker
            self.versions[spec.id] = row["updated_at"]
            started.append(spec)
            handed = joined is not None and last is not None and last >= joined
            if (takeover or handed) and not isinstance(ticker, HeartbeatTicker):
                missed += self._missed(spec, last, start_at)
        for monitor_id in set(ids) - found:
            self._forget_located(monitor_id)
            shared.judging.states.pop(monitor_id, None)
            shared.judging.names.pop(monitor_id, None)
            shared.judging.parents.pop(monitor_id, None)
        read = False
        try:
            await locations.load(self._pool, shared.judging, located)
            read = True
        finally:  # read or not, none is left in the tickers unstarted (a later load retries)
            closing = self.sharing is not None and self.sharing.closing
            for monitor_id, spec in located.items():
                waiting = self.tickers.get(monitor_id)
                if waiting is None or waiting.spec is not spec:
                    continue  # stopped or replaced while it read
                if read and not closing:
                    waiting.start(since)
                else:
                    self._stop(monitor_id)
        if self.edges is not None:
            # A window that opened or closed while nobody ran these monitors (or while they
            # moved here) is said now, once, from their stored state (edges.py).
            running = self.tickers
            self.edges.sweep([s for s in started if (t := running.get(s.id)) is not None and t.spec is s])
        return missed

    # -- the division of the monitors among schedulers (sharing.py) -------------------

    async def _let_go(self, ids: set[int]) -> None:
        """Stop monitors that moved to another scheduler, and wait for their checks in flight
        (each ends within its timeout) so that their results are written before the next owner
        starts."""
        in_flight = []
        for monitor_id in ids:
            ticker = self.tickers.get(monitor_id)
            busy = ticker.busy() if ticker is not None and not isinstance(ticker, HeartbeatTicker) else None
            if busy is not None:
                in_flight.append(busy)
            self._stop(monitor_id)
        if in_flight:
            await asyncio.wait(in_flight)
        if self._shared is not None:
            for monitor_id in ids:
                self._shared.judging.states.pop(monitor_id, None)
            locations.forget(self._shared.judging, ids)
        log.info("cluster.handed_over", monitors=len(ids))

    async def _take(self, ids: set[int]) -> None:
        """Start monitors that are this scheduler's now, each from its stored state."""
        if self._shared is not None:
            for monitor_id in ids:
                self._shared.judging.states.pop(monitor_id, None)
            locations.forget(self._shared.judging, ids)
        ordered = sorted(ids)
        missed = 0
        joined = self.sharing.joined_whole() if self.sharing is not None else None
        for chunk in range(0, len(ordered), 1000):
            missed += await self._load(ordered[chunk : chunk + 1000], takeover=self._loaded, joined=joined)
        if self._loaded:
            self.metrics.takeovers.inc(len(ids))
        self._count_handover(missed, len(ids))
        log.info("cluster.taken_over", monitors=len(ids), running=len(self.tickers))

    def _count_handover(self, missed: int, monitors: int) -> None:
        if missed:  # one line for the handover, not one per monitor
            self.metrics.skipped.inc(missed)
            log.info("check.skipped", reason="handover", monitors=monitors, ticks=missed)

    def _missed(self, spec: MonitorSpec, last_check: float | None, since: float | None) -> int:
        """The ticks between a monitor's last stored check and its first one here (the first
        due at or after ``since``, default now)."""
        if last_check is None:
            return 0
        interval = spec.interval_seconds
        offset = self._offset(spec)
        first_due = offset + first_tick(time.time() if since is None else since, offset, interval) * interval
        return missed_ticks(last_check, first_due, interval)

    def _offset(self, spec: MonitorSpec) -> float:
        return stable_offset(spec.id, spec.interval_seconds, self._shared.slot if self._shared else 0.0)

    async def _flush(self) -> bool:
        return await self.writer.flush() if self.writer is not None else True

    async def _each_round(self) -> None:
        """After each cluster round: the other locations' views of the monitors this member is
        primary for, and the status of parents run elsewhere."""
        if self._pool is None or self._shared is None or self.sharing is None or self.sharing.view is None:
            return
        shared = self._shared
        if len(self.sharing.view.members) <= 1:
            return
        primary = [m for m in self._locations if m in self.tickers and m not in shared.judging.secondary]
        try:
            views = await locations.read_remote(self._pool, shared.judging.location, primary)
            # Not for those stopped, or turned secondary, while it read.
            shared.judging.remote.update(
                (m, v) for m, v in views.items() if m in self.tickers and m not in shared.judging.secondary
            )
            # One run here as a secondary keeps no overall state: as a parent, its stored status is
            # read, like one run elsewhere.
            running = (
                {m for m in self.tickers if m not in shared.judging.secondary}
                if shared.judging.secondary
                else self.tickers
            )
            self._foreign |= await read_foreign_parents(self._pool, shared.judging, running)
        except DB_ERRORS as exc:
            log.warning("cluster.round_read_failed", error=str(exc) or type(exc).__name__)

    def _running_as(self, monitor_id: int) -> Role:
        """The role a running monitor was started in here."""
        return (
            "secondary"
            if self._shared is not None and monitor_id in self._shared.judging.secondary
            else "primary"
        )

    def _set_locations(self, monitor_id: int, names: list[str] | None) -> None:
        found = tuple(names or ())
        if found != self._locations.get(monitor_id, ()):
            if found:
                self._locations[monitor_id] = found
            else:
                self._locations.pop(monitor_id, None)
            if self.sharing is not None:
                self.sharing.own.forget(monitor_id)

    def _redivided(self) -> None:
        """The members changed: the live locations, and the pings of monitors that moved here."""
        if self._shared is not None and self.sharing is not None:
            self._shared.judging.live_locations = self.sharing.own.live_locations
        if self.pings is not None:
            self.pings.redivided()

    def _forget_located(self, monitor_id: int) -> None:
        """The monitor is not run here any more: its locations' state is its next owner's."""
        if self._shared is not None:
            locations.forget(self._shared.judging, (monitor_id,))

    def _stop(self, monitor_id: int) -> None:
        # Its state stays (a check in flight still updates it; a paused monitor that others
        # depend on is not down), its name too (their alerts still name it); but not the
        # overall state a secondary holds, which it never kept up (read again if it leads).
        if self._shared is not None and monitor_id in self._shared.judging.secondary:
            self._shared.judging.states.pop(monitor_id, None)
        ticker = self.tickers.pop(monitor_id, None)
        self.versions.pop(monitor_id, None)
        if ticker is not None:
            ticker.stop()


def stored_state(row: Any) -> State:
    """A monitor's state as the writer stored it (``monitor_state``'s columns)."""
    window = row["maintenance"]
    return replace(
        locations.stored(row),
        told=row["told"],
        told_at=row["told_at"],
        reminders=row["reminders"],
        held=row["held"],
        flips=tuple(row["flips"] or ()),
        flapping=row["flapping"],
        window=None
        if window is None
        else Window(window["id"], window["name"], datetime.fromisoformat(window["until"]), window["notify"]),
        cert_not_after=row["cert_not_after"],
    )
