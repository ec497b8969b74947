"""The scheduler service: wires the catalogue, the running set and the shared parts.

A monitor's way into a check goes through three modules, one job each:

- monitor/scheduler/catalogue.py knows which monitors are active and what changed (LISTEN/NOTIFY
  of one monitor, a periodic full comparison of versions), and loads a row into a spec;
- monitor/scheduler/running.py keeps one ticker per monitor run here (pull checks and
  heartbeats behind one protocol) and what they share as monitors start, stop and move;
- monitor/scheduler/sharing.py applies each division of the monitors among the live
  schedulers, through one interface to the other two (``sharing.Local``, :class:`_Local` here).

This module owns the process's resources (pool, Redis, the HTTP session and resolver, the
writer, spool, relay, guard, probes listener), the order they start and stop in, and the
small tasks that belong to none of the three (the maintenance calendar's reloads, the trial
checks the api asks for: trials.py).
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Collection, Sequence
from datetime import UTC, datetime
from typing import Any

import asyncpg
import redis.asyncio as aioredis
from aiohttp import web

from monitor import db, probes, redisconn
from monitor import logging as mlog
from monitor.aio import Slots
from monitor.checks import REGISTRY
from monitor.checks.tools import check_tools
from monitor.config import Settings
from monitor.health import ping_database, ping_redis, watch_loop
from monitor.net.client import HttpSession
from monitor.net.resolver import VettedResolver
from monitor.net.session import tls_context
from monitor.scheduler import membership as cluster_membership
from monitor.scheduler import replay, retention, writer
from monitor.scheduler.calendar import Calendar
from monitor.scheduler.catalogue import Catalogue
from monitor.scheduler.cluster import Role
from monitor.scheduler.connectivity import Change, Guard, ReferenceProbe
from monitor.scheduler.dispatch import Dispatcher
from monitor.scheduler.edges import Edges
from monitor.scheduler.heartbeat import PingIntake
from monitor.scheduler.judging import Judging
from monitor.scheduler.metrics import SchedulerMetrics
from monitor.scheduler.relay import Relay
from monitor.scheduler.running import RunningSet
from monitor.scheduler.sharing import DB_ERRORS, Sharing
from monitor.scheduler.spool import Spool
from monitor.scheduler.ticker import TickerShared
from monitor.scheduler.trials import Trials
from monitor.scheduler.writer import Notice, Writer

log = mlog.get(__name__)

OUTBOX_CHANNEL = "outbox_added"
MAINTENANCE_CHANNEL = "maintenance_changed"
PINGS_CHANNEL = "pings_added"


class Scheduler:
    name = "scheduler"

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.metrics = SchedulerMetrics()
        self.sharing: Sharing | None = None
        self.catalogue: Catalogue | None = None
        self.running: RunningSet | None = None
        self._cluster_task: asyncio.Task[None] | None = None
        self._shared: TickerShared | None = None
        self._background: list[asyncio.Task[None]] = []
        self._pool: asyncpg.Pool | None = None
        self._redis: aioredis.Redis | None = None
        self._resolver: VettedResolver | None = None
        self._session: HttpSession | None = None
        self.writer: Writer | None = None
        self.spool: Spool | None = None
        self.relay: Relay | None = None
        self._probes: web.AppRunner | None = None
        self.guard: Guard | None = None
        self.calendar = Calendar()
        # Set by NOTIFY maintenance_changed (and a new LISTEN connection): one task reloads
        # the calendar, once for any number of notifications that arrived meanwhile.
        self._calendar_stale = asyncio.Event()
        self._reference_probe: ReferenceProbe | None = None
        self.pings: PingIntake | None = None
        # The timers at the windows' edges (edges.py), made with the shared parts.
        self.edges: Edges | None = None
        self.trials: Trials | None = None
        self.dispatcher: Dispatcher | None = None

    # -- lifecycle -----------------------------------------------------------------

    async def start(self) -> None:
        s = self.settings
        s.require("database_url", "redis_url", "secret_key")
        box = s.secret_box()
        self._pool = await db.create_pool(s.dsn, min_size=0, max_size=6, init=writer.prepare_connection)
        self._redis = redisconn.from_settings(s, socket_timeout=5, socket_connect_timeout=5)
        # Heavy checks go to the workers' queue (dispatch.py); the catalogue keeps their rows.
        self.dispatcher = Dispatcher(self._redis)
        tools = check_tools(s, log, limit=s.check_concurrency, dispatch=self.dispatcher)
        self._resolver, self._session = tools.resolver, tools.session
        member = cluster_membership.Membership(
            lambda: db.connect(s.dsn),
            s.scheduler_name or cluster_membership.default_name(),
            s.location,
            s.lease_seconds,
        )
        self.sharing = Sharing(member, self.metrics, _Local(self))
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
            ctx=tools.ctx,
            metrics=self.metrics,
            limit=Slots(s.check_concurrency),
            judging=Judging(
                self.writer.add, self.metrics, guard=self.guard, calendar=self.calendar, location=s.location
            ),
            slot=s.tick_slot_ms / 1000,
            may_start=member.may_check,
        )
        running = self.running = RunningSet(self._pool, self._shared, s.ticker, self.metrics)
        self.edges = Edges(self.calendar, self._shared, lambda: running.tickers, self.writer.add_edge)
        self.catalogue = Catalogue(
            self._pool,
            box,
            running,
            self.sharing,
            self.edges,
            self.metrics,
            dsn=s.dsn,
            listeners={
                OUTBOX_CHANNEL: self.relay.wake,
                MAINTENANCE_CHANNEL: self._on_maintenance,
                PINGS_CHANNEL: self._on_pings,
                cluster_membership.CHANNEL: self.sharing.wake,
            },
            resync=self._resync,
            reconcile_every=s.reconcile_interval_seconds,
            heavy_rows=self.dispatcher.rows,
        )
        self.metrics.monitors.set_function(lambda: len(running.tickers))
        dispatcher = self.dispatcher
        self.metrics.heavy_waiting.set_function(lambda: dispatcher.waiting)
        # Bind the listener before any work starts: a port in use fails the start cleanly.
        self._probes = await probes.start(
            s.probe_host, s.scheduler_http_port, self.metrics.registry, self._ready
        )
        mode = await retention.setup(self._pool, s.retention_days)
        if mode == "timer":
            self._spawn(retention.run_timer(self._pool, s.retention_days), "retention")
        self._spawn(retention.run_audit_timer(self._pool, s.audit_retention_days), "audit-retention")
        self._spawn(
            retention.run_screenshot_timer(self._pool, s.screenshot_retention_days), "screenshot-retention"
        )
        self.writer.start()
        self.relay.start()
        await self.calendar.load(self._pool)
        self.edges.arm()
        await self.catalogue.listen()
        # Before the monitors load: a heartbeat's deadline reads the stored pings before it fires.
        self.pings = PingIntake(
            self._pool, self.writer, running.tickers, running.heartbeats, owns=self.sharing.runs
        )
        running.drain = self.pings.drain
        await self.sharing.join()
        loop = asyncio.get_running_loop()
        await self.sharing.first_division(loop.time() + s.lease_seconds)
        # Counted from the settled division, not from the process start: a monitor's previous
        # owner checked its ticks until it acked, and a tick due before now would run twice;
        # unless nobody left since this member joined: then every monitor goes on from the tick
        # after its last stored check (cluster.resume_since), none passed over.
        self._cluster_task = asyncio.create_task(self.sharing.run(), name="cluster")
        await self.catalogue.first_load(since=time.time(), joined=self.sharing.joined_whole())
        self._spawn(self.pings.run(), "pings")
        self._spawn(self.catalogue.follow(), "changes")
        self._spawn(self._keep_calendar(), "calendar")
        self._spawn(self.catalogue.keep_reconciling(), "reconcile")
        self._spawn(watch_loop(self.metrics.loop_blocked), "loop-watch")
        self._spawn(self.guard.run(), "connectivity")
        self.trials = Trials(
            self._redis, box, self._shared.ctx, member.name, location=s.location, dispatcher=self.dispatcher
        )
        self._spawn(self.trials.run(), "trials")
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
        if self.running is not None:
            for ticker in self.running.tickers.values():
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
        if self.trials is not None:
            await self.trials.close()
        if self.dispatcher is not None:
            await self.dispatcher.close()
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
        if self.catalogue is not None:
            await self.catalogue.close()  # the LISTEN connection
        if self._redis is not None:
            await self._redis.aclose()
        if self._pool is not None:
            await self._pool.close()

    def _spawn(self, coro: Any, name: str) -> None:
        self._background.append(asyncio.create_task(coro, name=name))

    def _on_maintenance(self) -> None:
        self._calendar_stale.set()

    def _on_pings(self) -> None:
        if self.pings is not None:
            self.pings.wake()

    async def _keep_calendar(self) -> None:
        """Read every window again when one changed (few windows, rare changes); a failed read
        is tried again a second later, so a window is never missed for long."""
        assert self._pool is not None
        while True:
            await self._calendar_stale.wait()
            self._calendar_stale.clear()
            try:
                await self.calendar.load(self._pool)
            except DB_ERRORS as exc:
                log.warning("scheduler.calendar_failed", error=str(exc) or type(exc).__name__)
                await asyncio.sleep(1)
                self._calendar_stale.set()
                continue
            if self.edges is not None and self.running is not None:
                # A window made, moved or deleted while open is an edge now.
                self.edges.arm()
                self.edges.sweep([t.spec for t in self.running.tickers.values()])

    async def _resync(self) -> None:
        """The LISTEN connection died and is back: what was announced meanwhile is read again."""
        assert self.catalogue is not None
        self._calendar_stale.set()  # windows changed while nobody listened
        await self.catalogue.reconcile()
        if self.relay is not None:
            self.relay.wake()  # outbox rows announced while nobody listened
        if self.pings is not None:
            self.pings.wake()  # and pings
        if self.sharing is not None:
            self.sharing.wake()  # and changes of the cluster


class _Local:
    """This scheduler as the division of the monitors sees it (``sharing.Local``): its
    catalogue, its running set and its writer, made after ``Sharing`` is (hence looked up)."""

    def __init__(self, scheduler: Scheduler) -> None:
        self._scheduler = scheduler

    def _catalogue(self) -> Catalogue:
        assert self._scheduler.catalogue is not None
        return self._scheduler.catalogue

    def _running(self) -> RunningSet:
        assert self._scheduler.running is not None
        return self._scheduler.running

    def wanted(self) -> Collection[int]:
        return self._catalogue().wanted

    def running(self) -> Collection[int]:
        return self._running().tickers

    def locations(self, monitor_id: int) -> Sequence[str]:
        return self._catalogue().locations.get(monitor_id, ())

    def running_as(self, monitor_id: int) -> Role:
        return self._running().running_as(monitor_id)

    async def let_go(self, ids: set[int]) -> None:
        await self._running().let_go(ids)

    async def take(self, ids: set[int]) -> None:
        await self._catalogue().take(ids)

    async def flush(self) -> bool:
        writer = self._scheduler.writer
        return await writer.flush() if writer is not None else True

    def redivided(self) -> None:
        """The members changed: the live locations, and the pings of monitors that moved here."""
        s = self._scheduler
        if s.running is not None and s.sharing is not None:
            s.running.shared.judging.live_locations = s.sharing.own.live_locations
        if s.pings is not None:
            s.pings.redivided()

    async def each_round(self) -> None:
        s = self._scheduler
        if s.running is None or s.catalogue is None or s.sharing is None:
            return
        await s.running.each_round(s.catalogue.locations, s.sharing.view)
