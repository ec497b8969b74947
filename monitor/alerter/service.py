"""The alerter service: wires the stream, the order across alerters and the deliveries.

One entry of ``monitor:events`` goes through three modules, one job each:

- monitor/alerter/stream.py reads it as this alerter's consumer in the ``alerter`` group, takes
  over what a dead consumer left pending, and keeps what is in hand claimed;
- monitor/alerter/ordering.py says whether it must wait (an older event of its monitor is still
  undelivered, or another alerter holds the same event) and hands back what is in hand at a
  graceful stop;
- monitor/alerter/deliveries.py skips what is already delivered, sends the rest through one
  sender per destination, records each outcome and dead-letters what cannot be sent.

An entry is acknowledged only when every destination of it has a final outcome, sent or dead.
This module owns the process's resources (pool, Redis, HTTP sessions, the probes listener) and
the path of one entry (:meth:`Alerter._accept`).
"""

from __future__ import annotations

import asyncio
import os
import socket
from functools import partial
from typing import Any

import aiohttp
import asyncpg
import redis.asyncio as aioredis
from aiohttp import web

from monitor import channels as registry
from monitor import db, probes, redisconn
from monitor import logging as mlog
from monitor.alerter.deliveries import Deliveries, follow_move
from monitor.alerter.dispatch import RetryPolicy
from monitor.alerter.history import DeliveryHistory
from monitor.alerter.metrics import AlerterMetrics
from monitor.alerter.ordering import Ordering, order_wait
from monitor.alerter.pacing import SharedPacer
from monitor.alerter.stream import Stream
from monitor.channels import telegram
from monitor.channels.base import SendContext, WebClient
from monitor.config import Settings
from monitor.events import Event, EventFormatError
from monitor.health import ping_database, ping_redis
from monitor.net.client import HttpSession, make_session
from monitor.net.policy import AddressPolicy, log_allow_list
from monitor.net.resolver import VettedResolver
from monitor.net.session import tls_context

log = mlog.get(__name__)


class Alerter:
    name = "alerter"

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.consumer = f"{socket.gethostname()}-{os.getpid()}"
        self.metrics = AlerterMetrics()
        self._retry = RetryPolicy(
            settings.alert_max_attempts,
            settings.alert_backoff_base_seconds,
            settings.alert_backoff_max_seconds,
        )
        self._stopping = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._pool: asyncpg.Pool | None = None
        self._redis: aioredis.Redis | None = None
        self._http: aiohttp.ClientSession | None = None
        self._web: HttpSession | None = None
        self._probes: web.AppRunner | None = None
        self._stream: Stream | None = None
        self._ordering: Ordering | None = None
        self._deliveries: Deliveries | None = None

    # -- lifecycle -----------------------------------------------------------------

    async def start(self) -> None:
        s = self.settings
        s.require("database_url", "redis_url", "secret_key")
        box = s.secret_box()
        if s.telegram_bot_token is not None:
            telegram.TelegramConfig(s.telegram_bot_token, s.telegram_api_base).validate()
        else:
            log.warning(
                "alerter.telegram_not_configured", hint="set MONITOR_TELEGRAM_BOT_TOKEN; Telegram alerts wait"
            )
        self._pool = await db.create_pool(s.dsn, min_size=0, max_size=4)
        self._redis = redisconn.from_settings(s, socket_timeout=10, socket_connect_timeout=5)
        self._http = aiohttp.ClientSession(trust_env=False)
        # User-supplied URLs (webhooks, Slack, Discord...) go through the checks' guarded client.
        policy = AddressPolicy(s.allow_cidrs)
        log_allow_list(log, policy)
        self._web = make_session(
            VettedResolver(policy, s.dns_servers), limit=50, ssl_context=tls_context(s.ca_file)
        )
        pacer = SharedPacer(self._redis, history=DeliveryHistory(self._pool))
        ctx = SendContext(
            http=self._http,
            web=WebClient(self._web, policy),
            settings=s,
            reveal=box.open,
            on_moved=partial(follow_move, self._pool),
            resolver=self._web.resolver,
        )
        claim_idle = s.alert_claim_idle_seconds
        self._stream = stream = Stream(
            self._redis, self.consumer, claim_idle=claim_idle, stopping=self._stopping
        )
        self._deliveries = deliveries = Deliveries(
            self._pool,
            self._redis,
            ctx,
            pacer,
            self.metrics,
            stream.ack,
            retry=self._retry,
            max_age=s.alert_max_age,
        )
        self._ordering = ordering = Ordering(
            self._pool,
            self._redis,
            stream,
            deliveries.holds,
            claim_idle=claim_idle,
            order_wait=order_wait(s.alert_max_attempts, s.alert_backoff_max_seconds, claim_idle),
        )
        # Bind the listener before any work starts: a port in use fails the start cleanly.
        self._probes = await probes.start(
            s.probe_host, s.alerter_http_port, self.metrics.registry, self._ready
        )
        self._tasks = [
            asyncio.create_task(stream.consume(self._accept, again=ordering.deferred), name="consume"),
            asyncio.create_task(
                stream.keep_claims(
                    lambda: [*deliveries.entry_ids(), *ordering.deferred_ids()],
                    lambda: ordering.renew(deliveries.held()),
                ),
                name="claims",
            ),
        ]

    async def _ready(self) -> dict[str, bool]:
        assert self._pool is not None and self._redis is not None
        return {"database": await ping_database(self._pool), "redis": await ping_redis(self._redis)}

    async def drain(self) -> None:
        """Stop reading; each destination finishes the send in hand; what still waits is handed
        back to the other alerters."""
        self._stopping.set()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._deliveries is not None and self._ordering is not None:
            await self._deliveries.stop()
            await self._ordering.hand_back(self._deliveries.entry_ids(), self._deliveries.held())

    def abandoned(self) -> list[str]:
        waiting = self._deliveries.waiting if self._deliveries is not None else 0
        if not waiting:
            return []
        handed_back = self._ordering is not None and self._ordering.handed_back
        where = "handed back to the other alerters" if handed_back else "pending in the stream"
        return [f"{waiting} alerts waiting ({where})"]

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        if self._probes is not None:
            await self._probes.cleanup()
        if self._http is not None:
            await self._http.close()
        if self._web is not None:
            await self._web.close()
        if self._redis is not None:
            await self._redis.aclose()
        if self._pool is not None:
            await self._pool.close()

    # -- one entry -------------------------------------------------------------------

    async def _accept(self, entry_id: str, fields: dict[Any, Any]) -> None:
        """One stream entry: settled at once (unreadable, no destination, all delivered), put
        off (ordering), or handed to the destinations' senders."""
        assert self._stream is not None and self._ordering is not None and self._deliveries is not None
        stream, ordering, deliveries = self._stream, self._ordering, self._deliveries
        if deliveries.has_entry(entry_id):
            return  # already in hand
        try:
            event = Event.from_fields(fields)
        except EventFormatError as exc:
            await deliveries.unreadable(entry_id, fields, str(exc))
            await stream.ack(entry_id)
            return
        with mlog.bound(event_id=event.event_id, monitor_id=event.monitor_id):
            targets = event.targets(registry.destination)
            if not targets:
                log.info("alert.no_channel", kind=event.kind)
                ordering.forget(entry_id)
                await stream.ack(entry_id)
                return
            # A deferred entry is looked at again every read: its duplicates were told once.
            channels = await deliveries.open_channels(
                event, list(targets), quiet=ordering.is_deferred(entry_id)
            )
            if not channels:
                ordering.forget(entry_id)
                await stream.ack(entry_id)
                return
            if await ordering.waits(entry_id, fields, event, channels):
                return
            ordering.forget(entry_id)
            deliveries.take(entry_id, event, targets, channels)
